package apply_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cacheon/engine/internal/reject"
	"github.com/cacheon/engine/kernels/bundle"
	"github.com/cacheon/engine/settlement/apply"
	"github.com/cacheon/engine/settlement/apply/applytest"
	"github.com/cacheon/engine/settlement/ledger"
	"github.com/cacheon/engine/settlement/settle"
	"github.com/cacheon/engine/settlement/settle/settletest"
	"github.com/cacheon/engine/stacks/materialize"
	"github.com/cacheon/engine/stacks/plan"
	"github.com/cacheon/engine/stacks/stack"
)

// check runs the ledger's own check and returns its report.
func check(t *testing.T, l *ledger.Ledger) *ledger.Report {
	t.Helper()
	r, err := l.Check(context.Background())
	if err != nil {
		t.Fatalf("ledger check: %v", err)
	}
	return r
}

func workspace(t *testing.T) string { return applytest.Workspace(t, "../..") }

// same reports whether two checks saw the same ledger.
func same(a, b *ledger.Report) bool {
	return a.Integrity == b.Integrity && a.Head == b.Head && a.CurrentStack == b.CurrentStack && a.Counts == b.Counts && len(a.Problems) == len(b.Problems)
}

func TestTwoIndependentPassesCrown(t *testing.T) {
	ctx := context.Background()
	f := applytest.New(t, workspace(t), filepath.Join(t.TempDir(), "ledger.db"))
	in := f.Queue(t, "rmsnorm_torch", "5Fminer", 4100200, nil)

	res, err := apply.Settle(ctx, f.L, f.Options())
	if err != nil {
		t.Fatalf("Settle: %v", err)
	}
	if !res.Committed || res.Winner != in.ID {
		t.Fatalf("committed %v, winner %d, want proposal %d crowned", res.Committed, res.Winner, in.ID)
	}
	var types []string
	for _, e := range res.Events {
		types = append(types, e.EventType)
	}
	// rmsnorm replaces the incumbent's Triton entry: no displacement.
	if got, want := strings.Join(types, " "), "CROWN RETIREMENT ADOPTION STACK_TRANSITION"; got != want {
		t.Errorf("events %s, want %s", got, want)
	}
	cur, err := f.L.CurrentStack(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if cur.StackDigest != in.Candidate.CandidateStack || cur.TreeDigest != in.Candidate.CandidateTree || cur.StackDigest == f.Cur.StackDigest {
		t.Errorf("current stack %s (tree %s), want the candidate %s", cur.StackDigest, cur.TreeDigest, in.Candidate.CandidateStack)
	}
	// The crowned entry's source is the ledger's publication, pinned.
	pub := ledger.Publications{Dir: f.L.PublicationsDir()}.Path(in.Proposal.ContentHash)
	if !strings.Contains(cur.HCL, `"`+pub+`"`) || !strings.Contains(cur.HCL, in.Proposal.ContentHash) {
		t.Errorf("new stack HCL does not name the publication %s:\n%s", pub, cur.HCL)
	}
	// The rendering re-assembles to the recorded digest.
	d, _, err := apply.Assemble([]byte(cur.HCL), f.WS, f.Payload, "")
	if err != nil || d != cur.StackDigest {
		t.Errorf("the stored rendering assembles to %s (%v), recorded %s", d, err, cur.StackDigest)
	}
	claims, err := f.L.StandingClaims(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(claims) != 1 || claims[0].Hotkey != "5Fminer" || claims[0].SpeedupPPM != 1_250_000 || claims[0].CrownedBlock != 4100200 ||
		claims[0].ContributionDigest != in.Candidate.Proposal {
		t.Errorf("standing claims %+v", claims)
	}
	r := check(t, f.L)
	if r.Head.Sequence != 4 || r.CurrentStack != cur.StackDigest || r.Counts.Crowns != 1 || r.Counts.Stacks != 2 {
		t.Errorf("check %+v", r)
	}
	out, err := f.L.Outcomes(ctx, in.ID)
	if err != nil || len(out) != 1 || out[0].Outcome != "CROWN" || out[0].EventSequence != 1 {
		t.Errorf("outcomes %+v (%v)", out, err)
	}
	// Settled: nothing is queued, a second settle writes nothing.
	again, err := apply.Settle(ctx, f.L, f.Options())
	if err != nil || again.Committed {
		t.Errorf("second settle: committed %v, %v", again != nil && again.Committed, err)
	}
}

func TestRefusedInputWritesNothing(t *testing.T) {
	cases := []struct {
		name   string
		views  func(a, b settle.Qualification) (settle.Qualification, settle.Qualification)
		edit   func(*settletest.Candidate)
		reason string
	}{
		{name: "one qualification recorded twice", reason: "one_qualification",
			views: func(a, _ settle.Qualification) (settle.Qualification, settle.Qualification) { return a, a }},
		{name: "shared authority digest", reason: "shared_authority_digest:authority",
			views: func(a, b settle.Qualification) (settle.Qualification, settle.Qualification) {
				b.Authority = a.Authority
				return a, b
			}},
		{name: "lanes not exchanged", reason: "lanes_not_exchanged",
			views: func(a, b settle.Qualification) (settle.Qualification, settle.Qualification) {
				o := *a.LaneOrientation
				b.LaneOrientation = &o
				return a, b
			}},
		// The ledger recorded the spec intake resolved; a view measured
		// under another is refused before the pair is.
		{name: "mismatched target spec", reason: "settlement_view_mismatch:target_spec",
			views: func(a, b settle.Qualification) (settle.Qualification, settle.Qualification) {
				b.TargetSpec = settletest.Digest("another spec")
				return a, b
			}},
		{name: "view of another hotkey", reason: "settlement_view_mismatch:hotkey",
			views: func(a, b settle.Qualification) (settle.Qualification, settle.Qualification) {
				a.Hotkey, b.Hotkey = "5Fother", "5Fother"
				return a, b
			}},
		{name: "candidate stack not the current stack plus the transition", reason: "candidate_stack_mismatch",
			edit: func(c *settletest.Candidate) { c.CandidateStack = settletest.Digest("elsewhere") }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			f := applytest.New(t, workspace(t), filepath.Join(t.TempDir(), "ledger.db"))
			in := f.Intake(t, "rmsnorm_torch", "5Fminer", 4100200)
			if tc.edit != nil {
				tc.edit(&in.Candidate)
			}
			a, b := settletest.Pair("x", in.Candidate)
			if tc.views != nil {
				a, b = tc.views(a, b)
			}
			if tc.name == "one qualification recorded twice" {
				// The ledger takes one report as two attempts; settlement
				// is what refuses it.
				b = a
			}
			f.Qualify(t, in.ID, a, b)
			before := check(t, f.L)
			_, err := apply.Settle(ctx, f.L, f.Options())
			if !errors.Is(err, reject.ErrRejected) || !strings.Contains(err.Error(), tc.reason) {
				t.Fatalf("Settle: %v, want a rejection naming %s", err, tc.reason)
			}
			if after := check(t, f.L); !same(before, after) {
				t.Errorf("a refused settlement changed the ledger:\nbefore %+v\nafter  %+v", before, after)
			}
			p, err := f.L.Proposal(ctx, in.ID)
			if err != nil || p.Status != ledger.Qualified {
				t.Errorf("proposal %+v (%v), want it still qualified", p, err)
			}
		})
	}
}

func TestStaleIncumbentHolds(t *testing.T) {
	ctx := context.Background()
	f := applytest.New(t, workspace(t), filepath.Join(t.TempDir(), "ledger.db"))
	in := f.Queue(t, "rmsnorm_torch", "5Fminer", 4100200, func(c *settletest.Candidate) {
		c.IncumbentStack = settletest.Digest("an older incumbent")
	})
	res, err := apply.Settle(ctx, f.L, f.Options())
	if err != nil {
		t.Fatalf("Settle: %v", err)
	}
	if !res.Committed || res.Winner != 0 || len(res.Events) != 0 || len(res.Rows) != 1 ||
		res.Rows[0].Outcome != settle.OutcomeHold || res.Rows[0].Reason != settle.ReasonStaleIncumbent {
		t.Fatalf("result %+v", res)
	}
	p, err := f.L.Proposal(ctx, in.ID)
	if err != nil || p.Status != ledger.Held || p.Reason != "stale_incumbent" {
		t.Errorf("proposal %+v (%v), want held stale_incumbent", p, err)
	}
	if r := check(t, f.L); r.CurrentStack != f.Cur.StackDigest || r.Head.Sequence != 0 {
		t.Errorf("a hold moved the stack or the chain: %+v", r)
	}
	// Held, it can requalify against the new incumbent.
	if err := f.L.Transition(ctx, in.ID, ledger.Qualifying, ""); err != nil {
		t.Errorf("held -> qualifying: %v", err)
	}
}

func TestOneWinnerPerIncumbent(t *testing.T) {
	ctx := context.Background()
	f := applytest.New(t, workspace(t), filepath.Join(t.TempDir(), "ledger.db"))
	// Two candidates at rmsnorm: equal speedups, the earlier wins.
	early := f.Queue(t, "rmsnorm_torch", "5Fearly", 4100100, nil)
	late := f.Queue(t, "rmsnorm_torch", "5Flate", 4100300, nil)
	// One at another target: the incumbent advances under it.
	silu := f.Queue(t, "silu_and_mul_torch", "5Fsilu", 4100200, func(c *settletest.Candidate) { c.Speedups = [2]string{"1.1", "1.1"} })

	res, err := apply.Settle(ctx, f.L, f.Options())
	if err != nil {
		t.Fatalf("Settle: %v", err)
	}
	if res.Winner != early.ID {
		t.Fatalf("winner %d, want %d", res.Winner, early.ID)
	}
	want := map[int64][2]string{early.ID: {"CROWN", "qualified"}, late.ID: {"HOLD", "conflict_lost"}, silu.ID: {"HOLD", "incumbent_advanced"}}
	for id, w := range want {
		out, err := f.L.Outcomes(ctx, id)
		if err != nil || len(out) != 1 || out[0].Outcome != w[0] {
			t.Errorf("proposal %d: outcomes %+v (%v), want %s", id, out, err, w[0])
		}
		p, _ := f.L.Proposal(ctx, id)
		if w[0] == "HOLD" && (p.Status != ledger.Held || p.Reason != w[1]) {
			t.Errorf("proposal %d is %s %s, want held %s", id, p.Status, p.Reason, w[1])
		}
	}
	if r := check(t, f.L); r.CurrentStack != early.Candidate.CandidateStack || r.Counts.StandingClaims != 1 {
		t.Errorf("check %+v", r)
	}
}

func TestDiscoveryRowIsABountyBesideTheCrown(t *testing.T) {
	ctx := context.Background()
	f := applytest.New(t, workspace(t), filepath.Join(t.TempDir(), "ledger.db"))
	crown := f.Queue(t, "rmsnorm_torch", "5Fminer", 4100200, nil)
	disc := f.Queue(t, "silu_and_mul_torch", "5Fdisc", 4100100, func(c *settletest.Candidate) { c.Lane = settle.LaneDiscovery })
	res, err := apply.Settle(ctx, f.L, f.Options())
	if err != nil {
		t.Fatalf("Settle: %v", err)
	}
	if res.Winner != crown.ID {
		t.Fatalf("winner %d, want %d", res.Winner, crown.ID)
	}
	out, err := f.L.Outcomes(ctx, disc.ID)
	if err != nil || len(out) != 1 || out[0].Outcome != "DISCOVERY_BOUNTY" || out[0].Reason != "qualified_discovery" {
		t.Errorf("discovery outcomes %+v (%v)", out, err)
	}
	p, _ := f.L.Proposal(ctx, disc.ID)
	if p.Status != ledger.Qualified {
		t.Errorf("the discovery proposal is %s, want it settled and qualified", p.Status)
	}
	// Settled, it is not queued again.
	if again, err := apply.Settle(ctx, f.L, f.Options()); err != nil || again.Committed {
		t.Errorf("second settle: %+v, %v", again, err)
	}
}

func TestExportRewritesTheIncumbentFromTheLedger(t *testing.T) {
	ctx := context.Background()
	f := applytest.New(t, workspace(t), filepath.Join(t.TempDir(), "ledger.db"))
	out := filepath.Join(t.TempDir(), "incumbent.hcl")
	f.Queue(t, "rmsnorm_torch", "5Fminer", 4100200, nil)
	if _, err := apply.Settle(ctx, f.L, f.Options()); err != nil {
		t.Fatal(err)
	}
	s, err := apply.Export(ctx, f.L, out)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(out)
	if err != nil || string(data) != s.HCL {
		t.Fatalf("exported %q (%v)", data, err)
	}
	if d, _, err := apply.Assemble(data, f.WS, f.Payload, ""); err != nil || d != s.StackDigest {
		t.Errorf("the exported file assembles to %s (%v), the ledger's stack is %s", d, err, s.StackDigest)
	}
}

// TestExportWorkspaceMakesTheCrownBuildable: after a crown, the export
// into a repository copies the crowned bundle from the ledger's
// publication under kernels/crowned, names it by label in
// stacks/incumbent.hcl and in the .bzl list the incumbent rule reads, and
// the result assembles to the ledger's stack and materializes to the tree
// of the ledger's own rendering. A second export is the same; a tampered
// copy is refused.
func TestExportWorkspaceMakesTheCrownBuildable(t *testing.T) {
	ctx := context.Background()
	ws := workspace(t)
	f := applytest.New(t, ws, filepath.Join(t.TempDir(), "ledger.db"))
	f.Queue(t, "rmsnorm_torch", "5Fminer", 4100200, nil)
	if _, err := apply.Settle(ctx, f.L, f.Options()); err != nil {
		t.Fatal(err)
	}
	cur, err := f.L.CurrentStack(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ex, err := apply.ExportWorkspace(ctx, f.L, ws, f.Payload)
	if err != nil {
		t.Fatal(err)
	}
	if len(ex.Crowned) != 1 {
		t.Fatalf("crowned copies %v, want the one crowned entry", ex.Crowned)
	}
	var label, content string
	for label, content = range ex.Crowned {
	}
	dir := filepath.Join(ws, filepath.FromSlash(apply.CrownedDir), strings.TrimPrefix(label, apply.CrownedPackage+":"))
	if got, err := bundle.ContentHash(dir); err != nil || got.String() != content {
		t.Fatalf("the copy at %s hashes to %s (%v), want %s", dir, got, err, content)
	}
	hcl, err := os.ReadFile(filepath.Join(ws, "stacks", "incumbent.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(hcl), `"`+label+`"`) || strings.Contains(string(hcl), f.L.PublicationsDir()) {
		t.Fatalf("the exported stack does not name the crowned label instead of the publication:\n%s", hcl)
	}
	bzl, err := os.ReadFile(filepath.Join(ws, filepath.FromSlash(apply.ContributionBzl)))
	if err != nil || !strings.Contains(string(bzl), `"`+label+`"`) || !strings.Contains(string(bzl), `"//kernels/contributions:silu_and_mul_triton"`) {
		t.Fatalf("contribution list %s (%v)", bzl, err)
	}
	build, err := os.ReadFile(filepath.Join(ws, filepath.FromSlash(apply.CrownedDir), "BUILD.bazel"))
	if err != nil || !strings.Contains(string(build), strings.TrimPrefix(label, apply.CrownedPackage+":")) {
		t.Fatalf("crowned BUILD %s (%v)", build, err)
	}
	if d, _, err := apply.Assemble(hcl, ws, f.Payload, ""); err != nil || d != cur.StackDigest {
		t.Fatalf("the exported stack assembles to %s (%v), the ledger's is %s", d, err, cur.StackDigest)
	}
	// The exported stack materializes to the same tree as the ledger's own
	// rendering, whose crowned entry reads the publication directly.
	treeOf := func(hcl []byte) string {
		t.Helper()
		sf, diags := stack.Parse("incumbent.hcl", hcl)
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		a, err := stack.Assemble(sf, stack.Sources{Workspace: ws}, f.Cat, f.Payload)
		if err != nil {
			t.Fatal(err)
		}
		_, tree, err := plan.Incumbent(ctx, plan.Request{Incumbent: a, Materialize: materialize.Options{Catalog: f.Cat, Payload: f.Payload}, TreeDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		return tree.String()
	}
	if got, want := treeOf(hcl), treeOf([]byte(cur.HCL)); got != want {
		t.Fatalf("the exported stack materializes to %s, the ledger's rendering to %s", got, want)
	}
	// Exporting again changes nothing; a copy edited by hand is refused.
	if _, err := apply.ExportWorkspace(ctx, f.L, ws, f.Payload); err != nil {
		t.Fatalf("a second export: %v", err)
	}
	src := filepath.Join(dir, "kernels", "rmsnorm.py")
	if err := os.WriteFile(src, []byte("# edited\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := apply.ExportWorkspace(ctx, f.L, ws, f.Payload); err == nil || !strings.Contains(err.Error(), "export again") {
		t.Fatalf("an edited crowned copy: %v", err)
	}
}
