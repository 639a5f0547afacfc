package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cacheon/engine/evaluator/qualify"
	"github.com/cacheon/engine/internal/testtree"
	"github.com/cacheon/engine/settlement/apply/applytest"
	"github.com/cacheon/engine/settlement/evaluate"
	"github.com/cacheon/engine/settlement/ledger"
	"github.com/cacheon/engine/settlement/settle"
	"github.com/cacheon/engine/settlement/settle/settletest"
)

// settleFixture is a ledger with one proposal qualified by an
// independent pair (or, with one, the same qualification twice), closed
// for the commands to open.
func settleFixture(t *testing.T, independent bool) (*applytest.Fixture, applytest.Intaken) {
	t.Helper()
	f := applytest.New(t, applytest.Workspace(t, "../.."), filepath.Join(t.TempDir(), "ledger.db"))
	in := f.Intake(t, "rmsnorm_torch", "5Fminer", 4100200)
	a, b := settletest.Pair("cli", in.Candidate)
	if !independent {
		b = a
	}
	f.Qualify(t, in.ID, a, b)
	f.L.Close()
	return f, in
}

func TestSettleExportAndWeights(t *testing.T) {
	f, in := settleFixture(t, true)
	code, out, errOut := run(t, "", "settle", "--ledger", f.Path, "--workspace", f.WS, "--json")
	if code != 0 {
		t.Fatalf("settle: exit %d\n%s%s", code, out, errOut)
	}
	var doc struct {
		Committed bool  `json:"committed"`
		Winner    int64 `json:"winner"`
		Events    []struct {
			EventType string `json:"event_type"`
			Body      struct {
				Reason string `json:"reason"`
			} `json:"body"`
		} `json:"events"`
		Rows []struct {
			Outcome string `json:"outcome"`
		} `json:"rows"`
		Stack struct {
			StackDigest string `json:"stack_digest"`
		} `json:"stack"`
		PlanDigest string `json:"plan_digest"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !doc.Committed || doc.Winner != in.ID || len(doc.Events) != 4 || doc.Events[0].Body.Reason != "qualified_win" || doc.Rows[0].Outcome != "CROWN" ||
		doc.Stack.StackDigest != in.Candidate.CandidateStack || len(doc.PlanDigest) != 64 {
		t.Errorf("settle --json: %s", out)
	}

	// The incumbent file is rewritten from the ledger and digests to the
	// new incumbent.
	incumbent := filepath.Join(f.WS, "stacks", "incumbent.hcl")
	if code, out, errOut := run(t, "", "stack", "export", "--ledger", f.Path, "--out", incumbent); code != 0 || !strings.Contains(out, "settlement event 4") {
		t.Fatalf("stack export: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = run(t, "", "stack", "digest", incumbent, "--workspace", f.WS)
	if code != 0 || strings.TrimSpace(out) != in.Candidate.CandidateStack {
		t.Errorf("stack digest of the export: exit %d, %q%s; want %s", code, out, errOut, in.Candidate.CandidateStack)
	}

	// --workspace makes it buildable by Bazel: the crowned bundle copied
	// under kernels/crowned and named by label.
	code, out, errOut = run(t, "", "stack", "export", "--ledger", f.Path, "--workspace", f.WS, "--json")
	var ex struct {
		Out     string            `json:"out"`
		Labels  []string          `json:"labels"`
		Crowned map[string]string `json:"crowned"`
	}
	if err := json.Unmarshal([]byte(out), &ex); code != 0 || err != nil || len(ex.Crowned) != 1 || ex.Out != incumbent {
		t.Fatalf("stack export --workspace: exit %d (%v)\n%s%s", code, err, out, errOut)
	}
	code, out, errOut = run(t, "", "stack", "digest", incumbent, "--workspace", f.WS)
	if code != 0 || strings.TrimSpace(out) != in.Candidate.CandidateStack {
		t.Errorf("stack digest of the workspace export: exit %d, %q%s; want %s", code, out, errOut, in.Candidate.CandidateStack)
	}
	if code, _, errOut := run(t, "", "stack", "export", "--ledger", f.Path); code != 1 || !strings.Contains(errOut, "out") {
		t.Errorf("stack export without --out or --workspace: exit %d %s", code, errOut)
	}

	// Nothing left to settle.
	if code, out, _ := run(t, "", "settle", "--ledger", f.Path, "--workspace", f.WS); code != 0 || !strings.Contains(out, "nothing to crown") {
		t.Errorf("second settle: exit %d\n%s", code, out)
	}

	// The weights come from the ledger's standing claim.
	members := filepath.Join(t.TempDir(), "members.json")
	if err := os.WriteFile(members, []byte(`["5Fminer", "5Fvalidator"]`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = run(t, "", "weights", "--ledger", f.Path, "--block", "4100300", "--metagraph", members,
		"--validator", "5Fvalidator", "--policy", repoDir("docs/examples/weights/policy.json"), "--json")
	if code != 0 {
		t.Fatalf("weights --ledger: exit %d\n%s%s", code, out, errOut)
	}
	var w weightsProjectJSON
	if err := json.Unmarshal([]byte(out), &w); err != nil {
		t.Fatal(err)
	}
	if len(w.Weights) != 1 || w.Weights[0].Hotkey != "5Fminer" || w.Weights[0].PPM != 1_000_000 {
		t.Errorf("weights %s", out)
	}
	// A block before the crown is refused by the policy.
	if code, _, errOut := run(t, "", "weights", "--ledger", f.Path, "--block", "4100100", "--metagraph", members,
		"--validator", "5Fvalidator", "--policy", repoDir("docs/examples/weights/policy.json")); code != 2 {
		t.Errorf("weights before the crown: exit %d\n%s", code, errOut)
	}
}

func TestSettleRefusesOneQualification(t *testing.T) {
	f, _ := settleFixture(t, false)
	code, out, errOut := run(t, "", "settle", "--ledger", f.Path, "--workspace", f.WS)
	if code != 2 || !strings.Contains(errOut, "one_qualification") || !strings.Contains(errOut, "proposal 1") {
		t.Errorf("settle: exit %d\n%s%s", code, out, errOut)
	}
	// Nothing was written: the ledger checks clean, no event.
	code, out, _ = run(t, "", "ledger", "check", "--ledger", f.Path)
	if code != 0 || !strings.Contains(out, "(no events yet)") {
		t.Errorf("ledger check after a refusal: exit %d\n%s", code, out)
	}
	if code, _, errOut := run(t, "", "settle", "--ledger", filepath.Join(t.TempDir(), "missing.db")); code != 1 {
		t.Errorf("settle of a missing ledger: exit %d\n%s", code, errOut)
	}
}

// uncalibratedPass is a qualification that passed under the embedded
// uncalibrated speed policy: what the main job's CPU lane writes.
func uncalibratedPass(ctx context.Context, dir string, prior *qualify.Report) (*qualify.Report, []byte, error) {
	r := &qualify.Report{Schema: qualify.ReportSchema, Decision: qualify.Pass, Reason: "every stage passed",
		Inputs: qualify.Inputs{Calibration: qualify.UncalibratedDigest()}, Lanes: []qualify.Lane{}, Notes: []string{},
		Stages: []qualify.Stage{{Name: qualify.ScreenStatic, Decision: qualify.Pass, Start: "0", Seconds: "0"},
			{Name: qualify.StageSpeed, Decision: qualify.Pass, Reason: "above_pass_limit (speedup 1.04)", Start: "0", Seconds: "1"}},
		Speed: &qualify.Speed{Decision: qualify.Pass, Reason: "above_pass_limit (speedup 1.04)", Version: 8, Speedup: "1.04"}}
	data, err := r.Canonical()
	return r, data, err
}

// TestSettleWithNothingToCrown: a ledger whose proposal passed only under
// the uncalibrated policy has nothing queued; settle exits 0 and says
// why, naming the proposal, its status and its reason (in --json as
// fields). A qualified proposal without settlement views is still a
// refused input (exit 2).
func TestSettleWithNothingToCrown(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name    string
		prepare func(t *testing.T, f *applytest.Fixture, in applytest.Intaken)
		code    int
		out     []string // stdout (or, on a refusal, stderr) holds each
		status  string   // --json: the one undecided proposal's status, "" for none
	}{
		{"an uncalibrated pass waits in no_decision", func(t *testing.T, f *applytest.Fixture, in applytest.Intaken) {
			res, err := evaluate.Evaluate(ctx, f.L, in.ID, evaluate.Options{Qualify: uncalibratedPass, Intake: settle.Intake{Lane: settle.LaneRegistered}, WorkDir: t.TempDir()})
			if err != nil || res.Status != ledger.NoDecision {
				t.Fatalf("evaluate: %+v, %v", res, err)
			}
		}, 0, []string{"nothing to crown: no qualified proposal waits for settlement", "proposal 1 is no_decision (uncalibrated_policy: ",
			"noise, not evidence", "cacheon qualify calibrate"}, "no_decision"},
		{"a published proposal waits for evaluation", func(*testing.T, *applytest.Fixture, applytest.Intaken) {}, 0,
			[]string{"nothing to crown", "proposal 1 is published\n"}, "published"},
		{"a hand-made qualified proposal without views is refused", func(t *testing.T, f *applytest.Fixture, in applytest.Intaken) {
			for i, step := range []struct {
				to     ledger.Status
				record string
			}{{ledger.Screening, ledger.StageScreen}, {ledger.Promoted, ""}, {ledger.Qualifying, ledger.StageQualification},
				{ledger.ReproductionPending, ""}, {ledger.Qualifying, ledger.StageQualification}, {ledger.Qualified, ""}} {
				if err := f.L.Transition(ctx, in.ID, step.to, ""); err != nil {
					t.Fatal(err)
				}
				if step.record != "" {
					d := settletest.Digest(fmt.Sprintf("report %d", i))
					if _, err := f.L.RecordAttempt(ctx, in.ID, ledger.Attempt{Stage: step.record, Decision: "PASS", ReportDigest: d, EvidenceAddress: d}); err != nil {
						t.Fatal(err)
					}
				}
			}
		}, 2, []string{"missing_settlement_view", "proposal 1"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := applytest.New(t, applytest.Workspace(t, "../.."), filepath.Join(t.TempDir(), "ledger.db"))
			in := f.Intake(t, "rmsnorm_torch", "5Fminer", 4100200)
			c.prepare(t, f, in)
			f.L.Close()
			code, out, errOut := run(t, "", "settle", "--ledger", f.Path, "--workspace", f.WS)
			text := out
			if c.code != 0 {
				text = errOut
			}
			if code != c.code {
				t.Fatalf("settle: exit %d, want %d\n%s%s", code, c.code, out, errOut)
			}
			for _, want := range c.out {
				if !strings.Contains(text, want) {
					t.Errorf("settle does not say %q:\n%s", want, text)
				}
			}
			if c.code != 0 {
				return
			}
			code, out, errOut = run(t, "", "settle", "--ledger", f.Path, "--workspace", f.WS, "--json")
			var doc struct {
				Committed bool `json:"committed"`
				Undecided []struct {
					ProposalID int64  `json:"proposal_id"`
					Hotkey     string `json:"hotkey"`
					Status     string `json:"status"`
					Reason     string `json:"reason"`
				} `json:"undecided"`
			}
			if err := json.Unmarshal([]byte(out), &doc); code != 0 || err != nil {
				t.Fatalf("settle --json: exit %d (%v)\n%s%s", code, err, out, errOut)
			}
			if doc.Committed || len(doc.Undecided) != 1 || doc.Undecided[0].ProposalID != in.ID || doc.Undecided[0].Hotkey != "5Fminer" ||
				doc.Undecided[0].Status != c.status || !strings.Contains(text, doc.Undecided[0].Reason) {
				t.Errorf("settle --json: %s", out)
			}
		})
	}
	// An empty ledger: nothing queued, nothing waiting.
	f := applytest.New(t, applytest.Workspace(t, "../.."), filepath.Join(t.TempDir(), "ledger.db"))
	f.L.Close()
	if code, out, errOut := run(t, "", "settle", "--ledger", f.Path, "--workspace", f.WS); code != 0 || !strings.Contains(out, "no proposal waits for evaluation") {
		t.Errorf("settle of an empty ledger: exit %d\n%s%s", code, out, errOut)
	}
}

// TestQualifyLedgerRefusesAnotherIncumbent: qualify --ledger measures a
// proposal over the ledger's current evaluation stack; an --incumbent that
// assembles to another stack is refused before any engine starts, naming
// both digests and how to get the ledger's own.
func TestQualifyLedgerRefusesAnotherIncumbent(t *testing.T) {
	f, _ := settleFixture(t, true)
	src, err := os.ReadFile(filepath.Join(f.WS, "stacks", "incumbent.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(f.WS, "stacks", "other.hcl")
	edited := strings.Replace(string(src), "//kernels/contributions:rmsnorm_triton", "//kernels/contributions:rmsnorm_torch", 1)
	if edited == string(src) {
		t.Fatal("the incumbent has no rmsnorm_triton entry to change")
	}
	if err := os.WriteFile(other, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	reference := filepath.Join(f.WS, "stacks", "reference.hcl")
	if _, err := os.Stat(reference); err != nil {
		testtree.Copy(t, "../../stacks/reference.hcl", reference)
	}
	code, out, errOut := run(t, "", "qualify", "--ledger", f.Path, "--workspace", f.WS, "--incumbent", other,
		"--reference", reference, "--out", filepath.Join(t.TempDir(), "q"), "--json")
	if code != 2 || !strings.Contains(out+errOut, "current evaluation stack of") || !strings.Contains(out+errOut, "stack export --ledger") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
}
