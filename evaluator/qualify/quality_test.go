package qualify

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cacheon/engine/catalog"
	"github.com/cacheon/engine/evaluator/evidence"
	"github.com/cacheon/engine/evaluator/lanes"
	"github.com/cacheon/engine/evaluator/quality"
	"github.com/cacheon/engine/evaluator/speed"
	"github.com/cacheon/engine/internal/identity"
	"github.com/cacheon/engine/internal/testtree"
	"github.com/cacheon/engine/kernels/contribution"
	"github.com/cacheon/engine/stacks/materialize"
	"github.com/cacheon/engine/stacks/plan"
	"github.com/cacheon/engine/stacks/stack"
)

// referenceTree materializes the repository's reference stack (in a
// copy of the workspace) under dir.
// smokeCalibration is the embedded CPU calibration's thresholds for the
// smoke workload: T applies a calibration only to the model, workload and
// reference tree it names, and the embedded one names the default
// workload.
func smokeCalibration(t *testing.T, modelDigest, refTree string) *quality.Calibration {
	t.Helper()
	cal, err := quality.DefaultCalibration()
	if err != nil {
		t.Fatal(err)
	}
	wd, err := smoke(t).Digest()
	if err != nil {
		t.Fatal(err)
	}
	tree, err := materialize.Verify(refTree)
	if err != nil {
		t.Fatal(err)
	}
	cal.Model, cal.Workload, cal.ReferenceTree = modelDigest, wd, tree.TreeDigest.String()
	return cal
}

func referenceTree(t *testing.T, dir string) string {
	t.Helper()
	ws := testtree.Workspace(t, "../..", "catalog/targets.hcl", "stacks/reference.hcl", "stacks/arena.json",
		"stacks/runtime.json", "stacks/substrate.json")
	sf, _, diags := stack.Load(filepath.Join(ws, "stacks", "reference.hcl"))
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
	out := filepath.Join(dir, "reference")
	if _, err := materialize.Materialize(a.Manifest, func(string, stack.Ref) (string, error) { return "", nil }, out, materialize.Options{Catalog: cat, Payload: payload}); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestQualityStageOnTheCPU takes a v8 speed stage A/A on the CPU (the
// shared stock run) and runs T over its retained trajectories, with the
// selection sealed before T reads any of them: the stock candidate passes
// and its evidence re-grades; trajectories the speed stage did not keep in
// full decide nothing.
func TestQualityStageOnTheCPU(t *testing.T) {
	f := newFixture(t)
	cpu, err := lanes.Plan(nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	store, err := evidence.Open(filepath.Join(t.TempDir(), "evidence"), 0)
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Model: f.Model, ModelDigest: f.ModelDigest, Workload: smoke(t), Store: store, RunDir: f.Run, Python: f.Python, Lanes: cpu, Isolation: f.Iso}
	refTree := referenceTree(t, t.TempDir())
	in := QualityInputs{ReferenceTree: refTree, Calibration: smokeCalibration(t, f.ModelDigest, refTree)}
	planned := &plan.Result{Digest: identity.MustParse(strings.Repeat("ab", 32))}
	sel := sealSelection(o, planned, in)
	if sel.Err != nil {
		t.Fatal(sel.Err)
	}
	if _, err := store.Get(sel.Ref); err != nil {
		t.Fatalf("the commitment is not in the store: %v", err)
	}
	// The shared stock A/A run (smoke workload, test policy), which may
	// have run before the selection above was sealed: the selection is
	// drawn from the workload's prompts and a fresh secret, never from what
	// an engine returned, and T reads only the retained trajectories.
	ev := stockAAEvidence(t, f)
	if ev.Grade == nil {
		t.Fatalf("speed: %+v", ev.Outcome)
	}
	out, ref, receipt := runQualityStage(context.Background(), o, in, sel, ev)
	if out.Decision != Pass || ref.SHA256 == "" {
		t.Fatalf("quality: %+v, ref %+v", out, ref)
	}
	rec, err := quality.Regrade(store, ref)
	if err != nil {
		t.Fatal(err)
	}
	// The pool is the timed batches' prompts: 4 batches of 2 after the
	// warm-up and the conditioning batch.
	if len(rec.Commitment.PromptPool) != 8 || rec.Commitment.SelectCount != 4 || len(rec.Prompts) != 4 {
		t.Fatalf("%d of %d prompts judged, want half the pool of the timed batches' 8", len(rec.Prompts), len(rec.Commitment.PromptPool))
	}
	if receipt != rec.Receipt.Digest || len(receipt) != 64 {
		t.Fatalf("the stage names selection receipt %q, T revealed %s", receipt, rec.Receipt.Digest)
	}
	// The report's quality record re-grades with the report (its attempt
	// naming the selection sealed before execution), and a record that
	// claims another decision, another reveal or another commitment does
	// not.
	report := func() *Report {
		r := &Report{Schema: ReportSchema, Decision: Pass, Started: "2026-01-02T03:04:05Z", Inputs: Inputs{Controller: "controller", Model: f.ModelDigest}, Stages: []Stage{{Name: StageQuality, Decision: out.Decision, Reason: out.Reason}},
			Lanes:   []Lane{{Name: "baseline", Device: "cpu", GPUs: []string{}}, {Name: "candidate", Device: "cpu", GPUs: []string{}, SharedDevice: true}},
			Quality: qualityRecord(out, ref, sel, receipt)}
		a, err := newAttempt(r, "controller", strings.Repeat("c", 64), sel)
		if err != nil {
			t.Fatal(err)
		}
		r.Attempt = a
		return r
	}
	if err := Regrade(store, report()); err != nil {
		t.Fatalf("regrade: %v", err)
	}
	// The HTML report plots T's per-prompt NLL from the retained evidence:
	// a dot per selected prompt and role.
	page, err := HTML(store, report())
	if err != nil {
		t.Fatal(err)
	}
	data, err := store.Get(ref)
	if err != nil {
		t.Fatal(err)
	}
	var qev quality.Evidence
	if err := json.Unmarshal(data, &qev); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(page), `class="prompt" data-role="C"`); !strings.Contains(string(page), `id="nll"`) || n == 0 || n != len(qev.Prompts) {
		t.Errorf("the HTML report plots %d C dots, T scored %d prompts", n, len(qev.Prompts))
	}
	for name, edit := range map[string]func(r *Report){
		"a flipped quality decision":  func(r *Report) { r.Quality.Decision = Fail },
		"another selection receipt":   func(r *Report) { r.Quality.SelectionReceipt = strings.Repeat("d", 64) },
		"another selection secret":    func(r *Report) { r.Attempt.SelectionSecretCommitment = strings.Repeat("d", 64) },
		"no attempt record":           func(r *Report) { r.Attempt = nil },
		"an attempt of another start": func(r *Report) { r.Started = "2026-01-02T03:04:06Z" },
	} {
		r := report()
		edit(r)
		if err := Regrade(store, r); !errors.Is(err, ErrRegrade) {
			t.Errorf("%s re-graded: %v", name, err)
		}
	}

	for _, c := range []struct {
		name string
		sel  *Selection
		edit func(ev *SpeedEvidence)
		want string
	}{
		{"no selection", nil, func(*SpeedEvidence) {}, "no selection was committed before execution"},
		{"C kept short", sel, func(ev *SpeedEvidence) {
			for i := range ev.Batches[speed.C] {
				for j := range ev.Batches[speed.C][i].Output {
					ev.Batches[speed.C][i].Output[j] = ev.Batches[speed.C][i].Output[j][:2]
				}
			}
		}, "the C trajectory holds 2 tokens, want 4"},
		{"B′ lost", sel, func(ev *SpeedEvidence) { delete(ev.Batches, speed.BPrime) }, "no B_prime trajectory"},
	} {
		t.Run(c.name, func(t *testing.T) {
			bad := &SpeedEvidence{Batches: map[speed.Role][]Batch{}}
			for r, bs := range ev.Batches {
				for _, b := range bs {
					cp := b
					cp.Output = make([][]int, len(b.Output))
					for j := range b.Output {
						cp.Output[j] = append([]int(nil), b.Output[j]...)
					}
					bad.Batches[r] = append(bad.Batches[r], cp)
				}
			}
			c.edit(bad)
			out, ref, receipt := runQualityStage(context.Background(), o, in, c.sel, bad)
			if out.Decision != NoDecision || !strings.Contains(out.Reason, c.want) || ref.SHA256 != "" || receipt != "" {
				t.Fatalf("%+v, ref %+v: want NO_DECISION with %q and nothing published", out, ref, c.want)
			}
		})
	}
}
