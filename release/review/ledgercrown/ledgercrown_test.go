package ledgercrown_test

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/cacheon/engine/internal/reject"
	"github.com/cacheon/engine/kernels/bundle"
	"github.com/cacheon/engine/release/review"
	"github.com/cacheon/engine/release/review/ledgercrown"
	"github.com/cacheon/engine/settlement/apply"
	"github.com/cacheon/engine/settlement/apply/applytest"
	"github.com/cacheon/engine/settlement/ledger"
)

const sourcePath = "kernels/contributions/rmsnorm_torch"

// crowned is a real ledger holding one crown: rmsnorm_torch taken in,
// qualified twice and settled.
type crowned struct {
	f  *applytest.Fixture
	in applytest.Intaken
}

func newCrowned(t *testing.T) crowned {
	t.Helper()
	f := applytest.New(t, applytest.Workspace(t, "../../.."), filepath.Join(t.TempDir(), "ledger.db"))
	in := f.Queue(t, "rmsnorm_torch", "5Fminer", 4100200, nil)
	res, err := apply.Settle(context.Background(), f.L, f.Options())
	if err != nil || res.Winner != in.ID {
		t.Fatalf("Settle: %+v, %v", res, err)
	}
	return crowned{f, in}
}

// repo commits the crowned bytes, as the ledger published them, to a new
// git repository at sourcePath, after edit (when set) changes them.
func (c crowned) repo(t *testing.T, edit func(files map[string][]byte)) (string, string) {
	t.Helper()
	pub := ledger.Publications{Dir: c.f.L.PublicationsDir()}.Path(c.in.Proposal.ContentHash)
	list, err := bundle.Files(pub)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, e := range list {
		b, err := os.ReadFile(filepath.Join(pub, filepath.FromSlash(e.Path)))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Path] = b
	}
	if edit != nil {
		edit(files)
	}
	repo := filepath.Join(t.TempDir(), "repo")
	for p, b := range files {
		dst := filepath.Join(repo, sourcePath, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git(t, repo, "init", "-q", "-b", "main")
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "-q", "-m", "integrate rmsnorm_torch")
	return repo, git(t, repo, "rev-parse", "HEAD")
}

func git(t *testing.T, repo string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", repo}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@x", "GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@x")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// reviewerEvidence is the five documents a reviewer writes.
func reviewerEvidence() map[review.Role][]byte {
	ev := map[review.Role][]byte{}
	for _, r := range []review.Role{review.RoleLicense, review.RoleProvenance, review.RoleSecurityReview, review.RoleCompatibility, review.RoleTests} {
		ev[r] = []byte(`{"evidence":"` + string(r) + `"}` + "\n")
	}
	return ev
}

func (c crowned) request(t *testing.T, repo, commit string) review.Request {
	t.Helper()
	return review.Request{Evidence: reviewerEvidence(), Reviewer: "Ada Reviewer <ada@example.com>", Repo: repo, Commit: commit,
		Path: sourcePath, Inspect: review.Inspector(c.f.Cat, nil)}
}

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func TestReviewFromTheLedgersCrown(t *testing.T) {
	ctx := context.Background()
	c := newCrowned(t)
	repo, commit := c.repo(t, nil)
	before, err := c.f.L.CurrentStack(ctx)
	if err != nil {
		t.Fatal(err)
	}
	headBefore, err := c.f.L.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}

	rec, cr, err := ledgercrown.Review(ctx, c.f.L, c.in.Proposal.TargetID, c.request(t, repo, commit))
	if err != nil {
		t.Fatalf("Review: %v", err)
	}
	if err := rec.Validate(); err != nil {
		t.Fatalf("the record does not validate: %v", err)
	}
	b, err := rec.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := review.Parse(b); err != nil {
		t.Fatalf("the record does not parse back: %v", err)
	}
	// Every crown field is the ledger's.
	events, err := c.f.L.Events(ctx, cr.EventSequence, cr.EventSequence)
	if err != nil || len(events) != 1 || events[0].EventType != "CROWN" {
		t.Fatalf("crown event %+v (%v)", events, err)
	}
	claims, err := c.f.L.StandingClaims(ctx)
	if err != nil || len(claims) != 1 {
		t.Fatalf("standing claims %+v (%v)", claims, err)
	}
	crowns, err := c.f.L.Crowns(ctx)
	if err != nil || len(crowns) != 1 {
		t.Fatalf("crowns %+v (%v)", crowns, err)
	}
	attempts, err := c.f.L.Attempts(ctx, c.in.ID)
	if err != nil || len(attempts) != 3 {
		t.Fatalf("attempts %+v (%v)", attempts, err)
	}
	for _, w := range []struct{ field, got, want string }{
		{"target_id", rec.TargetID, crowns[0].TargetID},
		{"target_spec_digest", rec.TargetSpecDigest, claims[0].TargetSpecDigest},
		{"proposal_contribution_digest", rec.ProposalContributionDigest, crowns[0].ContributionDigest},
		{"settlement_candidate_digest", rec.SettlementCandidateDigest, c.outcome(t).CandidateDigest},
		{"settlement_evidence_digest", rec.SettlementEvidenceDigest, claims[0].EvidenceDigest},
		{"crown_event_digest", rec.CrownEventDigest, events[0].Digest},
		{"primary_attempt_digest", rec.PrimaryAttemptDigest, sum(attempts[1].Settlement)},
		{"reproduction_attempt_digest", rec.ReproductionAttemptDigest, sum(attempts[2].Settlement)},
		{"selected_payload_digest", rec.SelectedPayloadDigest, c.in.Proposal.SelectedPayloadDigest},
		{"reviewed commit", rec.ReviewCommit, commit},
	} {
		if w.got != w.want || w.got == "" {
			t.Errorf("%s: %q, want the ledger's %q", w.field, w.got, w.want)
		}
	}
	// The attribution re-derives the crowned proposal reference.
	ref, err := rec.IntegratedRef()
	if err != nil {
		t.Fatal(err)
	}
	if ref.AttributionDigest.String() != cr.AttributionDigest || ref.SelectedPayloadDigest.String() != c.in.Proposal.SelectedPayloadDigest {
		t.Errorf("integrated ref %+v", ref)
	}
	if err := review.CheckSource(rec, repo, sourcePath); err != nil {
		t.Errorf("CheckSource: %v", err)
	}
	// Reviewing only reads the ledger.
	after, err := c.f.L.CurrentStack(ctx)
	if err != nil {
		t.Fatal(err)
	}
	headAfter, err := c.f.L.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if *after != *before || headAfter != headBefore {
		t.Errorf("the review changed the ledger: stack %+v -> %+v, head %+v -> %+v", before, after, headBefore, headAfter)
	}
}

func (c crowned) outcome(t *testing.T) ledger.Outcome {
	t.Helper()
	out, err := c.f.L.Outcomes(context.Background(), c.in.ID)
	if err != nil || len(out) != 1 {
		t.Fatalf("outcomes %+v (%v)", out, err)
	}
	return out[0]
}

func TestReviewFromTheLedgerRefuses(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name   string
		edit   func(files map[string][]byte)
		req    func(req *review.Request)
		spoil  func(t *testing.T, c crowned) *ledger.Ledger
		target string
		want   string
	}{
		{name: "no crown for the target", target: "activation.silu_and_mul", want: "no_crown"},
		{name: "source selecting another payload", want: "selects payload",
			edit: func(files map[string][]byte) {
				for p, b := range files {
					if strings.HasSuffix(p, ".py") && strings.HasPrefix(p, "kernels/") {
						files[p] = append(b, []byte("\n# a change after the crown\nEPS_FLOOR = 0.0\n")...)
					}
				}
			}},
		{name: "an attempt passed by hand", want: "the two qualification attempts are the crown's own",
			req: func(req *review.Request) { req.Evidence[review.RolePrimaryAttempt] = []byte(`{"attempt":"mine"}`) }},
		{name: "a ledger that fails its check", want: "ledger check",
			spoil: func(t *testing.T, c crowned) *ledger.Ledger {
				if err := c.f.L.Close(); err != nil {
					t.Fatal(err)
				}
				raw, err := sql.Open("sqlite", "file:"+c.f.Path)
				if err != nil {
					t.Fatal(err)
				}
				defer raw.Close()
				if _, err := raw.Exec(`UPDATE proposals SET status = 'held' WHERE id = ?`, c.in.ID); err != nil {
					t.Fatal(err)
				}
				return applytest.OpenLedger(t, c.f.Path)
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newCrowned(t)
			repo, commit := c.repo(t, tc.edit)
			l := c.f.L
			if tc.spoil != nil {
				l = tc.spoil(t, c)
			}
			target := tc.target
			if target == "" {
				target = c.in.Proposal.TargetID
			}
			req := c.request(t, repo, commit)
			if tc.req != nil {
				tc.req(&req)
			}
			rec, _, err := ledgercrown.Review(ctx, l, target, req)
			if !errors.Is(err, reject.ErrRejected) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Review: %v (record %v), want a rejection naming %q", err, rec != nil, tc.want)
			}
		})
	}
}
