package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cacheon/engine/settlement/ledger"
	"github.com/cacheon/engine/tools/testtree"
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
		{"no crown at the target", []string{"--ledger", f.Path, "--target", "activation.silu_and_mul"}, ExitRejected, "no_crown"},
		{"an attempt by hand", []string{"--ledger", f.Path, "--target", "norm.rmsnorm", "--evidence", "primary_attempt=" + filepath.Join(dir, "test_evidence.json")}, ExitRejected, "the crown's own"},
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
