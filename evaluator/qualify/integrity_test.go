package qualify

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cacheon/engine/evaluator/engine/enginetest"
	"github.com/cacheon/engine/evaluator/speed"
	"github.com/cacheon/engine/evaluator/workload"
	"github.com/cacheon/engine/internal/testtree"
	"github.com/cacheon/engine/stacks/plan"
)

// TestABIScreenDrawsItsSeedFromTheSecret: the fixture that replays the
// validator's input stream for the public seed 0 (it passes verify there,
// evaluator/verify's tests show) fails the qualification's ABI screen,
// whose seed is drawn from the validator secret whatever the caller's
// verify options say (integrity class 8).
func TestABIScreenDrawsItsSeedFromTheSecret(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	o := qualifyOptions(t, f, "kernels/fixtures/rmsnorm_predicts_rng")
	o.Verify.Seed = 0 // the seed the fixture predicts; Run must not use it
	// The fixture predicts the default catalog's cases (shapes, jitter and
	// seeds in their order), so the screen keeps that catalog here; a token
	// bound of the candidate's own leaves out the 4096-token case instead,
	// which leaves every other case as it was (evaluator/verify's tests
	// show the fixture passes under that bound and seed 0).
	o.Verify.Catalog = nil
	testtree.DeclareTokenBound(t, o.Plan.CandidateDir, 512)
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

// speedWithCandidate plans candidate over the incumbent and runs the v8
// speed stage with its tree on C and the incumbent's on B and B′.
func speedWithCandidate(t *testing.T, f enginetest.Fixture, candidate string) *SpeedEvidence {
	t.Helper()
	return speedWithCandidateOn(t, f, candidate, smoke(t))
}

// speedWithCandidateOn is speedWithCandidate with another workload.
func speedWithCandidateOn(t *testing.T, f enginetest.Fixture, candidate string, w *workload.Workload) *SpeedEvidence {
	t.Helper()
	o := qualifyOptions(t, f, candidate)
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
	ev := runSpeedSets(context.Background(), f.Iso, a, w, testPolicy(), nil, 0)
	t.Logf("speed: %s %s", ev.Decision, ev.Reason)
	return ev
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
	t.Parallel()
	ev := speedWithCandidate(t, newFixture(t), "kernels/fixtures/rmsnorm_stops_the_clock")
	if ev.Decision != Fail || !strings.Contains(ev.Reason, string(speed.C)) || !strings.Contains(ev.Reason, "forged_timing") ||
		!strings.Contains(ev.Reason, "not a positive time") {
		t.Fatalf("speed stage %s %q, want a FAIL of C for forged timing", ev.Decision, ev.Reason)
	}
	if len(ev.Reads) != 0 {
		t.Fatalf("reads %+v taken from an engine with a stopped clock", ev.Reads)
	}
}

// TestSpeedStageGradesOnlyTheControllersClock: a kernel that slows the
// engine process's clocks a thousandfold makes every window the engine
// reports a thousandth of its length. On the CPU lane's short windows that
// stays inside the timer tolerance, so nothing is refused, and the kernel
// gains nothing: every window graded is the controller's own span, the
// engine's times are kept beside it only as the tamper check saw them, and
// C grades like the stock engines it equals (integrity class 5).
func TestSpeedStageGradesOnlyTheControllersClock(t *testing.T) {
	ev := speedWithCandidate(t, newFixture(t), "kernels/fixtures/rmsnorm_slows_the_clock")
	if ev.Grade == nil && ev.Decision == Fail && strings.Contains(ev.Reason, "C engine") && strings.Contains(ev.Reason, "forged_timing") {
		// A loaded host made one window long enough (over 2.67 s) for the
		// tolerance to see the slowed clock: refused, which gains nothing
		// either.
		t.Logf("a window long enough for the tolerance: %s", ev.Reason)
		return
	}
	if ev.Grade == nil || len(ev.Reads) != 3 {
		t.Fatalf("speed stage %s %q with %d reads, want three graded reads", ev.Decision, ev.Reason, len(ev.Reads))
	}
	var timed []Batch
	for _, b := range ev.Batches[speed.C] {
		// The tamper took effect: the engine's own times are far short of
		// the controller's.
		if b.EngineSeconds*100 > b.Seconds {
			t.Fatalf("C batch %d: engine %g s of the controller's %g s; the fixture's clock did not slow", b.Index, b.EngineSeconds, b.Seconds)
		}
		if b.Phase == "timed" {
			timed = append(timed, b)
		}
	}
	c := ev.Reads[1]
	if c.Role != speed.C || len(c.Windows) != len(timed) {
		t.Fatalf("read %s with %d windows for %d timed batches", c.Role, len(c.Windows), len(timed))
	}
	for i, w := range c.Windows {
		if w.Seconds != timed[i].Seconds {
			t.Fatalf("C window %d graded %g s, the controller measured %g s (the engine said %g s)", i, w.Seconds, timed[i].Seconds, timed[i].EngineSeconds)
		}
	}
	// Stock against stock in all but the clock: far from the thousandfold
	// the engine's own times would give. Not a closer bound: on a loaded
	// host one stock read alone can run at a third of another's (B and B′
	// were measured 0.47 apart), which the stage reports as drift; the
	// windows above are what show the engine's clock was not graded.
	if ev.Grade.Speedup > 100 {
		t.Fatalf("C graded %gx B", ev.Grade.Speedup)
	}
}

// qualifyOverDemo runs the whole qualification of candidate over the
// demonstration incumbent (stacks/demo.hcl, whose rmsnorm is slow on
// purpose) and logs every stage.
func qualifyOverDemo(t *testing.T, candidate string) *Report {
	t.Helper()
	return qualifyOverDemoOn(t, candidate, smoke(t))
}

// qualifyOverDemoOn is qualifyOverDemo with another workload.
func qualifyOverDemoOn(t *testing.T, candidate string, w *workload.Workload) *Report {
	t.Helper()
	f := newFixture(t)
	o := qualifyOptionsOver(t, f, "stacks/demo.hcl", candidate)
	o.Workload = w
	r := runLeavingNothing(t, o)
	for _, s := range r.Stages {
		t.Logf("%s: %s %s (%s s)", s.Name, s.Decision, s.Reason, s.Seconds)
	}
	t.Logf("decision %s: %s", r.Decision, r.Reason)
	return r
}

// stageOf is the report's stage called name, nil when it did not run.
func stageOf(r *Report, name string) *Stage {
	for i := range r.Stages {
		if r.Stages[i].Name == name {
			return &r.Stages[i]
		}
	}
	return nil
}

// TestQualityCatchesAKernelHonestOnlyWhileAudited: a kernel honest under
// the audit's environment and for its first 40 calls, and afterwards
// replaying its last output of the same shape instead of computing, qualified in
// full over the demonstration incumbent. It is faster than the slow
// incumbent, so speed passes it; the audit's engine sees only its honest
// side, so A passes it; the pristine reference T teacher-forces the timed
// arms' trajectories, and the candidate's are wrong: T FAILs it, and the
// qualification with it (integrity class 9, honest only while watched).
func TestQualityCatchesAKernelHonestOnlyWhileAudited(t *testing.T) {
	// The speed stage comes before T and ends the qualification when it
	// does not PASS. The candidate is several times faster than the slow
	// incumbent, but a CPU read is noise on a loaded machine (one CI run
	// with a second beside it read 0.82 and FAILed speed), so a speed
	// stage that did not PASS is measured again, up to three times: what
	// this test judges is T, and T only runs after a speed PASS.
	var r *Report
	for try := 1; ; try++ {
		r = qualifyOverDemo(t, "kernels/fixtures/rmsnorm_wrong_unless_audited")
		s := stageOf(r, StageSpeed)
		if s != nil && s.Decision == Pass {
			break
		}
		if try == 3 {
			t.Fatalf("speed stage %+v in %d qualifications, want a PASS to reach T (the candidate is several times faster than the slow incumbent)", s, try)
		}
		t.Logf("qualification %d: speed stage %+v; measuring again", try, s)
	}
	if s := stageOf(r, StageAudit); s == nil || s.Decision != Pass {
		t.Fatalf("stage %s: %+v, want a PASS (the cheat is for T to catch)", StageAudit, s)
	}
	// T FAILs when any metric's regression interval clears its delta; the
	// reason names each metric that did (on the CPU test model, argmax_rate
	// and tail_rate almost always, mean_nll and worst_nll often).
	last := r.Stages[len(r.Stages)-1]
	if r.Decision != Fail || last.Name != StageQuality || last.Decision != Fail || !strings.Contains(last.Reason, ".regression: [") {
		t.Fatalf("report %s, last stage %s %s %q; want a FAIL of quality naming a metric's regression", r.Decision, last.Name, last.Decision, last.Reason)
	}
}

// TestSpeedStageRefusesANoisyNeighbour: a correct kernel that, at import,
// starts threads burning the host's CPU whenever its engine has not
// called it for a moment, qualified in full over the demonstration
// incumbent. It waits, noisy, while the other engine serves; the
// controller reads every waiting engine's CPU time around each read, and
// the candidate's engine over the idle bound FAILs the speed stage as a
// noisy neighbour, naming the CPU-seconds (integrity class: the noisy
// neighbour). The candidate is hot-swappable, so this is the v7
// schedule; TestSpeedV8RefusesANoisyNeighbour is the v8 one.
func TestSpeedStageRefusesANoisyNeighbour(t *testing.T) {
	// Long reads, as in the v8 test: with the smoke workload the stock
	// control read lasted 0.11 to 0.36 s, and the short ones left the
	// fixture's noise (after its 50 ms quiet period) near the bound on a
	// loaded machine.
	r := qualifyOverDemoOn(t, "kernels/fixtures/rmsnorm_noisy_neighbour", longSmoke(t))
	last := r.Stages[len(r.Stages)-1]
	if r.Decision != Fail || last.Name != StageSpeed || last.Decision != Fail || !strings.Contains(last.Reason, "noisy_neighbour: the candidate's") ||
		!strings.Contains(last.Reason, "CPU-seconds") {
		t.Fatalf("report %s, last stage %s %s %q; want a FAIL of speed for noisy_neighbour", r.Decision, last.Name, last.Decision, last.Reason)
	}
	if r.Speed == nil || r.Speed.IdleCPU == nil {
		t.Fatalf("no idle CPU evidence in the speed record %+v", r.Speed)
	}
}

// TestSpeedV8RefusesANoisyNeighbour: the same fixture under the v8
// schedule (three engines started and warmed together, then timed one
// after another), where the noise would slow B and B′ down while C waits:
// the speed stage FAILs C while B is timed, and takes no read from the
// arms it disturbed.
func TestSpeedV8RefusesANoisyNeighbour(t *testing.T) {
	// Reads long enough for the noise to show: the fixture keeps quiet
	// for 50 ms after its engine's last call (the warm-up, just before
	// B's read), and the smoke workload's reads last about 60 ms, so on a
	// loaded two-core machine it burned too little of B's read to cross
	// the bound. 48 new tokens make each read several times longer.
	ev := speedWithCandidateOn(t, newFixture(t), "kernels/fixtures/rmsnorm_noisy_neighbour", longSmoke(t))
	for _, r := range ev.Idle {
		t.Logf("idle %s during %s: %.3f CPU-s over %.3f s (bound %.3f)", r.Engine, r.Window, r.CPUSeconds, r.WallSeconds, IdleBound(r.WallSeconds))
	}
	if ev.Decision != Fail || !strings.Contains(ev.Reason, "noisy_neighbour: the candidate's C engine") || !strings.Contains(ev.Reason, "during the B read") {
		t.Fatalf("speed stage %s %q, want a FAIL of C as a noisy neighbour while B was timed", ev.Decision, ev.Reason)
	}
	if len(ev.Reads) != 0 {
		t.Fatalf("reads %+v kept from a stage with a noisy neighbour", ev.Reads)
	}
}

// TestQualifyDoesNotPassStockRebundled: the incumbent's own rmsnorm entry,
// byte for byte, under a new bundle id (an A/A candidate, had it got past
// intake's anti-copy), qualified in full over the repository incumbent.
// The bundle id is no part of the selected payload, so the candidate
// selects the incumbent's payload: the build screen refuses the
// transition as a no-op before any engine starts, and stock never gets
// to race itself (which the A/A tests of the speed stage show it cannot
// win by the margin except by noise the grade accounts for).
func TestQualifyDoesNotPassStockRebundled(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	o := qualifyOptions(t, f, "kernels/fixtures/rmsnorm_stock_rebundled")
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	r := res.Report
	for _, s := range r.Stages {
		t.Logf("%s: %s %s (%s s)", s.Name, s.Decision, s.Reason, s.Seconds)
	}
	last := r.Stages[len(r.Stages)-1]
	if r.Decision != Fail || last.Name != ScreenBuild || last.Decision != Fail || !strings.Contains(last.Reason, "no_op") || r.Speed != nil {
		t.Fatalf("report %s, last stage %s %s %q; want the build screen to FAIL it as a no-op", r.Decision, last.Name, last.Decision, last.Reason)
	}
	if entries, _ := os.ReadDir(filepath.Join(o.RunDir, "arms")); len(entries) != 0 {
		t.Fatalf("engines started for a no-op candidate: %v", entries)
	}
	if err := Regrade(o.Store, r); err != nil {
		t.Fatalf("regrade: %v", err)
	}
}

// TestForgedFramesGainNothing: a kernel that writes forged engine frames
// (a ready frame, a prefill answer, a decode answer with made-up tokens
// and a tiny time) on every descriptor from 1 to 9, at import and on every
// call (integrity class 6). The scan refuses it (os.write); past the scan,
// the engine's frames pipe is one of those descriptors, so the controller
// does read the forgeries, and must refuse the candidate's engine for
// them rather than take a forged answer or a forged time.
func TestForgedFramesGainNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	o := qualifyOptions(t, f, "kernels/fixtures/rmsnorm_forges_frames")
	req := o.Plan
	req.TreeDir = filepath.Join(f.Run, "trees")
	planned, err := plan.Run(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	spec := arms(f)[1].Spec
	spec.Tree = planned.CandidateTree
	out := screenServing(context.Background(), f.Iso, spec, o.Workload.PromptBatches[0], []string{"norm.rmsnorm"})
	t.Logf("serving: %s %s", out.Decision, out.Reason)
	if out.Decision != Fail || !strings.Contains(out.Reason, "C") {
		t.Fatalf("serving screen %s %q, want a FAIL of the candidate's engine", out.Decision, out.Reason)
	}
}

// longSmoke is the smoke workload with 48 new tokens a prompt: reads long
// enough for a noisy neighbour to show above the idle bound however loaded
// the machine.
func longSmoke(t *testing.T) *workload.Workload {
	t.Helper()
	w, diags := workload.Parse("long-smoke.hcl", []byte(strings.Replace(smokeWorkload, "max_new_tokens = 4", "max_new_tokens = 48", 1)))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	return w
}
