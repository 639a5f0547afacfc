package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cacheon/engine/internal/testtree"
	"github.com/cacheon/engine/settlement/apply/applytest"
	"github.com/cacheon/engine/settlement/ledger"
	"github.com/cacheon/engine/tools/cli/enginecli"
)

// TestReleaseReviewFromTheLedger: a ledger crowned by `cacheon settle`
// is reviewed by `cacheon release review --ledger --target` with the five
// reviewer documents; the record's crown is the ledger's.
func TestReleaseReviewFromTheLedger(t *testing.T) {
	f, in := settleFixture(t, true)
	if code, out, errOut := run(t, "", "settle", "--ledger", f.Path, "--workspace", f.WS); code != 0 {
		t.Fatalf("settle: exit %d\n%s%s", code, out, errOut)
	}
	dir := t.TempDir()
	repo := filepath.Join(dir, "repo")
	const path = "kernels/contributions/rmsnorm_torch"
	testtree.Copy(t, ledger.Publications{Dir: f.Path + ".publications"}.Path(in.Proposal.ContentHash), filepath.Join(repo, path))
	base := []string{"release", "review", "--repo", repo, "--commit", gitCommit(t, repo), "--path", path, "--reviewer", "Ada"}
	evidence := reviewerEvidence(t, dir)
	args := func(out string, extra ...string) []string {
		a := append(append(append([]string{}, base...), evidence...), "--out", filepath.Join(dir, out))
		return append(a, extra...)
	}

	code, out, errOut := run(t, "", args("record.json", "--ledger", f.Path, "--target", "norm.rmsnorm", "--json")...)
	if code != 0 {
		t.Fatalf("review --ledger: exit %d\n%s%s", code, out, errOut)
	}
	var doc struct {
		CrownEventSequence int64  `json:"crown_event_sequence"`
		CrownEventDigest   string `json:"crown_event_digest"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	l, err := ledger.Open(t.Context(), f.Path, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	events, err := l.Events(t.Context(), 1, 1)
	l.Close()
	if err != nil || len(events) != 1 || doc.CrownEventSequence != 1 || doc.CrownEventDigest != events[0].Digest {
		t.Errorf("review --json %s; the ledger's crown event %+v (%v)", out, events, err)
	}

	for _, tc := range []struct {
		name  string
		extra []string
		code  int
		want  string
	}{
		{"no crown at the target", []string{"--ledger", f.Path, "--target", "activation.silu_and_mul"}, enginecli.ExitRejected, "no_crown"},
		{"an attempt by hand", []string{"--ledger", f.Path, "--target", "norm.rmsnorm", "--evidence", "primary_attempt=" + filepath.Join(dir, "test_evidence.json")}, enginecli.ExitRejected, "the crown's own"},
		{"a ledger and a crown file", []string{"--ledger", f.Path, "--target", "norm.rmsnorm", "--crown", filepath.Join(dir, "crown.json")}, 1, "none of the others can be"},
		{"neither", nil, 1, "at least one of the flags"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := run(t, "", args("refused.json", tc.extra...)...)
			if code != tc.code || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d\n%s%s\nwant exit %d naming %q", code, out, errOut, tc.code, tc.want)
			}
			if _, err := os.Stat(filepath.Join(dir, "refused.json")); err == nil {
				t.Errorf("a refused review wrote its record")
			}
		})
	}
}

// TestReleaseReviewRefusesANeutralizedCrown: `cacheon settle` crowns a
// member slot of collective.moe_epilogue.v1, then the atomic target, whose
// settlement neutralizes the member's crowned entry. Reviewing the
// member's crown exits 2 naming crown_not_current and writes no record;
// the atomic crown, current, is reviewed.
func TestReleaseReviewRefusesANeutralizedCrown(t *testing.T) {
	const member, atomic = "collective.ar_residual_rmsnorm", "collective.moe_epilogue.v1"
	ws := applytest.Workspace(t, "../..")
	name := applytest.Member(t, ws, member)
	f := applytest.New(t, ws, filepath.Join(t.TempDir(), "ledger.db"))
	settle := func(in applytest.Intaken) {
		t.Helper()
		f.L.Close()
		if code, out, errOut := run(t, "", "settle", "--ledger", f.Path, "--workspace", f.WS, "--json"); code != 0 || !strings.Contains(out, `"winner": `+strconv.FormatInt(in.ID, 10)) {
			t.Fatalf("settle: exit %d\n%s%s", code, out, errOut)
		}
		f.L = applytest.OpenLedger(t, f.Path)
	}
	first := f.Queue(t, name, "5Fminer", 4100200, nil)
	settle(first)
	f.Advance(t)
	second := f.Queue(t, applytest.Atomic, "5Fsecond", 4100300, nil)
	settle(second)
	f.L.Close()

	dir := t.TempDir()
	evidence := reviewerEvidence(t, dir)
	review := func(in applytest.Intaken, target, out string) (int, string, string) {
		repo := filepath.Join(dir, target)
		path := "kernels/contributions/" + filepath.Base(in.Proposal.ContentHash)
		testtree.Copy(t, ledger.Publications{Dir: f.Path + ".publications"}.Path(in.Proposal.ContentHash), filepath.Join(repo, path))
		args := []string{"release", "review", "--ledger", f.Path, "--target", target, "--repo", repo, "--commit", gitCommit(t, repo),
			"--path", path, "--reviewer", "Ada", "--out", out}
		return run(t, "", append(args, evidence...)...)
	}
	refused := filepath.Join(dir, "member.json")
	code, out, errOut := review(first, member, refused)
	if code != enginecli.ExitRejected || !strings.Contains(errOut, "crown_not_current") || !strings.Contains(errOut, "NEUTRALIZATION event 5 (displaced)") {
		t.Errorf("review of the neutralized crown: exit %d\n%s%s\nwant exit %d naming crown_not_current", code, out, errOut, enginecli.ExitRejected)
	}
	if _, err := os.Stat(refused); err == nil {
		t.Errorf("a refused review wrote its record")
	}
	// The first settlement wrote CROWN, ADOPTION and STACK_TRANSITION (the
	// member target was not active, so nothing was retired): the atomic
	// crown is event 4.
	if code, out, errOut := review(second, atomic, filepath.Join(dir, "atomic.json")); code != 0 || !strings.Contains(out, "crown           event 4 of") {
		t.Errorf("review of the atomic crown: exit %d\n%s%s", code, out, errOut)
	}
}
