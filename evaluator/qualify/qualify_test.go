package qualify

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cacheon/engine/catalog"
	"github.com/cacheon/engine/catalog/catalogtest"
	"github.com/cacheon/engine/evaluator/engine/enginetest"
	"github.com/cacheon/engine/evaluator/evidence"
	"github.com/cacheon/engine/evaluator/lanes"
	"github.com/cacheon/engine/evaluator/prebuild"
	"github.com/cacheon/engine/evaluator/speed"
	"github.com/cacheon/engine/evaluator/verify"
	"github.com/cacheon/engine/internal/testtree"
	"github.com/cacheon/engine/kernels/contribution"
	"github.com/cacheon/engine/stacks/materialize"
	"github.com/cacheon/engine/stacks/plan"
	"github.com/cacheon/engine/stacks/stack"
)

// interpreter is the test interpreter, checked once for the package (in
// TestMain) rather than by every test that makes an engine fixture: the
// check is an interpreter start and a torch import.
var interpreter enginetest.Interpreter

func TestMain(m *testing.M) {
	interpreter = enginetest.CheckInterpreter()
	os.Exit(m.Run())
}

// newFixture is enginetest.New on the interpreter TestMain checked.
func newFixture(t *testing.T) enginetest.Fixture {
	t.Helper()
	return enginetest.NewWith(t, interpreter)
}

// qualifyOptions assembles the repository's incumbent (in a copy of the
// workspace) and qualifies candidate over it on the CPU lane.
func qualifyOptions(t *testing.T, f enginetest.Fixture, candidate string) Options {
	t.Helper()
	return qualifyOptionsOver(t, f, "stacks/incumbent.hcl", candidate)
}

// qualifyOptionsOver is qualifyOptions over the evaluation stack at
// stackFile (a path in the repository): stacks/demo.hcl's incumbent holds
// the deliberately slow rmsnorm (kernels/demo), so a correct or cheating
// candidate faster than it passes the speed stage on the CPU lane, and the
// stages after it get to decide.
func qualifyOptionsOver(t *testing.T, f enginetest.Fixture, stackFile, candidate string) Options {
	t.Helper()
	ws := testtree.Workspace(t, "../..", "catalog/targets.hcl", stackFile, "stacks/arena.json",
		"stacks/runtime.json", "stacks/substrate.json", "kernels/contributions", "kernels/demo", "kernels/fixtures")
	path := filepath.Join(ws, filepath.FromSlash(stackFile))
	sf, _, diags := stack.Load(path)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	payload := contribution.PayloadOptions{Closure: contribution.PythonClosure, CUDACheck: contribution.CUDAIncludeCheck, PatcherDigests: map[string]string{}}
	a, err := stack.Assemble(sf, stack.Sources{}, cat, payload)
	if err != nil {
		t.Fatal(err)
	}
	cpu, err := lanes.Plan(nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	store, err := evidence.Open(filepath.Join(t.TempDir(), "evidence"), 0)
	if err != nil {
		t.Fatal(err)
	}
	refTree := referenceTree(t, t.TempDir())
	return Options{
		Quality: QualityInputs{ReferenceTree: refTree, Calibration: smokeCalibration(t, f.ModelDigest, refTree)},
		Plan:    plan.Request{Incumbent: a, IncumbentPath: path, CandidateDir: filepath.Join(ws, filepath.FromSlash(candidate)), Materialize: materialize.Options{Catalog: cat, Payload: payload}},
		Model:   f.Model, ModelDigest: f.ModelDigest, Workload: smoke(t), Policy: testPolicy(), Store: store,
		RunDir: f.Run, Python: f.Python, Lanes: cpu, Isolation: f.Iso,
		// The ABI screen verifies under the small test catalog (package
		// catalogtest): the default's largest rmsnorm case was most of a
		// CPU qualification's time. The build screen, the engines and the
		// audit keep the default catalog.
		Verify:   verify.Options{Device: "cpu", DType: "float32", Python: f.Python, Timeout: 5 * time.Minute, Catalog: catalogtest.Small(t)},
		Progress: func(format string, args ...any) { t.Logf(format, args...) },
	}
}

// TestQualifyOnTheCPU runs the whole qualification of a real contribution
// over the repository's incumbent on the CPU lane: every screen, the v8
// speed stage, the report in the store, and a regrade that agrees.
func TestQualifyOnTheCPU(t *testing.T) {
	f := newFixture(t)
	o := qualifyOptions(t, f, "kernels/contributions/rmsnorm_torch")
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	// Every screen worker and engine of the whole qualification is gone.
	requireNoStrays(t, o.RunDir)
	r := res.Report
	var names []string
	for _, s := range r.Stages {
		names = append(names, s.Name+"="+string(s.Decision))
	}
	t.Logf("decision %s: %s; stages %v", r.Decision, r.Reason, names)
	want := []string{ScreenStatic, ScreenBuild, ScreenABI, ScreenGraph, ScreenServing, StageSpeed}
	if r.Speed != nil && r.Speed.Decision == Pass {
		want = append(want, StageAudit) // A audits every speed PASS
		if len(r.Stages) < len(want) || r.Stages[len(want)-1].Decision != Fail {
			want = append(want, StageQuality) // and T scores what A did not fail
		}
	}
	if len(r.Stages) != len(want) {
		t.Fatalf("stages %v, want %v", names, want)
	}
	for i, s := range r.Stages {
		if s.Name != want[i] {
			t.Fatalf("stage %d is %s, want %s", i, s.Name, want[i])
		}
		if i < 5 && s.Decision != Pass && s.Decision != NotApplicable {
			t.Fatalf("screen %s: %s %s", s.Name, s.Decision, s.Reason)
		}
	}
	if r.Speed == nil || r.Speed.Speedup == "" || r.Inputs.TargetID != "norm.rmsnorm" || len(r.Inputs.CandidateTree) != 64 {
		t.Fatalf("report %+v", r)
	}
	// The report in the store is the canonical JSON of the report.
	data, err := o.Store.Get(res.ReportRef)
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseReport(data)
	if err != nil {
		t.Fatal(err)
	}
	if err := Regrade(o.Store, back); err != nil {
		t.Fatalf("regrade: %v", err)
	}
	// The engines that waited while another was read stayed quiet.
	requireQuietRecords(t, o.Store, r.Speed)
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil || doc["schema"] != ReportSchema {
		t.Fatalf("stored report: %v %v", err, doc["schema"])
	}
	checkSettlementRecord(t, r)
	// The roofline floor is recorded with the controller's own reading of
	// the model's weights; the CPU lane knows no bandwidth ceiling, so it
	// was not applied, and the report says so.
	if rf := r.Speed.Roofline; rf == nil || rf.Applied || rf.WeightBytes <= 0 || rf.DecodeSteps != o.Workload.MaxNewTokens-1 || !strings.Contains(rf.Source, "not applied") {
		t.Fatalf("roofline %+v", r.Speed.Roofline)
	}
	page, err := HTML(o.Store, back)
	if err != nil {
		t.Fatal(err)
	}
	// rmsnorm_torch is hot-swappable: v7, B′ only when inconclusive.
	if r.Speed.Version != 7 {
		t.Fatalf("speed policy version %d for a hot-swappable candidate, want 7", r.Speed.Version)
	}
	for _, want := range []string{`id="rates"`, `data-role="C"`, `abbreviated_serving`, string(r.Decision)} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the HTML report lacks %s", want)
		}
	}

	// A reproduction of the report runs the same experiment with the lane
	// roles exchanged, and says which report it reproduces.
	again := o
	again.RunDir = filepath.Join(t.TempDir(), "reproduction")
	again.Reproduces = back
	rep, err := Run(context.Background(), again)
	if err != nil {
		t.Fatal(err)
	}
	requireNoStrays(t, again.RunDir)
	sum := sha256.Sum256(data)
	if rr := rep.Report; !rr.LanesExchanged || rr.Reproduces != hex.EncodeToString(sum[:]) || rr.Speed == nil || rr.Inputs.CandidateTree != r.Inputs.CandidateTree {
		t.Fatalf("reproduction %+v", rr)
	}
	if err := Regrade(o.Store, rep.Report); err != nil {
		t.Fatalf("regrade of the reproduction: %v", err)
	}
	// The reproduction is another attempt of another plan by another
	// authority (each draws its own audit secret), under its own selection.
	checkSettlementRecord(t, rep.Report)
	a, b := r.Attempt, rep.Report.Attempt
	if a.Authority == b.Authority || a.Plan == b.Plan || a.Digest == b.Digest || a.SelectionCommitment == b.SelectionCommitment ||
		a.SelectionSecretCommitment == b.SelectionSecretCommitment || a.AuditSecretCommitment == b.AuditSecretCommitment {
		t.Fatalf("the reproduction shares its attempt record with the first: %+v and %+v", a, b)
	}
	if !reflect.DeepEqual(r.Transition, rep.Report.Transition) {
		t.Fatalf("the reproduction planned transition %+v, the first %+v", rep.Report.Transition, r.Transition)
	}
	// A reproduction that plans another candidate is no reproduction:
	// NO_DECISION before any engine starts.
	other := qualifyOptions(t, f, "kernels/contributions/silu_and_mul_torch")
	other.RunDir = filepath.Join(t.TempDir(), "other")
	other.Reproduces = back
	bad, err := Run(context.Background(), other)
	if err != nil {
		t.Fatal(err)
	}
	last := bad.Report.Stages[len(bad.Report.Stages)-1]
	if bad.Report.Decision != NoDecision || last.Name != StageReproduction || !strings.Contains(last.Reason, "candidate content hash") || bad.Report.Speed != nil {
		t.Fatalf("a reproduction of another candidate: %s %+v", bad.Report.Decision, last)
	}
}

// TestQualifyStopsAtTheFirstFailingScreen: a candidate the static scan
// refuses never reaches a worker.
func TestQualifyStopsAtTheFirstFailingScreen(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	o := qualifyOptions(t, f, "kernels/fixtures/banned_import")
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	r := res.Report
	if r.Decision != Fail || len(r.Stages) != 1 || r.Stages[0].Name != ScreenStatic || r.Speed != nil {
		t.Fatalf("report %+v", r)
	}
	if entries, _ := os.ReadDir(filepath.Join(o.RunDir, "arms")); len(entries) != 0 {
		t.Fatalf("engines started for a candidate the static screen refused: %v", entries)
	}
}

// TestQualifyRunsANoDecisionScreenAgainAlone: the ABI screen runs beside
// the serving engine, and a NO_DECISION it reads there is never taken (a
// kernel in that engine could have crowded the validator's workers off
// the device): the serving engine is ended and the screen runs again
// alone. Here verify's interpreter is missing, so both runs are
// NO_DECISION, and the qualification stops at the ABI screen with its
// one entry and a note that says it ran twice. Under a v9 policy the
// speed stage's engines were starting beside the screens too: they are
// ended with the others, none outliving the qualification. Not parallel:
// its check that no process outlives the qualification would see other
// tests'.
func TestQualifyRunsANoDecisionScreenAgainAlone(t *testing.T) {
	f := newFixture(t)
	o := qualifyOptions(t, f, "kernels/contributions/rmsnorm_torch")
	o.Verify.Python = filepath.Join(t.TempDir(), "no-such-python")
	o.Policy.Version, o.Policy.Sets = speed.V9, 2
	r := runLeavingNothing(t, o)
	last := r.Stages[len(r.Stages)-1]
	if r.Decision != NoDecision || last.Name != ScreenABI || r.Stages[len(r.Stages)-2].Name != ScreenBuild {
		t.Fatalf("report %s: %+v", r.Decision, r.Stages)
	}
	again := 0
	for _, n := range r.Notes {
		if strings.Contains(n, "abi: NO_DECISION beside the serving and audit engines") && strings.HasSuffix(n, "ran again alone") {
			again++
		}
	}
	if again != 1 {
		t.Fatalf("notes %q: want one saying the ABI screen ran again alone", r.Notes)
	}
}

// TestQualifyEndsAtMaxQualificationSeconds: the policy's
// max_qualification_seconds is the whole qualification's deadline. Two
// seconds (below the smallest a policy file may say, so that the test is
// short) end it inside its screens: the stage under way is NO_DECISION,
// naming the limit, nothing after it runs, and no process outlives it.
// Not parallel: its check that no process is left would see other tests'.
func TestQualifyEndsAtMaxQualificationSeconds(t *testing.T) {
	f := newFixture(t)
	o := qualifyOptions(t, f, "kernels/contributions/rmsnorm_torch")
	o.Policy.MaxQualificationSeconds = 2
	r := runLeavingNothing(t, o)
	last := r.Stages[len(r.Stages)-1]
	if r.Decision != NoDecision || last.Decision != NoDecision || !strings.Contains(last.Reason, "interrupted: the qualification reached max_qualification_seconds (2)") {
		t.Fatalf("report %s %q: %+v", r.Decision, r.Reason, r.Stages)
	}
	for _, s := range r.Stages {
		if s.Name == StageSpeed || s.Name == StageQuality {
			t.Fatalf("stage %s ran after the deadline: %+v", s.Name, r.Stages)
		}
	}
	if err := Regrade(o.Store, r); err != nil {
		t.Fatalf("regrade: %v", err)
	}
}

func TestDefaultsAreValid(t *testing.T) {
	w, err := DefaultWorkload()
	if err != nil {
		t.Fatal(err)
	}
	if w.TimedBatches() < DefaultPolicy().MinWindows {
		t.Fatalf("the default workload has %d timed windows, the default policy needs %d", w.TimedBatches(), DefaultPolicy().MinWindows)
	}
	if err := DefaultPolicy().Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestQualifyPrebuildsACUDASourcesCandidate: a candidate whose row
// declares CUDA sources (host C++ for the CPU lane) is compiled once, with
// its engine tree, in the contained compiler child; the ABI screen and
// every engine load the sealed library, and the qualification runs to its
// speed stage under v8.
func TestQualifyPrebuildsACUDASourcesCandidate(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	if err := prebuild.Available(context.Background(), f.Python, "cpu", f.Iso.Unsafe); err != nil {
		if os.Getenv("CACHEON_REQUIRE_CXX_TORCH") != "" {
			t.Fatalf("a C++ toolchain for torch extensions is required here: %v", err)
		}
		t.Skipf("no C++ toolchain for torch extensions here: %v", err)
	}
	o := qualifyOptions(t, f, "kernels/contributions/rmsnorm_torch")
	o.Plan.CandidateDir = filepath.Join(filepath.Dir(filepath.Dir(o.Plan.CandidateDir)), "rmsnorm_cpp")
	testtree.Copy(t, filepath.Join("..", "prebuild", "testdata", "rmsnorm_cpp"), o.Plan.CandidateDir)
	// The bundle's rebuild.json names the build_cuda_ext step: the payload
	// binds it to the prebuild's own patcher (kernels/patchers).
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	r := res.Report
	for _, s := range r.Stages {
		t.Logf("%s: %s %s", s.Name, s.Decision, s.Reason)
		if s.Name != StageSpeed && s.Name != StageQuality && s.Decision != Pass && s.Decision != NotApplicable {
			t.Fatalf("screen %s: %s %s", s.Name, s.Decision, s.Reason)
		}
	}
	if r.Speed == nil || r.Speed.Version != 8 || r.Speed.Speedup == "" {
		t.Fatalf("no graded v8 speed stage: %+v", r)
	}
	back, err := ParseReport(mustGet(t, o.Store, res.ReportRef))
	if err != nil {
		t.Fatal(err)
	}
	if err := Regrade(o.Store, back); err != nil {
		t.Fatalf("regrade: %v", err)
	}
	prebuilt := false
	for _, n := range r.Notes {
		prebuilt = prebuilt || strings.HasPrefix(n, "prebuild: 1 librar(ies) of tree ")
	}
	if !prebuilt {
		t.Fatalf("the report notes no prebuild: %v", r.Notes)
	}
	// v8's engines started beside the screens: the speed stage began
	// before the ABI screen ended.
	abi, sp := stageNamed(t, r, ScreenABI), stageNamed(t, r, StageSpeed)
	if startOf(t, sp) >= startOf(t, abi)+secondsOf(t, abi) {
		t.Fatalf("the speed stage began at %s s, after the ABI screen (%s s from %s s)", sp.Start, abi.Seconds, abi.Start)
	}
}

// stageNamed is the report's stage of that name.
func stageNamed(t *testing.T, r *Report, name string) Stage {
	t.Helper()
	for _, s := range r.Stages {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no %s stage in %+v", name, r.Stages)
	return Stage{}
}

func startOf(t *testing.T, s Stage) float64   { return parseSeconds(t, s.Start) }
func secondsOf(t *testing.T, s Stage) float64 { return parseSeconds(t, s.Seconds) }

func parseSeconds(t *testing.T, v string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		t.Fatalf("stage time %q: %v", v, err)
	}
	return f
}

// requireQuietRecords reads a speed record's idle CPU evidence, logs it
// and checks that every waiting engine stayed within its bound.
func requireQuietRecords(t *testing.T, store *evidence.Store, s *Speed) {
	t.Helper()
	if s.IdleCPU == nil {
		t.Fatal("no idle CPU evidence")
	}
	var records []IdleCPU
	if err := json.Unmarshal(mustGet(t, store, *s.IdleCPU), &records); err != nil || len(records) == 0 {
		t.Fatalf("idle CPU evidence: %v, %d records", err, len(records))
	}
	for _, r := range records {
		t.Logf("idle %s during %s: %.3f CPU-s over %.3f s (bound %.3f)", r.Engine, r.Window, r.CPUSeconds, r.WallSeconds, IdleBound(r.WallSeconds))
		if r.CPUSeconds > IdleBound(r.WallSeconds) {
			t.Fatalf("an honest engine over the idle bound: %+v", r)
		}
	}
}

func mustGet(t *testing.T, s *evidence.Store, ref evidence.Ref) []byte {
	t.Helper()
	data, err := s.Get(ref)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// checkSettlementRecord checks what a report that reached its speed stage
// records for settlement: the attempt (its digests recomputing from the
// report), the transition of rmsnorm_torch over the incumbent's Triton
// entry, the audit record after a speed PASS, and no lane orientation on
// the CPU lane's one device.
func checkSettlementRecord(t *testing.T, r *Report) {
	t.Helper()
	a := r.Attempt
	if a == nil {
		t.Fatal("no attempt record")
	}
	for name, d := range map[string]string{"authority": a.Authority, "plan": a.Plan, "digest": a.Digest, "audit secret": a.AuditSecretCommitment,
		"selection commitment": a.SelectionCommitment, "selection secret": a.SelectionSecretCommitment} {
		if len(d) != 64 {
			t.Fatalf("attempt %s %q", name, d)
		}
	}
	if auth, _ := authority(r.Inputs.Controller, a.AuditSecretCommitment); auth != a.Authority {
		t.Fatalf("authority %s, recomputed %s", a.Authority, auth)
	}
	tr := r.Transition
	if tr == nil || len(tr.TargetSpec) != 64 || len(tr.Proposal) != 64 || len(tr.Prior) != 64 || tr.Prior == tr.Proposal ||
		!reflect.DeepEqual(tr.Members, []string{"norm.rmsnorm"}) || len(tr.Displaced) != 0 {
		t.Fatalf("transition %+v", tr)
	}
	if r.LaneOrientation != nil {
		t.Fatalf("a lane orientation on one shared device: %+v", r.LaneOrientation)
	}
	if r.Speed != nil && r.Speed.Decision == Pass {
		p := r.AuditPolicy
		if r.Audit == nil || len(r.AuditControl) != 64 || p == nil || len(p.ValidatorSeed) != 32 || !reflect.DeepEqual(p.ExpectedSlots, tr.Members) {
			t.Fatalf("audit record: evidence %v, control %q, policy %+v", r.Audit, r.AuditControl, p)
		}
		if r.Decision == Pass && (r.Quality == nil || len(r.Quality.SelectionReceipt) != 64) {
			t.Fatalf("a PASS without its selection receipt: %+v", r.Quality)
		}
	}
}
