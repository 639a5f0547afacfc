package sandbox

import (
	"bytes"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/cacheon/engine/evaluator/sandbox/cgroup"
)

// newGroup makes the sandbox's control group: the sum bounds that the
// per-process rlimits cannot give. RLIMIT_DATA misses shared mappings,
// memfd and tmpfs pages, and RLIMIT_NPROC times 16 GiB is no bound at all;
// the group's memory bound counts all of them, its pids bound counts every
// task, and its CPU quota keeps a sandbox that burns every CPU from
// starving the controller and the other lanes. A host where no group can
// be made refuses, as one without namespaces does: the bounds are part of
// the sandbox, not an extra. Groups that a controller which crashed left
// behind are removed on the way.
func newGroup(s *Spec) (*cgroup.Group, error) {
	h, err := cgroup.Probe()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	if err := h.Prepare(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	// A stale group that cannot be removed costs nothing but its
	// directory; it does not stop this sandbox.
	_, _ = h.CleanStale()
	mem := s.Limits.GroupMemory
	if mem == 0 {
		mem = s.Limits.Memory * uint64(len(s.Procs))
	}
	g, err := h.Create(cgroup.Limits{Memory: mem, Pids: s.Limits.Tasks, CPU: s.Limits.CPU})
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrUnavailable, h, err)
	}
	return g, nil
}

// Thread is one task (a thread of some process) inside a sandbox, as the
// controller reads it from /proc in its own PID namespace.
type Thread struct {
	TID   int    `json:"tid"`
	PID   int    `json:"pid"`  // its process (thread group)
	Name  string `json:"name"` // comm: what the thread was named, at most 15 bytes
	State string `json:"state"`
	// CPU is the time it ran; RunDelay the time it was runnable but
	// waited for a CPU (/proc/<tid>/schedstat).
	CPU      time.Duration `json:"cpu_ns"`
	RunDelay time.Duration `json:"run_delay_ns"`
}

// Threads lists every task in the sandbox's control group, in tid order.
// A task that ended while the list was read is left out.
func (sb *Sandbox) Threads() ([]Thread, error) {
	tids, err := sb.group.Tasks()
	if err != nil {
		return nil, fmt.Errorf("sandbox threads: %w", err)
	}
	sort.Ints(tids)
	out := make([]Thread, 0, len(tids))
	for _, tid := range tids {
		if t, ok := ReadThread(tid); ok {
			out = append(out, t)
		}
	}
	return out, nil
}

// ReadThread reads one task's name, state and times from /proc; false
// when it is gone.
func ReadThread(tid int) (Thread, bool) {
	t := Thread{TID: tid}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/stat")
	if err != nil {
		return t, false
	}
	open, end := bytes.IndexByte(stat, '('), bytes.LastIndexByte(stat, ')')
	if open < 0 || end < open {
		return t, false
	}
	t.Name = string(stat[open+1 : end])
	f := strings.Fields(string(stat[end+1:]))
	if len(f) >= 1 {
		t.State = f[0]
	}
	sched, err := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/schedstat")
	if err != nil {
		return t, false
	}
	if f := strings.Fields(string(sched)); len(f) >= 2 {
		cpu, _ := strconv.ParseInt(f[0], 10, 64)
		wait, _ := strconv.ParseInt(f[1], 10, 64)
		t.CPU, t.RunDelay = time.Duration(cpu), time.Duration(wait)
	}
	if status, err := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/status"); err == nil {
		for _, line := range strings.Split(string(status), "\n") {
			if v, ok := strings.CutPrefix(line, "Tgid:"); ok {
				t.PID, _ = strconv.Atoi(strings.TrimSpace(v))
				break
			}
		}
	}
	return t, true
}

// Bounds is what the sandbox's control group has counted so far.
func (sb *Sandbox) Bounds() cgroup.Stats { return sb.group.Stats() }
