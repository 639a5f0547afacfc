package qualify

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cacheon/engine/evaluator/engine"
	"github.com/cacheon/engine/evaluator/engine/enginetest"
	"github.com/cacheon/engine/evaluator/speed"
	"github.com/cacheon/engine/evaluator/workload"
)

func arms(f enginetest.Fixture) []Arm {
	var arms []Arm
	for _, r := range []speed.Role{speed.B, speed.C, speed.BPrime} {
		arms = append(arms, Arm{Role: r, Candidate: r == speed.C, Spec: engine.Spec{Python: f.Python, Root: f.Root, Tree: f.Tree,
			Model: f.Model, Device: "cpu", WorkDir: armDir(f.Run, r), StartTimeout: 3 * time.Minute, BatchTimeout: time.Minute}})
	}
	return arms
}

const smokeWorkload = `
workload "cpu-smoke" {
  max_new_tokens = 4
  temperature    = 0
  warmup         = 2
  conditioning   = 1
  engine {
    tensor_parallel = 1
    cuda_graphs     = false
  }
  prompts {
    seed       = 1
    batches    = 6
    batch_size = 2
    prompt_len = 8
    vocab_size = 64
  }
}
`

func smoke(t *testing.T) *workload.Workload {
	w, diags := workload.Parse("smoke.hcl", []byte(smokeWorkload))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	return w
}

func testPolicy() speed.Policy {
	return speed.Policy{Version: speed.V8, MinMargin: 0.005, NoiseMultiplier: 2, MaxNoise: 0.02, MinWindows: 3,
		MaxWindowScatter: 0.25, MaxConditioningSlowdown: 2, MaxStageSeconds: 600, MaxQualificationSeconds: 1800,
		CalibrationDigest: strings.Repeat("a", 64), CalibrationContextDigest: strings.Repeat("b", 64)}
}

// stockAA is one A/A run of the v8 speed stage (stock engines on all three
// arms, the smoke workload, the test policy, no lane samples), made by the
// first test that asks for it and shared with the others: starting and
// warming three engines is most of such a test's time.
// TestSpeedV8OnTheCPU checks the run itself, TestRegradeAgreesAndCatchesEdits
// regrades what it publishes and TestQualityStageOnTheCPU scores its
// trajectories; each only reads it (the quality test edits copies).
var stockAA struct {
	mu sync.Mutex
	ev *SpeedEvidence
}

// stockAAEvidence is the shared A/A run, made on f's engines when no test
// has made it yet. Whatever it decided is kept: a run without a grade fails
// every test that needs one, as it did when each made its own.
func stockAAEvidence(t *testing.T, f enginetest.Fixture) *SpeedEvidence {
	t.Helper()
	stockAA.mu.Lock()
	defer stockAA.mu.Unlock()
	if stockAA.ev == nil {
		stockAA.ev = runSpeedSets(context.Background(), f.Iso, arms(f), smoke(t), testPolicy(), nil, 0)
	}
	return stockAA.ev
}

// TestSpeedV8OnTheCPU runs the three-engine schedule with the same stock
// tree on every arm (an A/A run): it must take three well-formed reads and
// grade them, and the same engine cannot prove itself faster than itself
// by the margin except by noise the grade accounts for.
func TestSpeedV8OnTheCPU(t *testing.T) {
	ev := stockAAEvidence(t, newFixture(t))
	if ev.Grade == nil {
		t.Fatalf("no grade: %+v", ev.Outcome)
	}
	if len(ev.Reads) != 3 || len(ev.Reads[0].Windows) != 4 {
		t.Fatalf("reads %+v", ev.Reads)
	}
	for _, r := range []speed.Role{speed.B, speed.C, speed.BPrime} {
		if n := len(ev.Batches[r]); n != 6 {
			t.Errorf("%s served %d batches, want 6", r, n)
		}
	}
	// Greedy decoding of one stock engine: every arm returns the same tokens.
	for i := range ev.Batches[speed.B] {
		if !equalTokens(ev.Batches[speed.B][i].Output, ev.Batches[speed.C][i].Output) {
			t.Fatalf("batch %d: B and C disagree on stock engines", i)
		}
	}
	// While each arm was timed the other two waited, within the idle
	// bound: honest engines are quiet neighbours.
	requireQuietNeighbours(t, ev, 6)
	t.Logf("A/A on the CPU: %s %s", ev.Decision, ev.Reason)
}

// requireQuietNeighbours checks that the speed stage recorded n idle
// engines' CPU times, every one within its bound, and logs them.
func requireQuietNeighbours(t *testing.T, ev *SpeedEvidence, n int) {
	t.Helper()
	if len(ev.Idle) != n {
		t.Fatalf("%d idle records %+v, want %d", len(ev.Idle), ev.Idle, n)
	}
	for _, r := range ev.Idle {
		t.Logf("idle %s during %s: %.3f CPU-s over %.3f s (bound %.3f)", r.Engine, r.Window, r.CPUSeconds, r.WallSeconds, IdleBound(r.WallSeconds))
		if r.CPUSeconds < 0 || r.CPUSeconds > IdleBound(r.WallSeconds) || r.WallSeconds <= 0 {
			t.Fatalf("idle record %+v", r)
		}
	}
}

func equalTokens(a, b [][]int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if len(a[i]) != len(b[i]) {
			return false
		}
		for j := range a[i] {
			if a[i][j] != b[i][j] {
				return false
			}
		}
	}
	return true
}

// TestSpeedFaultsAreAttributed: the candidate's engine misbehaving is its
// FAIL; the incumbent's is NO_DECISION.
func TestSpeedFaultsAreAttributed(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	forged := f.HostileRoot(t, "forged", enginetest.Prelude+enginetest.ReadyFrame+`def d(r):
    time.sleep(3.0)
    send({"id": r["id"], "calls": {}, "tokens": [[1]*r["max_new_tokens"] for _ in r["prompts"]], "seconds": 0.0001})
serve(d)
`)
	for _, c := range []struct {
		role speed.Role
		want Decision
	}{{speed.C, Fail}, {speed.B, NoDecision}} {
		t.Run(string(c.role), func(t *testing.T) {
			t.Parallel()
			arms := arms(f)
			for i := range arms {
				arms[i].Spec.WorkDir = filepath.Join(f.Run, string(c.role), string(arms[i].Role))
				if arms[i].Role == c.role {
					arms[i].Spec.Root = forged
				}
			}
			ev := runSpeedSets(context.Background(), f.Iso, arms, smoke(t), testPolicy(), nil, 0)
			if ev.Decision != c.want || !strings.Contains(ev.Reason, "forged_timing") {
				t.Fatalf("%s forging its timer: %s %s, want %s for forged_timing", c.role, ev.Decision, ev.Reason, c.want)
			}
		})
	}
}

// TestOverStage: a speed stage's span over max_stage_seconds makes it
// NO_DECISION, except a FAIL; at the limit, or with no limit, the outcome
// stands.
func TestOverStage(t *testing.T) {
	t.Parallel()
	p := testPolicy() // max_stage_seconds 600
	unlimited := p
	unlimited.MaxStageSeconds = 0
	pass, fail, none := Outcome{Pass, "proven_faster"}, Outcome{Fail, "below_fail_limit"}, Outcome{NoDecision, "stock drift"}
	for _, c := range []struct {
		name    string
		p       speed.Policy
		seconds float64
		out     Outcome
		want    Decision
		over    bool
	}{
		{"a PASS inside the limit", p, 42, pass, Pass, false},
		{"a PASS at the limit", p, 600, pass, Pass, false},
		{"a PASS over the limit", p, 600.001, pass, NoDecision, true},
		{"a NO_DECISION over the limit", p, 900, none, NoDecision, true},
		{"a FAIL over the limit", p, 900, fail, Fail, false},
		{"no limit", unlimited, 1e6, pass, Pass, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := overStage(c.p, c.seconds, c.out)
			if got.Decision != c.want || strings.Contains(got.Reason, "over max_stage_seconds") != c.over {
				t.Fatalf("overStage(%g s, %s) = %s %q, want %s (over the limit: %v)", c.seconds, c.out.Decision, got.Decision, got.Reason, c.want, c.over)
			}
		})
	}
}

// TestOverQualification: a whole qualification's seconds over
// max_qualification_seconds make its PASS NO_DECISION; a FAIL and a
// NO_DECISION stand, and a policy without the limit bounds nothing.
func TestOverQualification(t *testing.T) {
	t.Parallel()
	p := testPolicy() // max_qualification_seconds 1800
	unlimited := p
	unlimited.MaxQualificationSeconds = 0
	for _, c := range []struct {
		name    string
		p       speed.Policy
		seconds float64
		d, want Decision
	}{
		{"a PASS inside the limit", p, 44.3, Pass, Pass},
		{"a PASS at the limit", p, 1800, Pass, Pass},
		{"a PASS over the limit", p, 1800.001, Pass, NoDecision},
		{"a NO_DECISION over the limit", p, 2400, NoDecision, NoDecision},
		{"a FAIL over the limit", p, 2400, Fail, Fail},
		{"no limit", unlimited, 1e6, Pass, Pass},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, why := overQualification(c.p, c.seconds, c.d)
			changed := got != c.d
			if got != c.want || (why != "") != changed || (changed && !strings.Contains(why, "over max_qualification_seconds (1800)")) {
				t.Fatalf("overQualification(%g s, %s) = %s %q, want %s", c.seconds, c.d, got, why, c.want)
			}
		})
	}
}

// TestSpeedEnginesClosedInTheirStart: engines a qualification closes
// while they start (a screen stopped it, or it was interrupted) are killed
// and leave no process; their read is NO_DECISION, never a candidate's
// FAIL, whichever engine the kill caught; a second close does nothing.
// Not parallel: its check that no process is left would see other
// tests'.
func TestSpeedEnginesClosedInTheirStart(t *testing.T) {
	f := newFixture(t)
	s := startSpeedEngines(context.Background(), f.Iso, arms(f), smoke(t), testPolicy())
	time.Sleep(500 * time.Millisecond)
	s.close()
	s.close()
	requireNoStrays(t, f.Run)
	ev := s.read(context.Background(), smoke(t), testPolicy(), nil, 0)
	if ev.Decision != NoDecision || len(ev.Reads) != 0 {
		t.Fatalf("engines closed in their start read %s %q with %d reads, want NO_DECISION and none", ev.Decision, ev.Reason, len(ev.Reads))
	}
}

// TestSpeedV7OnTheCPU runs the hot-swap schedule with the stock tree as
// both trees (an A/A run): two resident engines, B after a stock→stock
// swap, C after the "candidate" swap and its restoration, B′ exactly when
// the two-leg limits were inconclusive, and the evidence says so.
func TestSpeedV7OnTheCPU(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a := arms(f)
	p := testPolicy()
	p.Version = speed.V7
	ev := runSpeedV7(context.Background(), f.Iso, Resident{Baseline: a[0].Spec, Candidate: a[1].Spec, IncumbentTree: f.Tree, CandidateTree: f.Tree},
		smoke(t), p, nil)
	if ev.Grade == nil {
		t.Fatalf("no grade: %+v", ev.Outcome)
	}
	// B and C, and B′ only when the two legs did not decide.
	clear := ev.Grade.Speedup < ev.Grade.FailBelow || ev.Grade.Speedup >= ev.Grade.PassAt || ev.Grade.Reason == speed.ReasonConditioningRegression
	if want := map[bool]int{true: 2, false: 3}[clear]; len(ev.Reads) != want {
		t.Fatalf("%d reads for C/B %v between limits %v and %v, want %d", len(ev.Reads), ev.Grade.Speedup, ev.Grade.FailBelow, ev.Grade.PassAt, want)
	}
	var swaps []string
	for _, s := range ev.Swaps {
		swaps = append(swaps, string(s.Role)+":"+s.Lane+":"+s.Tree)
	}
	// B′ is read only when inconclusive; either way the baseline engine
	// swaps once more, to read B′ or to serve the untimed stock control
	// the pristine reference needs.
	set := []string{"B:baseline:incumbent", "C:candidate:candidate", "restore:candidate:incumbent", "B_prime:baseline:incumbent"}
	want, sets := set, 1
	if ev.SetAside != nil {
		// A loaded host drifted B and B′ apart, and the set was read again
		// (TestSpeedV7ReadsASpoiledSetAgain checks that rule); the set
		// aside had read all three.
		want, sets = append(append([]string{}, set...), set...), 2
		t.Logf("read again: %s", ev.SetAside.Reason)
	}
	if bp := ev.Batches[speed.BPrime]; len(ev.Reads) == 2 {
		if len(bp) != 6*sets {
			t.Fatalf("%d B′ batches, want 6 for each of %d set(s)", len(bp), sets)
		}
		for _, b := range bp[len(bp)-6:] {
			if b.Phase != "control" {
				t.Fatalf("a B′ batch of phase %q after a clear decision, want control", b.Phase)
			}
		}
	}
	if strings.Join(swaps, " ") != strings.Join(want, " ") {
		t.Fatalf("swaps %v, want %v", swaps, want)
	}
	// Each read starts as warm as the others: the warm-up batches run again
	// after every swap.
	if n := len(ev.Batches[speed.C]); n != 6*sets {
		t.Fatalf("C served %d batches after its swaps, want 6 for each of %d set(s)", n, sets)
	}
	// A regrade of the evidence agrees.
	g, err := speed.GradeReads(p, ev.Reads, speed.Options{})
	if err != nil || g.Decision != ev.Grade.Decision {
		t.Fatalf("regrade %v %v, live %v", g, err, ev.Grade.Decision)
	}
	// One engine waits through each read, and through the stock control.
	requireQuietNeighbours(t, ev, 3*sets)
	t.Logf("A/A under v7 on the CPU: %s %s", ev.Decision, ev.Reason)
}

// TestSpeedV7ReadsASpoiledSetAgain: under v7 too, a read set the lanes
// spoiled (here a device that reports a thermal slowdown around every
// read) is set aside and read once more in the same resident engines;
// spoiled again, the stage is NO_DECISION. The report's set-aside record
// re-grades, and its swaps count the two sets: a report that hides the
// set-aside set is caught.
func TestSpeedV7ReadsASpoiledSetAgain(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a := arms(f)
	for i := range a {
		a[i].Spec.WorkDir = filepath.Join(f.Run, "v7-reread", string(a[i].Role))
	}
	p := testPolicy()
	p.Version = speed.V7
	r, _ := smi(t, "0x0000000000000040")
	ev := runSpeedV7(context.Background(), f.Iso, Resident{Baseline: a[0].Spec, Candidate: a[1].Spec, IncumbentTree: f.Tree, CandidateTree: f.Tree},
		smoke(t), p, r.Read)
	if ev.Decision != NoDecision || !strings.Contains(ev.Reason, "lane drift") {
		t.Fatalf("%s %s, want NO_DECISION for lane drift", ev.Decision, ev.Reason)
	}
	if ev.SetAside == nil || !strings.Contains(ev.SetAside.Reason, "lane drift") || len(ev.SetAside.Reads) < 2 ||
		len(ev.SetAside.Samples) != len(ev.SetAside.Reads) || len(ev.Samples) != len(ev.Reads) {
		t.Fatalf("set aside %+v, samples %d for %d reads", ev.SetAside, len(ev.Samples), len(ev.Reads))
	}
	var swaps []string
	for _, s := range ev.Swaps {
		swaps = append(swaps, string(s.Role)+":"+s.Lane)
	}
	if got := strings.Count(strings.Join(swaps, " "), "B:baseline"); got != 2 {
		t.Fatalf("swaps %v: %d read sets, want 2", swaps, got)
	}
	store, rep := speedOnlyReport(t, ev)
	if err := Regrade(store, rep); err != nil {
		t.Fatalf("regrade: %v", err)
	}
	hidden := *rep
	spHidden := *rep.Speed
	spHidden.SetAside = nil
	hidden.Speed = &spHidden
	if err := Regrade(store, &hidden); !errors.Is(err, ErrRegrade) {
		t.Fatalf("regrade of a report that hid its set-aside set: %v, want ErrRegrade", err)
	}
}

// TestSpeedOneEngineOnTheCPU: B, C and B′ are read in one resident engine
// that swaps before every read, and the three reads are graded together.
func TestSpeedOneEngineOnTheCPU(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a := arms(f)
	a[1].Candidate = false // the same tree on every arm: a stock round
	ev := runSpeedOneEngine(context.Background(), f.Iso, a, smoke(t), testPolicy(), nil)
	if ev.Grade == nil {
		t.Fatalf("no grade: %+v", ev.Outcome)
	}
	if len(ev.Reads) != 3 || ev.Reads[0].Role != speed.B || ev.Reads[1].Role != speed.C || ev.Reads[2].Role != speed.BPrime {
		t.Fatalf("reads %+v, want B, C and B′", ev.Reads)
	}
	var swaps []string
	for _, s := range ev.Swaps {
		swaps = append(swaps, string(s.Role)+":"+s.Lane+":"+s.Tree)
	}
	if want := "B:shared:incumbent C:shared:incumbent B_prime:shared:incumbent"; strings.Join(swaps, " ") != want {
		t.Fatalf("swaps %v, want %s", swaps, want)
	}
	// Each read starts as warm as the others: the warm-up batches run
	// again after every swap (B's also count the first warm-up).
	for role, want := range map[speed.Role]int{speed.C: 6, speed.BPrime: 6, speed.B: 7} {
		if n := len(ev.Batches[role]); n != want {
			t.Fatalf("%s served %d batches, want %d", role, n, want)
		}
	}
	// One process for every read: no engine waits, and each role names it.
	if len(ev.Idle) != 0 || len(ev.Ready) != 3 || ev.Ready[speed.C].Substrate != ev.Ready[speed.B].Substrate {
		t.Fatalf("idle %+v, ready %+v", ev.Idle, ev.Ready)
	}
	if g, err := speed.GradeReads(testPolicy(), ev.Reads, speed.Options{}); err != nil || g.Decision != ev.Grade.Decision {
		t.Fatalf("regrade %v %v, live %v", g, err, ev.Grade.Decision)
	}
}

// TestScheduled: the policy version a candidate's speed stage grades
// under. v7 and v8 follow whether the candidate can be hot-swapped; v9
// reads fresh engine processes in every set, whatever the candidate.
func TestScheduled(t *testing.T) {
	for _, c := range []struct {
		given     int
		swappable bool
		want      int
	}{
		{speed.V8, true, speed.V7},
		{speed.V8, false, speed.V8},
		{speed.V7, false, speed.V8},
		{speed.V9, true, speed.V9},
		{speed.V9, false, speed.V9},
	} {
		p := testPolicy()
		p.Version = c.given
		if got := scheduled(p, c.swappable).Version; got != c.want {
			t.Errorf("v%d, swappable %v: scheduled v%d, want v%d", c.given, c.swappable, got, c.want)
		}
	}
}
