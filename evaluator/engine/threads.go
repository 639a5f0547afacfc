package engine

import (
	"sort"
	"time"

	"github.com/cacheon/engine/evaluator/sandbox"
	"github.com/cacheon/engine/evaluator/worker"
)

// Threads left running. A kernel can start threads that keep running
// after its call returns (in resident engines they outlive a swap): CPU
// work the engine's own timing never shows, that slows whatever shares
// the host. The controller reads the engine's threads from /proc when a
// frame arrives and again when it sends the next request, and names every
// thread that ran meanwhile for at least LeftRunningCPU and wanted a CPU
// (ran, or was runnable and waited for one) for LeftRunningShare of the
// gap: the engine had nothing to do then. Counting the wait as well as
// the run makes the reading the same on a loaded host, where a busy
// thread gets only a slice of a CPU but is runnable all the time. The
// thresholds leave room for an honest engine's thread pools, which spin
// for well under a millisecond after their last task (GNU OpenMP's
// default) before they sleep.
const (
	LeftRunningCPU   = 50 * time.Millisecond
	LeftRunningShare = 0.25
)

// LeftRunning is one thread that ran while its engine was idle.
type LeftRunning struct {
	// After is the request (batch, phase or swap id) whose frame came
	// before the gap.
	After       int     `json:"after"`
	TID         int     `json:"tid"`
	Name        string  `json:"name"`
	CPUSeconds  float64 `json:"cpu_seconds"`
	WallSeconds float64 `json:"wall_seconds"` // the gap
}

// idleThreads holds the threads as they were at the last frame.
type idleThreads struct {
	session *worker.Session
	after   int
	at      time.Time
	threads map[int]sandbox.Thread
}

// mark reads the threads as a frame arrives.
func (it *idleThreads) mark(s *worker.Session, id int) {
	threads, err := s.Threads()
	if err != nil {
		it.threads = nil
		return
	}
	it.session, it.after, it.at = s, id, time.Now()
	it.threads = make(map[int]sandbox.Thread, len(threads))
	for _, t := range threads {
		it.threads[t.TID] = t
	}
}

// check reads them again before a request and returns the threads that
// ran in the gap, busiest first; nothing when no frame came before.
func (it *idleThreads) check() []LeftRunning {
	if it.threads == nil {
		return nil
	}
	defer func() { it.threads = nil }()
	threads, err := it.session.Threads()
	if err != nil {
		return nil
	}
	gap := time.Since(it.at)
	var out []LeftRunning
	for _, t := range threads {
		before := it.threads[t.TID]
		ran := t.CPU - before.CPU
		wanted := ran + t.RunDelay - before.RunDelay
		if ran >= LeftRunningCPU && wanted.Seconds() >= LeftRunningShare*gap.Seconds() {
			out = append(out, LeftRunning{After: it.after, TID: t.TID, Name: t.Name, CPUSeconds: ran.Seconds(), WallSeconds: gap.Seconds()})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CPUSeconds > out[j].CPUSeconds })
	return out
}
