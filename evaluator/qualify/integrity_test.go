package qualify

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cacheon/engine/evaluator/engine/enginetest"
	"github.com/cacheon/engine/evaluator/speed"
	"github.com/cacheon/engine/stacks/plan"
)

// TestABIScreenDrawsItsSeedFromTheSecret: the fixture that replays the
// validator's input stream for the public seed 0 (it passes verify there,
// evaluator/verify's tests show) fails the qualification's ABI screen,
// whose seed is drawn from the validator secret whatever the caller's
// verify options say (integrity class 8).
func TestABIScreenDrawsItsSeedFromTheSecret(t *testing.T) {
	f := enginetest.New(t)
	o := qualifyOptions(t, f, "kernels/fixtures/rmsnorm_predicts_rng")
	o.Verify.Seed = 0 // the seed the fixture predicts; Run must not use it
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	r := res.Report
	last := r.Stages[len(r.Stages)-1]
	if r.Decision != Fail || last.Name != ScreenABI || last.Decision != Fail || !strings.Contains(last.Reason, "outside atol") {
		t.Fatalf("report %s, last stage %s %s %q; want a FAIL of the ABI screen for wrong values", r.Decision, last.Name, last.Decision, last.Reason)
	}
	if r.Speed != nil {
		t.Fatal("a candidate the ABI screen refused reached the speed stage")
	}
}

// TestSpeedStageRefusesAStoppedClock: a kernel that, at import, stops the
// engine process's clocks (time.perf_counter, perf_counter_ns, monotonic)
// makes every window the engine times read zero. The controller times
// every window on its own clock, so the engine's reading is only a tamper
// check, and it catches this one: the candidate's engine is refused for
// forged timing and the speed stage FAILs it (integrity class 5). The
// same fixture passes verify (evaluator/verify's tests), so the speed
// stage is the one that catches it.
func TestSpeedStageRefusesAStoppedClock(t *testing.T) {
	f := enginetest.New(t)
	o := qualifyOptions(t, f, "kernels/fixtures/rmsnorm_stops_the_clock")
	req := o.Plan
	req.TreeDir = filepath.Join(f.Run, "trees")
	planned, err := plan.Run(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	a := arms(f)
	for i := range a {
		a[i].Spec.Tree = planned.IncumbentTree
		if a[i].Candidate {
			a[i].Spec.Tree = planned.CandidateTree
		}
	}
	ev := runSpeedV8(context.Background(), f.Iso, a, smoke(t), testPolicy(), nil)
	t.Logf("speed: %s %s", ev.Decision, ev.Reason)
	if ev.Decision != Fail || !strings.Contains(ev.Reason, string(speed.C)) || !strings.Contains(ev.Reason, "forged_timing") ||
		!strings.Contains(ev.Reason, "not a positive time") {
		t.Fatalf("speed stage %s %q, want a FAIL of C for forged timing", ev.Decision, ev.Reason)
	}
	if len(ev.Reads) != 0 {
		t.Fatalf("reads %+v taken from an engine with a stopped clock", ev.Reads)
	}
}
