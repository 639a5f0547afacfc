package qualify

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cacheon/engine/evaluator/engine"
	"github.com/cacheon/engine/evaluator/evidence"
	"github.com/cacheon/engine/evaluator/worker"
)

// The idle bound. While one engine serves a read, every other engine of
// the speed stage waits for its next request and should consume almost no
// CPU. An engine that works while it waits (a kernel that, at import,
// starts host threads that burn the CPU whenever it is not itself being
// called) slows the engine being timed on a shared host: the noisy
// neighbour. The controller reads each waiting engine's CPU time (its
// whole process tree, from /proc, in its own PID namespace) around every
// read, and refuses an idle engine that consumed more than
// IdleCPUFraction of the read's wall time plus IdleCPUAllowance.
//
// The allowance is for the Python runtime's and torch's housekeeping (the
// intra-op thread pool spinning down after the engine's last batch, the
// garbage collector) and for the kernel's accounting, which charges CPU
// time in whole ticks of 10 ms: five ticks. Honest idle stock engines
// measured 0.000 CPU-seconds over reads of 0.06 to 0.4 s on the CPU lane,
// and at most one tick over reads of 0.25 to 0.29 s on an H200 with CUDA
// graphs; the noisy-neighbour fixture took 0.15 to 0.26 CPU-seconds over
// reads of 0.17 to 0.36 s on a 2-core host, and made a stock C read 2.8
// times faster than the B it slowed (docs/reference/integrity.md).
const (
	IdleCPUFraction  = 0.05
	IdleCPUAllowance = 0.05 // CPU-seconds
)

// IdleBound is the most CPU time, in seconds, a waiting engine may consume
// during a read that took wall seconds.
func IdleBound(wall float64) float64 { return IdleCPUAllowance + IdleCPUFraction*wall }

// IdleCPU is what one waiting engine consumed while another served.
type IdleCPU struct {
	// Window is the served work: a read's role, or "control" (v7's
	// untimed stock control).
	Window string `json:"window"`
	// Engine names the waiting engine: its role under v8, or its resident
	// lane under v7 ("baseline-lane", "candidate-lane").
	Engine string `json:"engine"`
	// Candidate says the waiting engine had run the candidate's code by
	// then: its noise is the candidate's, any other's the infrastructure's.
	Candidate   bool    `json:"candidate_code"`
	WallSeconds float64 `json:"wall_seconds"`
	CPUSeconds  float64 `json:"cpu_seconds"`
}

// idleEngine is an engine that waits while another serves.
type idleEngine struct {
	name      string
	candidate bool
	e         *engine.Engine
}

// watchIdle runs serve (one engine's read, which keeps its own errors)
// and returns the CPU time each of the idle engines consumed meanwhile.
// The outcome is set (ok false) when an idle engine could not be
// accounted for: its process gone is that engine's fault (a FAIL when it
// had run the candidate's code, attribute says), anything else the
// controller's (NO_DECISION).
func watchIdle(window string, idle []idleEngine, serve func()) (records []IdleCPU, out Outcome, ok bool) {
	fault := func(w idleEngine, when string, err error) Outcome {
		err = fmt.Errorf("idle CPU %s the %s read: %w", when, window, err)
		if errors.Is(err, worker.ErrProcessGone) {
			err = &engine.Fault{Kind: engine.FaultExited, Detail: err.Error()}
		}
		return attribute(w.name, w.candidate, err)
	}
	before := make([]float64, len(idle))
	for i, w := range idle {
		s, err := w.e.CPUSeconds()
		if err != nil {
			serve()
			return nil, fault(w, "before", err), false
		}
		before[i] = s
	}
	start := time.Now()
	serve()
	wall := time.Since(start).Seconds()
	for i, w := range idle {
		s, err := w.e.CPUSeconds()
		if err != nil {
			return records, fault(w, "after", err), false
		}
		records = append(records, IdleCPU{Window: window, Engine: w.name, Candidate: w.candidate, WallSeconds: wall, CPUSeconds: s - before[i]})
	}
	return records, Outcome{}, true
}

// idleOutcome is the verdict of the idle records: the first engine over
// its bound makes the stage FAIL as a noisy neighbour when it had run the
// candidate's code, and NO_DECISION when it is stock (the host or the
// infrastructure, never the candidate's loss). ok is false when there is
// none. Regrade calls this too.
func idleOutcome(records []IdleCPU) (out Outcome, ok bool) {
	for _, r := range records {
		bound := IdleBound(r.WallSeconds)
		if r.CPUSeconds <= bound {
			continue
		}
		served := "the " + r.Window + " read"
		if r.Window == "control" {
			served = "the stock control"
		}
		what := fmt.Sprintf("%s engine consumed %.3f CPU-seconds while idle, during %s (%.3f s; bound %.3f s)",
			r.Engine, r.CPUSeconds, served, r.WallSeconds, bound)
		if r.Candidate {
			return Outcome{Fail, "noisy_neighbour: the candidate's " + what}, true
		}
		return Outcome{NoDecision, "noisy_neighbour: a stock " + what + " (infrastructure)"}, true
	}
	return Outcome{}, false
}

// regradeIdle recomputes the noisy-neighbour verdict from the retained
// idle records: an engine over its bound must have ended the speed stage
// with the verdict idleOutcome gives, and a speed stage that passed must
// have had every waiting engine within its bound.
func regradeIdle(store *evidence.Store, s *Speed) error {
	data, err := store.Get(*s.IdleCPU)
	if err != nil {
		return fmt.Errorf("idle CPU: %w", err)
	}
	var records []IdleCPU
	if err := json.Unmarshal(data, &records); err != nil {
		return fmt.Errorf("idle CPU: %w", err)
	}
	if out, noisy := idleOutcome(records); noisy && (out.Decision != s.Decision || out.Reason != s.Reason) {
		return fmt.Errorf("%w: the idle records decide %s (%s), the report's speed stage says %s (%s)", ErrRegrade, out.Decision, out.Reason, s.Decision, s.Reason)
	}
	return nil
}
