package qualify

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/cacheon/engine/evaluator/engine"
	"github.com/cacheon/engine/evaluator/evidence"
	"github.com/cacheon/engine/evaluator/speed"
)

// TestRegradeAgreesAndCatchesEdits publishes a real speed stage (the
// shared stock A/A run), re-grades its report from the store, then edits
// the report and the evidence one way at a time: each edit must be caught.
func TestRegradeAgreesAndCatchesEdits(t *testing.T) {
	ev := stockAAEvidence(t, newFixture(t))
	if ev.Grade == nil {
		t.Fatalf("no grade: %+v", ev.Outcome)
	}
	store, sp := publishedSpeed(t, ev)
	if sp.IdleCPU == nil {
		t.Fatal("no idle CPU evidence published")
	}
	noisyRecords, _ := json.Marshal(append(append([]IdleCPU{}, ev.Idle...), IdleCPU{Window: "B", Engine: "C", Candidate: true, WallSeconds: 1, CPUSeconds: 0.9}))
	noisy, err := store.Put(ArtifactIdleCPU, "application/json", "idle-cpu.v1", noisyRecords)
	if err != nil {
		t.Fatal(err)
	}
	policyDigest, _ := ev.Policy.Digest()
	report := func() *Report {
		sp := *sp // each report edits its own copy
		r := &Report{Schema: ReportSchema, Decision: ev.Decision, Reason: ev.Reason, Inputs: Inputs{Policy: policyDigest, Workload: strings.Repeat("e", 64), Model: "model"},
			Stages: []Stage{{Name: "speed", Decision: ev.Decision, Reason: ev.Reason}}, Speed: &sp,
			// Two lanes of their own devices: the speed evidence carries
			// their orientation.
			Lanes: []Lane{{Name: "baseline", Device: "cuda", GPUs: []string{"GPU-a"}}, {Name: "candidate", Device: "cuda", GPUs: []string{"GPU-b"}}}}
		o, err := orientationOf(r)
		if err != nil || o == nil {
			t.Fatalf("orientation %+v, %v", o, err)
		}
		r.LaneOrientation = o
		return r
	}
	if err := Regrade(store, report()); err != nil {
		t.Fatalf("regrade of an untouched report: %v", err)
	}
	// Another decision than the one graded, whichever that was (a loaded
	// machine's reads may well drift into NO_DECISION).
	flip := map[Decision]Decision{Pass: Fail, Fail: Pass, NoDecision: Pass}
	other := map[Decision]Decision{Pass: NoDecision, Fail: NoDecision, NoDecision: Fail}
	edits := []struct {
		name string
		edit func(r *Report)
		want error
	}{
		{"decision flipped", func(r *Report) {
			r.Decision = flip[r.Decision]
			r.Stages[0].Decision = flip[r.Stages[0].Decision]
			r.Speed.Decision = flip[r.Speed.Decision]
		}, ErrRegrade},
		{"speedup edited", func(r *Report) { r.Speed.Speedup = "1.5" }, ErrRegrade},
		{"aggregate edited", func(r *Report) { r.Decision = other[r.Decision] }, ErrRegrade},
		{"another policy named", func(r *Report) { r.Inputs.Policy = otherDigest(r.Inputs.Policy) }, ErrRegrade},
		{"reads missing", func(r *Report) { r.Speed.Reads.SHA256 = otherDigest(r.Speed.Reads.SHA256) }, evidence.ErrMissing},
		{"lanes exchanged under the same orientation", func(r *Report) { r.Lanes[0], r.Lanes[1] = r.Lanes[1], r.Lanes[0] }, ErrRegrade},
		{"orientation dropped", func(r *Report) { r.LaneOrientation = nil }, ErrRegrade},
		{"orientation under another control", func(r *Report) { r.LaneOrientation.Control = otherDigest(r.LaneOrientation.Control) }, ErrRegrade},
		{"an audit policy without audit evidence", func(r *Report) { r.AuditPolicy = &AuditPolicy{MinCalls: 1} }, ErrRegrade},
		{"idle CPU evidence missing", func(r *Report) { r.Speed.IdleCPU = &evidence.Ref{SHA256: otherDigest(sp.IdleCPU.SHA256)} }, evidence.ErrMissing},
		// Evidence of a noisy neighbour under the graded decision: the
		// stage should have ended at that read.
		{"a noisy neighbour in the idle evidence", func(r *Report) { r.Speed.IdleCPU = &noisy }, ErrRegrade},
	}
	for _, e := range edits {
		t.Run(e.name, func(t *testing.T) {
			r := report()
			e.edit(r)
			if err := Regrade(store, r); !errors.Is(err, e.want) {
				t.Fatalf("regrade: %v, want %v", err, e.want)
			}
		})
	}
	// The span the report records for the stage is held to the policy's
	// max_stage_seconds (600 here): at the limit the decision stands;
	// over it a PASS is NO_DECISION, so a report that kept its PASS does
	// not regrade and one that says NO_DECISION does. A FAIL or a
	// NO_DECISION stands either way.
	atLimit := report()
	atLimit.Stages[0].Seconds = "600"
	if err := Regrade(store, atLimit); err != nil {
		t.Fatalf("regrade of a stage at max_stage_seconds: %v", err)
	}
	over := report()
	over.Stages[0].Seconds = "600.5"
	err = Regrade(store, over)
	if ev.Decision != Pass {
		if err != nil {
			t.Fatalf("regrade of a %s over max_stage_seconds: %v", ev.Decision, err)
		}
	} else {
		if !errors.Is(err, ErrRegrade) || !strings.Contains(err.Error(), "NO_DECISION") {
			t.Fatalf("regrade of a PASS kept over max_stage_seconds: %v, want ErrRegrade grading NO_DECISION", err)
		}
		over.Decision, over.Stages[0].Decision, over.Speed.Decision = NoDecision, NoDecision, NoDecision
		if err := Regrade(store, over); err != nil {
			t.Fatalf("regrade of a NO_DECISION over max_stage_seconds: %v", err)
		}
	}
	// A forged PASS over the limit, whatever the reads graded: the
	// regrade refuses it unless the reads themselves FAIL.
	forged := report()
	forged.Stages[0].Seconds = "601"
	forged.Decision, forged.Stages[0].Decision, forged.Speed.Decision = Pass, Pass, Pass
	if err := Regrade(store, forged); !errors.Is(err, ErrRegrade) {
		t.Fatalf("regrade of a PASS over max_stage_seconds: %v, want ErrRegrade", err)
	}
	// The whole run's recorded seconds are held to max_qualification_seconds
	// (1800 here) the same way: at the limit the decision stands; over
	// it a PASS is NO_DECISION, however its stages read.
	whole := report()
	whole.Seconds = "1800"
	if err := Regrade(store, whole); err != nil {
		t.Fatalf("regrade of a qualification at max_qualification_seconds: %v", err)
	}
	whole = report()
	whole.Seconds = "1800.5"
	err = Regrade(store, whole)
	if ev.Decision != Pass {
		if err != nil {
			t.Fatalf("regrade of a %s over max_qualification_seconds: %v", ev.Decision, err)
		}
	} else {
		if !errors.Is(err, ErrRegrade) {
			t.Fatalf("regrade of a PASS kept over max_qualification_seconds: %v, want ErrRegrade", err)
		}
		whole.Decision = NoDecision
		if err := Regrade(store, whole); err != nil {
			t.Fatalf("regrade of a NO_DECISION over max_qualification_seconds: %v", err)
		}
	}
	whole = report()
	whole.Seconds = "1801"
	whole.Decision, whole.Stages[0].Decision, whole.Speed.Decision = Pass, Pass, Pass
	if err := Regrade(store, whole); !errors.Is(err, ErrRegrade) {
		t.Fatalf("regrade of a PASS over max_qualification_seconds: %v, want ErrRegrade", err)
	}
	whole = report()
	whole.Seconds = "long"
	if err := Regrade(store, whole); !errors.Is(err, ErrRegrade) {
		t.Fatalf("regrade of unreadable seconds: %v, want ErrRegrade", err)
	}
	// The stored reads themselves rewritten: the store refuses them.
	path := store.Path(sp.Reads.SHA256)
	os.Chmod(path, 0o644)
	os.WriteFile(path, []byte(`{"reads":[]}`), 0o444)
	if err := Regrade(store, report()); !errors.Is(err, evidence.ErrCorrupt) {
		t.Fatalf("regrade over rewritten reads: %v, want ErrCorrupt", err)
	}
}

// otherDigest is d with its first hex digit changed: always a different
// digest, whatever d starts with.
func otherDigest(d string) string {
	if d[0] == '0' {
		return "1" + d[1:]
	}
	return "0" + d[1:]
}

// TestReportKeys pins the report's keys: a key added, renamed or dropped
// changes the format (ReportSchema) and what settlement reads.
func TestReportKeys(t *testing.T) {
	keys := func(v any) []string {
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatal(err)
		}
		var out []string
		for k := range doc {
			out = append(out, k)
		}
		sort.Strings(out)
		return out
	}
	for _, c := range []struct {
		name string
		v    any
		want []string
	}{
		{"report", Report{Audit: &evidence.Ref{}, Quality: &Quality{}}, []string{"attempt", "audit", "audit_control", "audit_policy", "decision", "inputs",
			"isolation", "lane_orientation", "lanes", "lanes_exchanged", "notes", "quality", "reason", "reproduces", "schema", "seconds", "speed", "stages", "started", "transition"}},
		{"attempt", Attempt{}, []string{"audit_secret_commitment", "authority", "digest", "plan", "selection_commitment", "selection_secret_commitment"}},
		{"transition", Transition{}, []string{"displaced", "members", "prior", "proposal", "target_spec"}},
		{"audit policy", AuditPolicy{}, []string{"expected_slots", "min_calls", "sample_rate_ppm", "tp_size", "validator_seed"}},
		{"lane orientation", LaneOrientation{}, []string{"baseline_lane", "candidate_lane", "control", "speed_policy"}},
		{"quality", Quality{}, []string{"decision", "evidence", "reason", "selection_commitment", "selection_receipt"}},
		// idle_cpu is omitted when absent, so a report from before the
		// noisy-neighbour check keeps its canonical bytes and its address.
		{"speed", Speed{IdleCPU: &evidence.Ref{}}, []string{"batches", "decision", "idle_cpu", "lane_samples", "policy", "policy_version", "reads", "reason", "speedup", "swaps"}},
		{"speed before the idle check", Speed{}, []string{"batches", "decision", "lane_samples", "policy", "policy_version", "reads", "reason", "speedup", "swaps"}},
		// set_aside is omitted when the first read set decided, so a report
		// from before rereads keeps its canonical bytes.
		{"speed with a set-aside read set", Speed{IdleCPU: &evidence.Ref{}, SetAside: &SetAsideRecord{}},
			[]string{"batches", "decision", "idle_cpu", "lane_samples", "policy", "policy_version", "reads", "reason", "set_aside", "speedup", "swaps"}},
		{"set aside", SetAsideRecord{}, []string{"lane_samples", "reads", "reason"}},
		// left_running is omitted when no thread ran between batches, so a
		// batch from before the check keeps its canonical bytes.
		{"batch", Batch{}, []string{"engine_seconds", "index", "output", "phase", "prefill_engine_seconds", "prefill_seconds", "seconds", "tokens"}},
		{"batch with a thread left running", Batch{LeftRunning: []engine.LeftRunning{{}}},
			[]string{"engine_seconds", "index", "left_running", "output", "phase", "prefill_engine_seconds", "prefill_seconds", "seconds", "tokens"}},
	} {
		if got := keys(c.v); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s keys %v, want %v", c.name, got, c.want)
		}
	}
	if ReportSchema != "cacheon.qualification-report.v2" {
		t.Errorf("report schema %s", ReportSchema)
	}
}

// TestDecidedBy: the stage a report's decision came from, the one finish
// names in its reason, so that a reader can tell a speed verdict from a
// correctness one.
func TestDecidedBy(t *testing.T) {
	st := func(name string, d Decision) Stage { return Stage{Name: name, Decision: d} }
	screens := []Stage{st(ScreenStatic, Pass), st(ScreenBuild, Pass), st(ScreenABI, Pass), st(ScreenGraph, NotApplicable), st(ScreenServing, Pass)}
	with := func(more ...Stage) []Stage { return append(append([]Stage(nil), screens...), more...) }
	for _, c := range []struct {
		name     string
		decision Decision
		stages   []Stage
		want     string
	}{
		{"a pass names no stage", Pass, with(st(StageSpeed, Pass), st(StageAudit, Pass), st(StageQuality, Pass)), ""},
		{"a screen's fail", Fail, []Stage{st(ScreenStatic, Pass), st(ScreenBuild, Pass), st(ScreenABI, Fail)}, ScreenABI},
		{"the speed stage's fail", Fail, with(st(StageSpeed, Fail)), StageSpeed},
		{"the audit's fail after a speed pass", Fail, with(st(StageSpeed, Pass), st(StageAudit, Fail)), StageAudit},
		{"quality's fail", Fail, with(st(StageSpeed, Pass), st(StageAudit, Pass), st(StageQuality, Fail)), StageQuality},
		{"a fail outranks an earlier no decision", Fail, with(st(StageSpeed, NoDecision), st(StageQuality, Fail)), StageQuality},
		{"the first no decision", NoDecision, with(st(StageSpeed, NoDecision), st(StageQuality, NoDecision)), StageSpeed},
		{"no stage at all", NoDecision, nil, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := &Report{Decision: c.decision, Stages: c.stages}
			if got := r.DecidedBy(); got != c.want {
				t.Errorf("DecidedBy %q, want %q", got, c.want)
			}
		})
	}
}

// TestSpeedV9OnTheCPU runs the version 9 schedule with two sets and the
// same stock tree on every arm (an A/A run): six engine processes of
// their own, read B, C, B′, B, C, B′, each watched by the other five
// while it is timed, graded on the mean of the two sets' speedups; its
// published evidence re-grades, and a report that hides one read's idle
// records does not.
func TestSpeedV9OnTheCPU(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	p := testPolicy()
	p.Version, p.Sets = speed.V9, 2
	a := setArms(arms(f), p.Sets)
	ev := runSpeedSets(context.Background(), f.Iso, a, smoke(t), p, nil, 0)
	if ev.Grade == nil {
		t.Fatalf("no grade: %+v", ev.Outcome)
	}
	var roles []string
	for _, r := range ev.Reads {
		roles = append(roles, string(r.Role))
	}
	if got := strings.Join(roles, " "); got != "B C B_prime B C B_prime" {
		t.Fatalf("read order %s", got)
	}
	if len(ev.Grade.SetSpeedups) != 2 || ev.Grade.Reason != speed.ReasonMeanFaster && ev.Grade.Reason != speed.ReasonMeanNotFaster && ev.Grade.Reason != speed.ReasonConditioningRegression {
		t.Fatalf("grade %+v", ev.Grade)
	}
	// Each engine is a process of its own, in a work directory of its own.
	for _, dir := range []string{"B", "B-set2", "C-set2", "B_prime-set2"} {
		if _, err := os.Stat(filepath.Join(f.Run, "arms", dir)); err != nil {
			t.Errorf("arm work directory %s: %v", dir, err)
		}
	}
	for _, r := range []speed.Role{speed.B, speed.C, speed.BPrime} {
		if n := len(ev.Batches[r]); n != 12 {
			t.Errorf("%s served %d batches over two engines, want 12", r, n)
		}
	}
	requireQuietNeighbours(t, ev, 6*5)
	t.Logf("A/A under v9 on the CPU: %s %s (set speedups %v)", ev.Decision, ev.Reason, ev.Grade.SetSpeedups)

	store, rep := speedOnlyReport(t, ev)
	if err := Regrade(store, rep); err != nil {
		t.Fatalf("regrade of the v9 stage: %v", err)
	}
	sp := rep.Speed
	hidden, _ := json.Marshal(ev.Idle[:len(ev.Idle)-5])
	ref, err := store.Put(ArtifactIdleCPU, "application/json", "idle-cpu.v1", hidden)
	if err != nil {
		t.Fatal(err)
	}
	sp.IdleCPU = &ref
	if err := Regrade(store, rep); !errors.Is(err, ErrRegrade) || !strings.Contains(err.Error(), "idle records show 5 reads") {
		t.Fatalf("a read's idle records hidden: %v", err)
	}
}
