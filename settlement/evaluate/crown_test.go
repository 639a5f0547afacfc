package evaluate

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cacheon/engine/catalog"
	"github.com/cacheon/engine/catalog/catalogtest"
	"github.com/cacheon/engine/evaluator/engine/enginetest"
	"github.com/cacheon/engine/evaluator/evidence"
	"github.com/cacheon/engine/evaluator/lanes"
	"github.com/cacheon/engine/evaluator/qualify"
	"github.com/cacheon/engine/evaluator/quality"
	"github.com/cacheon/engine/evaluator/verify"
	"github.com/cacheon/engine/internal/testtree"
	"github.com/cacheon/engine/settlement/apply"
	"github.com/cacheon/engine/settlement/apply/applytest"
	"github.com/cacheon/engine/settlement/ledger"
	"github.com/cacheon/engine/settlement/settle"
	"github.com/cacheon/engine/stacks/materialize"
	"github.com/cacheon/engine/stacks/plan"
	"github.com/cacheon/engine/stacks/stack"
)

// updateReports rewrites settlement/settle/testdata/cpu-*.report.json with
// the two reports this run's qualifications wrote, for the settle
// package's tests of FromReport and Pair over real reports.
var updateReports = flag.Bool("update", false, "record the crown test's two real reports in settlement/settle/testdata")

// slowWorkspace is a copy of the repository whose incumbent holds the
// demonstration arena's slow rmsnorm entry (kernels/demo/rmsnorm_slow:
// norm.rmsnorm computed right, 60 times over) in place of the Triton one,
// so that a candidate that computes it once is faster by far more than
// the CPU lane's noise and a PASS does not depend on the machine's load.
func slowWorkspace(t *testing.T) string {
	t.Helper()
	ws := testtree.Workspace(t, "../..", "catalog/targets.hcl", "stacks/incumbent.hcl", "stacks/reference.hcl", "stacks/arena.json",
		"stacks/runtime.json", "stacks/substrate.json", "kernels/contributions", "kernels/demo")
	inc := filepath.Join(ws, "stacks", "incumbent.hcl")
	src, err := os.ReadFile(inc)
	if err != nil {
		t.Fatal(err)
	}
	edited := bytes.Replace(src, []byte("//kernels/contributions:rmsnorm_triton"), []byte("//kernels/demo:rmsnorm_slow"), 1)
	if bytes.Equal(edited, src) {
		t.Fatal("the incumbent has no rmsnorm_triton entry to slow down")
	}
	_ = os.Chmod(inc, 0o644)
	if err := os.WriteFile(inc, edited, 0o644); err != nil {
		t.Fatal(err)
	}
	return ws
}

// TestRealQualificationsCrown takes a proposal through two real CPU
// qualifications (the second a reproduction on exchanged lanes, under
// its own audit and selection secrets) into the ledger, each passing
// attempt with its settlement view mapped from the report, and settles
// the pair into a crown: the stack the qualifications measured becomes
// the evaluation incumbent.
func TestRealQualificationsCrown(t *testing.T) {
	ctx := context.Background()
	f := enginetest.New(t)
	ws := slowWorkspace(t)
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	incPath := filepath.Join(ws, "stacks", "incumbent.hcl")
	sf, _, diags := stack.Load(incPath)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	assembled, err := stack.Assemble(sf, stack.Sources{}, cat, applytest.Payload)
	if err != nil {
		t.Fatal(err)
	}
	mopts := materialize.Options{Catalog: cat, Payload: applytest.Payload}
	req := plan.Request{Incumbent: assembled, IncumbentPath: incPath, Materialize: mopts}
	inc := req
	inc.TreeDir = t.TempDir()
	_, treeDigest, err := plan.Incumbent(ctx, inc)
	if err != nil {
		t.Fatal(err)
	}
	tree := treeDigest.String()
	fx := applytest.NewWithTree(t, ws, filepath.Join(t.TempDir(), "ledger.db"), tree)
	in := fx.Intake(t, "rmsnorm_torch", "5Fminer", 4100200)

	refTree := referenceTree(t, ws, cat)
	qcal, err := quality.DefaultCalibration()
	if err != nil {
		t.Fatal(err)
	}
	w, err := qualify.DefaultWorkload()
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
	// Settlement never crowns under the embedded uncalibrated policy. The
	// test's policy keeps its thresholds and names a calibration document
	// that says what they are for: a candidate several times faster than a
	// deliberately slowed incumbent, far beyond any CPU noise.
	policy := qualify.DefaultPolicy()
	calibration := sha256.Sum256([]byte(`{"lanes":"cpu","note":"test: the embedded thresholds, for a candidate several times faster than a slowed incumbent","rounds":[]}`))
	policy.CalibrationDigest = hex.EncodeToString(calibration[:])
	policy.CalibrationContextDigest = policy.CalibrationDigest
	runs := 0
	var reports [][]byte
	qualifier := func(ctx context.Context, dir string, prior *qualify.Report) (*qualify.Report, []byte, error) {
		runs++
		r := req
		r.CandidateDir = dir
		runDir := filepath.Join(f.Run, fmt.Sprintf("run%d", runs))
		if err := os.MkdirAll(runDir, 0o755); err != nil {
			return nil, nil, err
		}
		res, err := qualify.Run(ctx, qualify.Options{
			Plan: r, Model: f.Model, ModelDigest: f.ModelDigest, Workload: w, Policy: policy, Store: store,
			RunDir: runDir, Python: f.Python, Lanes: cpu, Isolation: f.Iso,
			Verify:     verify.Options{Device: "cpu", DType: "float32", Python: f.Python, Timeout: 5 * time.Minute, Catalog: catalogtest.Small(t)},
			Quality:    qualify.QualityInputs{ReferenceTree: refTree, Calibration: qcal},
			Controller: "controller", Reproduces: prior,
			Progress: func(format string, args ...any) { t.Logf(format, args...) },
		})
		if err != nil {
			return nil, nil, err
		}
		data, err := store.Get(res.ReportRef)
		if err != nil {
			return nil, nil, err
		}
		reports = append(reports, data)
		return res.Report, data, nil
	}
	res, err := Evaluate(ctx, fx.L, in.ID, Options{Qualify: qualifier, Intake: settle.Intake{Lane: settle.LaneRegistered}, WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != ledger.Qualified {
		t.Fatalf("proposal %s: %s; want qualified over the slowed incumbent", res.Status, res.Reason)
	}
	// Each passing attempt records the settlement view of its own report,
	// and each report regrades and maps to a valid qualification.
	var views []settle.Qualification
	for _, st := range res.Steps {
		if st.Attempt.Stage != ledger.StageQualification {
			continue
		}
		if !st.Settles || len(st.Missing) != 0 || len(st.Attempt.Settlement) == 0 {
			t.Fatalf("a passing attempt without its settlement view: %+v", st)
		}
		var q settle.Qualification
		if err := json.Unmarshal(st.Attempt.Settlement, &q); err != nil {
			t.Fatal(err)
		}
		if _, err := q.Validate(); err != nil {
			t.Fatalf("attempt %d: %v", st.Attempt.Seq, err)
		}
		if q.Report != st.Report || q.Hotkey != "5Fminer" || q.Arena != in.Proposal.ArenaDigest || !q.Audited() || q.LaneOrientation != nil {
			t.Fatalf("attempt %d: view %+v", st.Attempt.Seq, q)
		}
		views = append(views, q)
	}
	if len(views) != 2 || len(reports) != 2 {
		t.Fatalf("%d views of %d reports, want 2 of 2", len(views), len(reports))
	}
	for i, data := range reports {
		r, err := qualify.ParseReport(data)
		if err != nil {
			t.Fatal(err)
		}
		if err := qualify.Regrade(store, r); err != nil {
			t.Fatalf("report %d: regrade: %v", i, err)
		}
		q, err := settle.FromReport(data, settle.Intake{Lane: settle.LaneRegistered, Arena: views[i].Arena, Reservation: views[i].Reservation,
			Finalized: views[i].Finalized, Hotkey: views[i].Hotkey})
		if err != nil {
			t.Fatalf("report %d: %v", i, err)
		}
		if q.Proposal != in.Candidate.Proposal || q.TargetSpec != in.Candidate.TargetSpec || strings.Join(q.Members, ",") != strings.Join(in.Candidate.Members, ",") ||
			q.Transition.Prior == "" || q.IncumbentTree != tree || q.CandidateStack != in.Candidate.CandidateStack {
			t.Fatalf("report %d maps to %+v; the ledger planned %+v over tree %s", i, q, in.Candidate, tree)
		}
	}
	// The reproduction is independent: none of the seven digests shared,
	// another validator seed, another audit record.
	if _, err := settle.Pair(views[0], views[1]); err != nil {
		t.Fatalf("the two real qualifications do not pair: %v", err)
	}

	if *updateReports {
		for i, name := range []string{"cpu-first.report.json", "cpu-reproduction.report.json"} {
			if err := os.WriteFile(filepath.Join("..", "settle", "testdata", name), append(reports[i], '\n'), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}

	// Settlement crowns the pair.
	sr, err := apply.Settle(ctx, fx.L, fx.Options())
	if err != nil {
		t.Fatalf("Settle: %v", err)
	}
	if !sr.Committed || sr.Winner != in.ID {
		t.Fatalf("committed %v, winner %d, want proposal %d crowned", sr.Committed, sr.Winner, in.ID)
	}
	var types []string
	for _, e := range sr.Events {
		types = append(types, e.EventType)
	}
	if got := strings.Join(types, " "); got != "CROWN RETIREMENT ADOPTION STACK_TRANSITION" {
		t.Errorf("events %s", got)
	}
	cur, err := fx.L.CurrentStack(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if cur.StackDigest != views[0].CandidateStack || cur.TreeDigest != views[0].CandidateTree {
		t.Errorf("current stack %s (tree %s), want the measured candidate %s (tree %s)", cur.StackDigest, cur.TreeDigest, views[0].CandidateStack, views[0].CandidateTree)
	}
	// The crowned incumbent exported into the repository (for bazel build
	// //stacks:incumbent) materializes to the tree both qualifications
	// measured as their candidate.
	ex, err := apply.ExportWorkspace(ctx, fx.L, ws, applytest.Payload)
	if err != nil {
		t.Fatalf("export into the workspace: %v", err)
	}
	hcl, err := os.ReadFile(filepath.Join(ws, ex.StackFile))
	if err != nil {
		t.Fatal(err)
	}
	esf, diags := stack.Parse("incumbent.hcl", hcl)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	exported, err := stack.Assemble(esf, stack.Sources{Workspace: ws}, cat, applytest.Payload)
	if err != nil {
		t.Fatal(err)
	}
	if _, etree, err := plan.Incumbent(ctx, plan.Request{Incumbent: exported, Materialize: mopts, TreeDir: t.TempDir()}); err != nil || etree.String() != views[0].CandidateTree {
		t.Errorf("the exported incumbent materializes to %s (%v), the qualifications measured %s", etree, err, views[0].CandidateTree)
	}
	claims, err := fx.L.StandingClaims(ctx)
	if err != nil || len(claims) != 1 || claims[0].Hotkey != "5Fminer" || claims[0].SpeedupPPM <= 1_000_000 {
		t.Errorf("standing claims %+v (%v)", claims, err)
	}
}

// referenceTree materializes the repository's reference stack (no
// contribution): T's engine.
func referenceTree(t *testing.T, ws string, cat *catalog.Catalog) string {
	t.Helper()
	sf, _, diags := stack.Load(filepath.Join(ws, "stacks", "reference.hcl"))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	a, err := stack.Assemble(sf, stack.Sources{}, cat, applytest.Payload)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "reference")
	if _, err := materialize.Materialize(a.Manifest, func(string, stack.Ref) (string, error) { return "", nil }, out, materialize.Options{Catalog: cat, Payload: applytest.Payload}); err != nil {
		t.Fatal(err)
	}
	return out
}
