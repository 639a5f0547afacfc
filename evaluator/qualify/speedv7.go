package qualify

import (
	"context"
	"fmt"
	"sync"

	"github.com/cacheon/engine/evaluator/engine"
	"github.com/cacheon/engine/evaluator/speed"
	"github.com/cacheon/engine/evaluator/worker"
	"github.com/cacheon/engine/evaluator/workload"
)

// Swap is one hot swap of a resident engine, as the evidence keeps it.
type Swap struct {
	Role    speed.Role `json:"role"`    // the read it prepared (or "restore")
	Lane    string     `json:"lane"`    // "baseline" or "candidate"
	Tree    string     `json:"tree"`    // "incumbent" or "candidate"
	Seconds float64    `json:"seconds"` // the controller's time for the swap
}

// Resident is a v7 schedule's input: the two resident engines (baseline
// and candidate lane, both started on the incumbent tree and allowed to
// swap to either tree) and the two trees.
type Resident struct {
	Baseline, Candidate engine.Spec
	IncumbentTree       string
	CandidateTree       string
}

// runSpeedV7 is the hot-swap schedule (spec §5.2, v7): one resident
// engine per lane, both started on the incumbent's tree and warmed
// together. B is read on the baseline engine after a stock→stock swap, C
// on the candidate engine after the candidate's tree is swapped in (its
// kernels imported, its graphs captured by the warm-up), then the
// candidate engine is restored to stock. The two-leg limits decide; only
// when they are inconclusive is B′ read, on the baseline engine after
// another stock→stock swap. A set the lanes spoiled is set aside and read
// once more (rereadReason). Every swap is followed by the workload's
// warm-up batches, so each read starts equally warm. When no B′ was read,
// the baseline engine serves the workload once more untimed (phase
// "control"): the stock trajectories the pristine reference compares.
func runSpeedV7(ctx context.Context, iso worker.Isolation, r Resident, w *workload.Workload, p speed.Policy, sample Sampler) *SpeedEvidence {
	ev := newSpeedEvidence(p)
	if p.Version != speed.V7 {
		ev.Outcome = Outcome{NoDecision, fmt.Sprintf("the hot-swap schedule grades under policy version 7, not %d", p.Version)}
		return ev
	}
	specs := []engine.Spec{r.Baseline, r.Candidate}
	for i := range specs {
		specs[i].Tree = r.IncumbentTree
		specs[i].SwapTrees = []string{r.IncumbentTree, r.CandidateTree}
	}
	engines := make([]*engine.Engine, 2)
	defer func() {
		for _, e := range engines {
			if e != nil {
				_, _ = e.Close()
			}
		}
	}()
	// Both resident engines start and warm up at once, on stock. Neither
	// runs candidate code yet, so a failure here is never the candidate's.
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range specs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			e, err := engine.Start(ctx, iso, specs[i])
			if err != nil {
				errs[i] = err
				return
			}
			engines[i] = e
			_, errs[i] = warm(ctx, e, w)
		}(i)
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			ev.Outcome = attribute([]string{"baseline", "candidate"}[i]+" resident", false, fmt.Errorf("start and warm-up: %w", err))
			return ev
		}
	}
	base, cand := engines[0], engines[1]
	ev.Ready[speed.B], ev.Ready[speed.C] = base.Ready, cand.Ready
	// candidateLoaded: the candidate engine has imported the candidate's
	// kernels. From then on, whatever it does while idle is the
	// candidate's, even after the restoration swap (a thread it started
	// outlives the swap).
	candidateLoaded := false
	// other is the engine that waits while e serves, for the
	// noisy-neighbour check.
	other := func(e *engine.Engine) []idleEngine {
		if e == base {
			return []idleEngine{{name: "candidate-lane", candidate: candidateLoaded, e: cand}}
		}
		return []idleEngine{{name: "baseline-lane", e: base}}
	}
	// read swaps e to tree, warms it and takes one timed read, the other
	// engine watched while it waits.
	read := func(e *engine.Engine, role speed.Role, lane, tree, treeName string, candidate bool) bool {
		candidateLoaded = candidateLoaded || candidate
		return ev.swapAndRead(ctx, e, swapRead{role: role, lane: lane, tree: tree, treeName: treeName, candidate: candidate}, other(e), w, sample)
	}
	// set takes one v7 read set: B, C, the restoration swap, and B′ only
	// when the two legs are inconclusive. Its reads and samples are ev's.
	set := func() (*speed.Grade, bool) {
		ev.Reads, ev.Samples = nil, []ReadSamples{}
		if !read(base, speed.B, "baseline", r.IncumbentTree, "incumbent", false) ||
			!read(cand, speed.C, "candidate", r.CandidateTree, "candidate", true) {
			return nil, false
		}
		// The restoration swap: the candidate's code must let go of the
		// engine. A candidate engine that cannot return to stock is the
		// candidate's failure.
		secs, _, err := cand.Swap(ctx, r.IncumbentTree)
		ev.Swaps = append(ev.Swaps, Swap{Role: "restore", Lane: "candidate", Tree: "incumbent", Seconds: secs})
		if err != nil {
			ev.Outcome = attribute(string(speed.C), true, fmt.Errorf("restoration swap: %w", err))
			return nil, false
		}
		g, err := speed.GradeReads(p, ev.Reads, speed.Options{Live: true})
		if err != nil {
			ev.Outcome = Outcome{NoDecision, fmt.Sprintf("grading: %v", err)}
			return nil, false
		}
		if g.Decision == speed.BPrimeRequired {
			if !read(base, speed.BPrime, "baseline", r.IncumbentTree, "incumbent", false) {
				return nil, false
			}
			if g, err = speed.GradeReads(p, ev.Reads, speed.Options{}); err != nil {
				ev.Outcome = Outcome{NoDecision, fmt.Sprintf("grading: %v", err)}
				return nil, false
			}
		}
		return g, true
	}
	g, ok := set()
	if !ok {
		return ev
	}
	// A set the lanes spoiled (B and B′ drifting apart, a device that
	// slowed itself down) is set aside and read once more in the same
	// engines, as v8 does (rereadReason looks at the stock reads and the
	// samples only, never at C). On an H100 an honest attention candidate
	// ended NO_DECISION this way, B and B′ 0.58 % apart
	// (docs/results/stages-h100.md).
	if why := rereadReason(g, ev.Samples); why != "" {
		ev.SetAside = &SetAside{Reason: why, Reads: ev.Reads, Samples: ev.Samples}
		if g, ok = set(); !ok {
			return ev
		}
	}
	if len(ev.Reads) == 2 {
		// The two legs decided, so no B′ was read. The pristine reference
		// still needs a stock control's trajectories: the baseline engine
		// serves the workload once more after a stock→stock swap, untimed.
		secs, _, err := base.Swap(ctx, r.IncumbentTree)
		ev.Swaps = append(ev.Swaps, Swap{Role: speed.BPrime, Lane: "baseline", Tree: "incumbent", Seconds: secs})
		if err != nil {
			ev.Outcome = attribute(string(speed.BPrime), false, fmt.Errorf("swap for the stock control: %w", err))
			return ev
		}
		var b []Batch
		records, idleOut, accounted := watchIdle("control", other(base), func() {
			b, err = serve(ctx, base, w, 0, len(w.PromptBatches), "control")
		})
		ev.recordBatches(speed.BPrime, b)
		if err != nil {
			ev.Outcome = attribute(string(speed.BPrime), false, fmt.Errorf("stock control: %w", err))
			return ev
		}
		// The control is untimed, but the candidate engine waits through
		// it after its code ran: a neighbour that is noisy now was noisy
		// whenever it waited, and the grade cannot tell which reads it
		// slowed.
		if !ev.idleVerdict(records, idleOut, accounted) {
			return ev
		}
	}
	ev.Grade = g
	ev.Outcome = speedOutcome(g, ev.Samples)
	return ev
}

// swapRead is one read of a resident engine: the role it is read as, the
// lane and tree names the evidence records, the tree it swaps to, and
// whether that tree is the candidate's.
type swapRead struct {
	role           speed.Role
	lane           string
	tree, treeName string
	candidate      bool
}

// swapAndRead swaps e to r's tree, warms it with the workload's warm-up
// batches and takes one timed read, the engines in others watched for the
// CPU they burn meanwhile. It is false, with ev's outcome set, when the
// read did not complete.
func (ev *SpeedEvidence) swapAndRead(ctx context.Context, e *engine.Engine, r swapRead, others []idleEngine, w *workload.Workload, sample Sampler) bool {
	secs, _, err := e.Swap(ctx, r.tree)
	ev.Swaps = append(ev.Swaps, Swap{Role: r.role, Lane: r.lane, Tree: r.treeName, Seconds: secs})
	if err != nil {
		ev.Outcome = attribute(string(r.role), r.candidate, fmt.Errorf("swap to the %s tree: %w", r.treeName, err))
		return false
	}
	b, err := warm(ctx, e, w)
	ev.recordBatches(r.role, b)
	if err != nil {
		ev.Outcome = attribute(string(r.role), r.candidate, fmt.Errorf("warm-up after the swap: %w", err))
		return false
	}
	var rd speed.Read
	var readErr error
	var rs *ReadSamples
	records, idleOut, accounted := watchIdle(string(r.role), others, func() {
		rs, err = sampleAround(ctx, sample, r.role, func() error {
			var b []Batch
			rd, b, readErr = timedRead(ctx, e, w, r.role)
			ev.recordBatches(r.role, b)
			return readErr
		})
	})
	if rs != nil {
		ev.Samples = append(ev.Samples, *rs)
	}
	if readErr != nil {
		ev.Outcome = attribute(string(r.role), r.candidate, fmt.Errorf("read: %w", readErr))
		return false
	}
	if err != nil {
		ev.Outcome = Outcome{NoDecision, err.Error()}
		return false
	}
	if !ev.idleVerdict(records, idleOut, accounted) {
		return false
	}
	ev.Reads = append(ev.Reads, rd)
	return true
}

// idleVerdict keeps the idle records and is false (with the outcome set)
// when a waiting engine was noisy or could not be accounted for.
func (ev *SpeedEvidence) idleVerdict(records []IdleCPU, out Outcome, accounted bool) bool {
	ev.Idle = append(ev.Idle, records...)
	if noisy, over := idleOutcome(records); over {
		ev.Outcome = noisy
		return false
	}
	if !accounted {
		ev.Outcome = out
		return false
	}
	return true
}
