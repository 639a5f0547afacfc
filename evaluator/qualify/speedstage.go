package qualify

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/cacheon/engine/evaluator/engine"
	"github.com/cacheon/engine/evaluator/speed"
	"github.com/cacheon/engine/evaluator/worker"
	"github.com/cacheon/engine/evaluator/workload"
)

// Arm is one engine of the speed stage.
type Arm struct {
	Role      speed.Role
	Candidate bool // the engine runs the candidate's tree
	Spec      engine.Spec
}

// SpeedEvidence is what the speed stage measured and decided.
type SpeedEvidence struct {
	Outcome
	Policy  speed.Policy           `json:"-"`
	Reads   []speed.Read           `json:"-"`
	Batches map[speed.Role][]Batch `json:"-"`
	Ready   map[speed.Role]engine.Ready
	Grade   *speed.Grade `json:"-"`

	mu sync.Mutex // Batches, while engines warm up together
}

// runSpeedV8 is the non-swappable schedule: three engine processes (B, C
// and B′) start together and warm up together; then their reads are
// timed one after another, B, C, B′, so no timed work overlaps.
func runSpeedV8(ctx context.Context, iso worker.Isolation, arms []Arm, w *workload.Workload, p speed.Policy) *SpeedEvidence {
	ev := &SpeedEvidence{Policy: p, Batches: map[speed.Role][]Batch{}, Ready: map[speed.Role]engine.Ready{}}
	if len(arms) != 3 || arms[0].Role != speed.B || arms[1].Role != speed.C || arms[2].Role != speed.BPrime {
		ev.Outcome = Outcome{NoDecision, "the v8 schedule needs the arms B, C and B′ in that order"}
		return ev
	}
	engines := make([]*engine.Engine, len(arms))
	defer func() {
		for _, e := range engines {
			if e != nil {
				_, _ = e.Close()
			}
		}
	}()
	// Start and warm every engine at once; the first failure decides.
	errs := make([]error, len(arms))
	var wg sync.WaitGroup
	for i := range arms {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			e, err := engine.Start(ctx, iso, arms[i].Spec)
			if err != nil {
				errs[i] = err
				return
			}
			engines[i] = e
			b, err := warm(ctx, e, w)
			errs[i] = err
			ev.recordBatches(arms[i].Role, b)
		}(i)
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			ev.Outcome = attribute(string(arms[i].Role), arms[i].Candidate, fmt.Errorf("start and warm-up: %w", err))
			return ev
		}
		ev.Ready[arms[i].Role] = engines[i].Ready
	}
	for i, a := range arms {
		r, b, err := timedRead(ctx, engines[i], w, a.Role)
		ev.recordBatches(a.Role, b)
		if err != nil {
			ev.Outcome = attribute(string(a.Role), a.Candidate, fmt.Errorf("read: %w", err))
			return ev
		}
		ev.Reads = append(ev.Reads, r)
	}
	g, err := speed.GradeReads(p, ev.Reads, speed.Options{})
	if err != nil {
		// The controller's own reads of the wrong shape: its bug or its
		// policy's, never the candidate's loss.
		ev.Outcome = Outcome{NoDecision, fmt.Sprintf("grading: %v", err)}
		return ev
	}
	ev.Grade = g
	ev.Outcome = Outcome{Decision(g.Decision), fmt.Sprintf("%s (speedup %s)", g.Reason, speed.Format(g.Speedup))}
	return ev
}

func (ev *SpeedEvidence) recordBatches(role speed.Role, b []Batch) {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	ev.Batches[role] = append(ev.Batches[role], b...)
}

// armDir is an arm's work directory under the run directory.
func armDir(run string, role speed.Role) string { return filepath.Join(run, "arms", string(role)) }
