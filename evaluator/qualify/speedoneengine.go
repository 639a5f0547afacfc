package qualify

import (
	"context"
	"fmt"

	"github.com/cacheon/engine/evaluator/engine"
	"github.com/cacheon/engine/evaluator/speed"
	"github.com/cacheon/engine/evaluator/worker"
	"github.com/cacheon/engine/evaluator/workload"
)

// runSpeedOneEngine reads B, C and B′ in one resident engine that swaps
// trees between the reads: B after a stock→stock swap, C after the C
// arm's tree is swapped in, B′ after the swap back to stock. Every read
// starts after the workload's warm-up batches, as in the v7 schedule.
// The three reads are graded together, as v8 grades its three processes.
//
// It measures what the three-process schedule cannot separate: on a GPU
// each engine process runs at a speed of its own (B and B′, one tree in
// two processes, differ by 0.07–0.32 % where one read's windows agree to
// 0.03–0.06 %: docs/results/rereads-h100.md), so a read set of three
// processes compares processes as much as trees. In one process the
// weights, the allocator and the libraries' choices are the same for
// every read, and only the swapped tree and its captured graphs differ.
// It is a calibration schedule (qualify calibrate --one-engine), not a
// qualification's: B′ is read in the process the candidate's code ran in.
//
// arms are the v8 schedule's B, C and B′: the engine is started from B's
// spec, and C's spec gives the tree swapped in for C.
func runSpeedOneEngine(ctx context.Context, iso worker.Isolation, arms []Arm, w *workload.Workload, p speed.Policy, sample Sampler) *SpeedEvidence {
	ev := newSpeedEvidence(p)
	if !armsInSets(arms, 1) {
		ev.Outcome = Outcome{NoDecision, "the one-engine schedule needs the arms B, C and B′ in that order"}
		return ev
	}
	incumbentTree, cTree, candidate := arms[0].Spec.Tree, arms[1].Spec.Tree, arms[1].Candidate
	spec := arms[0].Spec
	spec.SwapTrees = []string{incumbentTree, cTree}
	e, err := engine.Start(ctx, iso, spec)
	if err != nil {
		ev.Outcome = attribute("resident", false, fmt.Errorf("start: %w", err))
		return ev
	}
	defer func() { _, _ = e.Close() }()
	b, err := warm(ctx, e, w)
	ev.recordBatches(speed.B, b)
	if err != nil {
		ev.Outcome = attribute("resident", false, fmt.Errorf("warm-up: %w", err))
		return ev
	}
	for _, role := range []speed.Role{speed.B, speed.C, speed.BPrime} {
		ev.Ready[role] = e.Ready
	}
	cTreeName := "incumbent"
	if candidate {
		cTreeName = "candidate"
	}
	for _, r := range []swapRead{
		{role: speed.B, lane: "shared", tree: incumbentTree, treeName: "incumbent"},
		{role: speed.C, lane: "shared", tree: cTree, treeName: cTreeName, candidate: candidate},
		{role: speed.BPrime, lane: "shared", tree: incumbentTree, treeName: "incumbent", candidate: candidate},
	} {
		// One engine: none waits while another is read.
		if !ev.swapAndRead(ctx, e, r, nil, w, sample) {
			return ev
		}
	}
	g, err := speed.GradeReads(p, ev.Reads, speed.Options{})
	if err != nil {
		ev.Outcome = Outcome{NoDecision, fmt.Sprintf("grading: %v", err)}
		return ev
	}
	ev.Grade = g
	ev.Outcome = speedOutcome(g, ev.Samples)
	return ev
}
