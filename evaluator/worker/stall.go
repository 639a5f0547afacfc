package worker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/cacheon/engine/evaluator/sandbox"
)

// Stall detection. A session that stops making progress while a frame is
// due used to be ended only by its frame's time limit (five minutes for a
// batch): a kernel whose background threads burned the host's CPUs held
// its engine's serving thread off the interpreter lock, and the
// qualification waited out the limit. The controller now watches the
// session's threads while it waits, from /proc in its own PID namespace
// (nothing inside can forge it), and ends a session whose serving thread
// (the process's main thread, which reads requests and writes frames) got
// almost no CPU time over a whole stall window:
//
//   - its own threads ran meanwhile, many times more than the serving
//     thread (they took the CPU, or the interpreter's lock, from it), or
//     the sandbox used up its CPU quota while the serving thread waited
//     for a CPU: the session starved itself (ErrStalled, the session's
//     fault: a candidate's code stalling its own engine is the candidate's
//     loss);
//   - nothing in it ran at all: it is idle and silent, asleep or deadlocked
//     (ErrStalled, the session's fault: no infrastructure trouble makes an
//     engine sleep through a batch while its CPU is free);
//   - the serving thread was runnable but the host gave it no CPU while
//     its own threads did not take it: the host starved it (ErrStarved, the
//     infrastructure's trouble: NO_DECISION, never a verdict).
//
// Any progress of the serving thread (5% of the window) resets nothing but
// keeps the session alive: the frame's own time limit still bounds it.

var (
	// ErrStalled is a session that stopped making progress by its own
	// doing; the session is killed.
	ErrStalled = errors.New("the session stopped making progress")
	// ErrStarved is a session the host gave no CPU; the session is
	// killed.
	ErrStarved = errors.New("the host starved the session of CPU")
)

// Thresholds of a stall, as fractions of the window.
const (
	stallServing = 0.05 // the serving thread's CPU below this: no progress
	stallWaiting = 0.5  // its run-queue wait above this: it wanted a CPU
	stallBusy    = 0.1  // the other threads' CPU above this,
	stallRatio   = 4    // and this many times the serving thread's: they took it
	stallIdle    = 0.05 // everything's CPU below this: nothing runs
)

// threadSample is one reading of a session's threads.
type threadSample struct {
	at      time.Time
	serving sandbox.Thread
	others  time.Duration // CPU of every other thread
	threads map[int]sandbox.Thread
	// throttled is the sandbox's time held back by its CPU quota.
	throttled time.Duration
}

// stallJudgement is the pure decision over one window.
type stallJudgement struct {
	stalled bool   // the session's fault
	starved bool   // the host's
	why     string // in words, with the numbers
}

// judgeStall decides over window from the serving thread's CPU and
// run-queue wait, the other threads' CPU, and whether the sandbox was
// throttled by its quota.
func judgeStall(window, servingCPU, servingWait, others time.Duration, throttled bool) stallJudgement {
	w := window.Seconds()
	frac := func(d time.Duration) float64 { return d.Seconds() / w }
	if frac(servingCPU) >= stallServing {
		return stallJudgement{}
	}
	nums := fmt.Sprintf("over %s its serving thread ran %s and waited %s for a CPU; its other threads ran %s",
		window, servingCPU.Round(time.Millisecond), servingWait.Round(time.Millisecond), others.Round(time.Millisecond))
	switch {
	case frac(others) >= stallBusy && others >= stallRatio*servingCPU || throttled && frac(servingWait) >= stallWaiting:
		return stallJudgement{stalled: true, why: "its own threads starve its serving thread: " + nums}
	case frac(servingWait) >= stallWaiting:
		return stallJudgement{starved: true, why: "the host gave its serving thread no CPU: " + nums}
	case frac(others) < stallIdle:
		return stallJudgement{stalled: true, why: "nothing in it runs and no frame comes: " + nums}
	}
	return stallJudgement{}
}

// sample reads the session's threads; false when it cannot be read (the
// session is ending: its frame pipe will say so).
func (s *Session) sample() (threadSample, bool) {
	threads, err := s.Threads()
	if err != nil || len(threads) == 0 {
		return threadSample{}, false
	}
	serving := s.servingPid()
	out := threadSample{at: time.Now(), threads: map[int]sandbox.Thread{}}
	found := false
	for _, t := range threads {
		out.threads[t.TID] = t
		if t.TID == serving {
			out.serving, found = t, true
			continue
		}
		out.others += t.CPU
	}
	if s.bounds != nil {
		out.throttled = s.bounds().CPUThrottled
	}
	return out, found
}

// watch checks the session every fifth of window while a frame is due,
// and returns a stall's error (the session killed) or nil when done
// closes first.
func (s *Session) watch(ctx context.Context, window time.Duration, done <-chan struct{}) error {
	tick := window / 5
	if tick < 50*time.Millisecond {
		tick = 50 * time.Millisecond
	}
	t := time.NewTicker(tick)
	defer t.Stop()
	var samples []threadSample
	if first, ok := s.sample(); ok {
		samples = append(samples, first)
	}
	for {
		select {
		case <-done:
			return nil
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		now, ok := s.sample()
		if !ok {
			continue
		}
		samples = append(samples, now)
		// The oldest sample at least a window old is the reference; older
		// ones are dropped.
		for len(samples) > 1 && now.at.Sub(samples[1].at) >= window {
			samples = samples[1:]
		}
		ref := samples[0]
		span := now.at.Sub(ref.at)
		if span < window || ref.serving.TID != now.serving.TID {
			continue
		}
		j := judgeStall(span, now.serving.CPU-ref.serving.CPU, now.serving.RunDelay-ref.serving.RunDelay,
			now.others-ref.others, now.throttled > ref.throttled)
		if !j.stalled && !j.starved {
			continue
		}
		s.Kill()
		busy := busiest(ref, now, 3)
		if busy != "" {
			j.why += "; busiest: " + busy
		}
		if j.starved {
			return fmt.Errorf("%w: %s", ErrStarved, j.why)
		}
		return fmt.Errorf("%w: %s", ErrStalled, j.why)
	}
}

// busiest names the n threads that ran most between two samples, e.g.
// "python3 (tid 12) 1.95s".
func busiest(a, b threadSample, n int) string {
	type ran struct {
		t   sandbox.Thread
		cpu time.Duration
	}
	var list []ran
	for tid, t := range b.threads {
		d := t.CPU - a.threads[tid].CPU
		if d > 0 {
			list = append(list, ran{t, d})
		}
	}
	sort.Slice(list, func(i, j int) bool { return list[i].cpu > list[j].cpu })
	var parts []string
	for i := 0; i < len(list) && i < n; i++ {
		parts = append(parts, fmt.Sprintf("%s (tid %d) %s", list[i].t.Name, list[i].t.TID, list[i].cpu.Round(time.Millisecond)))
	}
	return strings.Join(parts, ", ")
}

// Threads lists every thread of the session: its sandbox's tasks, or the
// unisolated process's own threads.
func (s *Session) Threads() ([]sandbox.Thread, error) {
	if s.threads != nil {
		return s.threads()
	}
	entries, err := os.ReadDir("/proc/" + strconv.Itoa(s.pid) + "/task")
	if err != nil {
		return nil, fmt.Errorf("session threads: %w", err)
	}
	var out []sandbox.Thread
	for _, e := range entries {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			if t, ok := sandbox.ReadThread(tid); ok {
				out = append(out, t)
			}
		}
	}
	return out, nil
}

// servingPid is the session's process in the controller's PID namespace:
// unisolated, the process itself; in a sandbox, the init's child with the
// lowest PID in the sandbox's namespace. The init starts it before any
// process inside exists, so one a worker starts (even an orphan the init
// adopted) always has a higher number there.
func (s *Session) servingPid() int {
	if s.threads == nil {
		return s.pid
	}
	if s.serving > 0 {
		return s.serving
	}
	threads, err := s.threads()
	if err != nil {
		return 0
	}
	best, bestNS := 0, 0
	for _, t := range threads {
		if t.TID != t.PID || t.PID == s.pid {
			continue
		}
		status, err := os.ReadFile("/proc/" + strconv.Itoa(t.PID) + "/status")
		if err != nil {
			continue
		}
		var ppid, nspid int
		for _, line := range strings.Split(string(status), "\n") {
			if v, ok := strings.CutPrefix(line, "PPid:"); ok {
				ppid, _ = strconv.Atoi(strings.TrimSpace(v))
			}
			if v, ok := strings.CutPrefix(line, "NSpid:"); ok {
				if f := strings.Fields(v); len(f) > 0 {
					nspid, _ = strconv.Atoi(f[len(f)-1])
				}
			}
		}
		if ppid == s.pid && nspid > 0 && (best == 0 || nspid < bestNS) {
			best, bestNS = t.PID, nspid
		}
	}
	s.serving = best
	return best
}
