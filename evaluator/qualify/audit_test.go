package qualify

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cacheon/engine/evaluator/audit"
	"github.com/cacheon/engine/evaluator/worker"
	"github.com/cacheon/engine/stacks/plan"
)

// TestAuditStageAfterTheSpeedStage runs a qualification of a kernel that
// is honest for its first calls and wrong after, then the audit stage on
// its plan. The timed engines of the qualification must have recorded
// nothing (they carry no audit environment); the audit must FAIL it for
// an audit violation, and its published evidence must regrade.
func TestAuditStageAfterTheSpeedStage(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	o := qualifyOptions(t, f, "kernels/fixtures/rmsnorm_wrong_after_n_calls")
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range res.Report.Stages {
		names = append(names, s.Name+"="+string(s.Decision))
	}
	t.Logf("qualification: %s (%v)", res.Report.Decision, names)
	if res.Report.Speed == nil {
		t.Fatalf("the qualification never reached the speed stage: %v", names)
	}
	// Only an audit session records, and only into its own directory: a
	// timed engine that had been given the audit variables would have left
	// records in its arm directory. (Run's own audit stage records under
	// RunDir/audit.)
	records := func() []string {
		var found []string
		_ = filepath.WalkDir(o.RunDir, func(path string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() && path == filepath.Join(o.RunDir, "audit") {
				return filepath.SkipDir
			}
			if err == nil && !d.IsDir() && (strings.HasSuffix(path, ".rec") || filepath.Base(path) == "index.json" && filepath.Base(filepath.Dir(path)) == "audit") {
				found = append(found, path)
			}
			return nil
		})
		return found
	}
	if got := records(); len(got) != 0 {
		t.Fatalf("timed engines recorded audit calls: %v", got[:1])
	}
	// The qualification's own audit stage caught the fixture after its
	// speed PASS (when the noisy CPU reads passed it at all).
	for _, s := range res.Report.Stages {
		if s.Name == StageAudit && (s.Decision != Fail || !strings.Contains(s.Reason, "call 40")) {
			t.Fatalf("the qualification's audit stage: %s %s, want a FAIL at call 40", s.Decision, s.Reason)
		}
	}

	// The stage by itself, in a run directory of its own.
	o.RunDir = filepath.Join(o.RunDir, "direct")
	if err := os.MkdirAll(o.RunDir, 0o755); err != nil {
		t.Fatal(err)
	}

	req := o.Plan
	req.TreeDir = filepath.Join(o.RunDir, "audit-trees")
	planned, err := plan.Run(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	root, err := worker.EngineRoot(filepath.Join(o.RunDir, "audit-engine-root"))
	if err != nil {
		t.Fatal(err)
	}
	secret, err := audit.FreshSecret()
	if err != nil {
		t.Fatal(err)
	}
	out, published, ref, err := runAuditStage(context.Background(), o, planned, root, "", secret, "audit")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("audit: %s %s", out.Decision, out.Reason)
	if out.Decision != Fail || !strings.Contains(out.Reason, "audit violation: norm.rmsnorm rank 0 call 40") || ref == nil {
		t.Fatalf("audit stage %+v (ref %v), want a FAIL for the violation at call 40", out, ref)
	}
	ev, err := audit.Regrade(o.Store, *ref)
	if err != nil {
		t.Fatal(err)
	}
	if ev.SecretCommitment != audit.SecretCommitment(secret) || ev.Policy.ExpectedSlots[0] != "norm.rmsnorm" {
		t.Fatalf("evidence %+v", ev)
	}
	// The stage hands back the evidence it published.
	if published == nil || published.SecretCommitment != ev.SecretCommitment || published.Decision != ev.Decision {
		t.Fatalf("the stage returned evidence %+v, the store holds %+v", published, ev)
	}
	if err := regradeAudit(o.Store, *ref, Stage{Name: StageAudit, Decision: out.Decision, Reason: out.Reason}); err != nil {
		t.Fatal(err)
	}
	if err := regradeAudit(o.Store, *ref, Stage{Name: StageAudit, Decision: Pass, Reason: out.Reason}); err == nil {
		t.Fatal("a report whose audit stage says PASS over failing evidence regraded")
	}
	for _, p := range records() {
		if !strings.HasPrefix(p, filepath.Join(o.RunDir, "audit")+string(filepath.Separator)) {
			t.Fatalf("an audit record outside the audit's directory: %s", p)
		}
	}
}
