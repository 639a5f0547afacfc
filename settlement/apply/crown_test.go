package apply_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/cacheon/engine/internal/identity"
	"github.com/cacheon/engine/internal/reject"
	"github.com/cacheon/engine/internal/testtree"
	"github.com/cacheon/engine/settlement/apply"
	"github.com/cacheon/engine/settlement/apply/applytest"
	"github.com/cacheon/engine/settlement/ledger"
	"github.com/cacheon/engine/stacks/plan"
)

// crownedLedger settles one rmsnorm proposal into a crown and returns the
// fixture, the proposal and the settlement.
func crownedLedger(t *testing.T, ws string) (*applytest.Fixture, applytest.Intaken, *apply.Result) {
	t.Helper()
	f := applytest.New(t, ws, filepath.Join(t.TempDir(), "ledger.db"))
	in := f.Queue(t, "rmsnorm_torch", "5Fminer", 4100200, nil)
	res, err := apply.Settle(context.Background(), f.L, f.Options())
	if err != nil || res.Winner != in.ID {
		t.Fatalf("Settle: winner %v, %v", res, err)
	}
	return f, in, res
}

func TestCrownAtReadsBackWhatSettlementWrote(t *testing.T) {
	ctx := context.Background()
	f, in, res := crownedLedger(t, workspace(t))
	c, err := apply.CrownAt(ctx, f.L, in.Proposal.TargetID)
	if err != nil {
		t.Fatalf("CrownAt: %v", err)
	}
	crown := res.Events[0]
	claims, err := f.L.StandingClaims(ctx)
	if err != nil || len(claims) != 1 {
		t.Fatalf("standing claims %+v (%v)", claims, err)
	}
	all, err := f.L.Attempts(ctx, in.ID)
	if err != nil {
		t.Fatal(err)
	}
	// The fixture records a screen, then the qualification and its
	// reproduction.
	if len(all) != 3 {
		t.Fatalf("%d attempts", len(all))
	}
	for _, w := range []struct {
		field, got, want string
	}{
		{"target_id", c.TargetID, in.Proposal.TargetID},
		{"target_spec_digest", c.TargetSpecDigest, in.Candidate.TargetSpec},
		{"proposal_contribution_digest", c.ProposalContributionDigest, in.Candidate.Proposal},
		{"settlement_candidate_digest", c.SettlementCandidateDigest, res.Rows[0].Candidate},
		{"settlement_evidence_digest", c.SettlementEvidenceDigest, claims[0].EvidenceDigest},
		{"crown_event_digest", c.CrownEventDigest, crown.Digest},
		{"selected_payload_digest", c.SelectedPayloadDigest, in.Proposal.SelectedPayloadDigest},
		{"attribution_digest", c.AttributionDigest, plan.LocalAttribution(identity.MustParse(in.Proposal.ContentHash)).String()},
		{"stack_digest", c.StackDigest, in.Candidate.CandidateStack},
		{"primary attempt view", string(c.Primary.Settlement), string(all[1].Settlement)},
		{"reproduction attempt view", string(c.Reproduction.Settlement), string(all[2].Settlement)},
	} {
		if w.got != w.want || w.got == "" {
			t.Errorf("%s: %q, want %q", w.field, w.got, w.want)
		}
	}
	if crown.EventType != "CROWN" || c.EventSequence != crown.Sequence || c.ProposalID != in.ID {
		t.Errorf("crown %+v from event %+v", c, crown)
	}
}

func TestCrownAtRefuses(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name   string
		spoil  func(t *testing.T, f *applytest.Fixture, in applytest.Intaken) *ledger.Ledger
		target string
		reason string
	}{
		{name: "no crown at the target", target: "activation.silu_and_mul", reason: "no_crown",
			spoil: func(t *testing.T, f *applytest.Fixture, _ applytest.Intaken) *ledger.Ledger { return f.L }},
		// A status no transition led to: the ledger opens, its check fails.
		{name: "a ledger that fails its check", reason: "its last transition went to",
			spoil: func(t *testing.T, f *applytest.Fixture, in applytest.Intaken) *ledger.Ledger {
				if err := f.L.Close(); err != nil {
					t.Fatal(err)
				}
				raw, err := sql.Open("sqlite", "file:"+f.Path)
				if err != nil {
					t.Fatal(err)
				}
				defer raw.Close()
				if _, err := raw.Exec(`UPDATE proposals SET status = 'held' WHERE id = ?`, in.ID); err != nil {
					t.Fatal(err)
				}
				return applytest.OpenLedger(t, f.Path)
			}},
		// The crowned entry's attribution no longer re-derives the crowned
		// proposal: the crown is refused, never bound to a stand-in. A
		// hand edit of the stored stack is caught first, by the row record
		// chain (crown_inconsistent stays as the check behind it).
		{name: "a stack whose entry is not the crowned proposal", reason: "evaluation_stacks row 2: column hcl differs from row record",
			spoil: func(t *testing.T, f *applytest.Fixture, in applytest.Intaken) *ledger.Ledger {
				if err := f.L.Close(); err != nil {
					t.Fatal(err)
				}
				raw, err := sql.Open("sqlite", "file:"+f.Path)
				if err != nil {
					t.Fatal(err)
				}
				defer raw.Close()
				attr := plan.LocalAttribution(identity.MustParse(in.Proposal.ContentHash)).String()
				res, err := raw.Exec(`UPDATE evaluation_stacks SET hcl = replace(hcl, ?, ?) WHERE current = 1`, attr, strings.Repeat("ab", 32))
				if err != nil {
					t.Fatal(err)
				}
				if n, _ := res.RowsAffected(); n != 1 {
					t.Fatalf("%d stacks changed", n)
				}
				return applytest.OpenLedger(t, f.Path)
			}},
		// A crown is history no decision after it reads, so a checkpoint's
		// quick check skips it; CrownAt reads it, and replays everything.
		{name: "a crown edited before a checkpoint", reason: "column hotkey differs from row record",
			spoil: func(t *testing.T, f *applytest.Fixture, in applytest.Intaken) *ledger.Ledger {
				if _, _, err := f.L.Checkpoint(ctx); err != nil {
					t.Fatal(err)
				}
				if err := f.L.Close(); err != nil {
					t.Fatal(err)
				}
				raw, err := sql.Open("sqlite", "file:"+f.Path)
				if err != nil {
					t.Fatal(err)
				}
				defer raw.Close()
				if _, err := raw.Exec(`UPDATE crowns SET hotkey = 'thief'`); err != nil {
					t.Fatal(err)
				}
				l := applytest.OpenLedger(t, f.Path)
				if _, err := l.Check(ctx); err != nil {
					t.Fatalf("the quick check reads no crown: %v", err)
				}
				return l
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, in, _ := crownedLedger(t, workspace(t))
			l := tc.spoil(t, f, in)
			target := tc.target
			if target == "" {
				target = in.Proposal.TargetID
			}
			_, err := apply.CrownAt(ctx, l, target)
			if !errors.Is(err, reject.ErrRejected) || !strings.Contains(err.Error(), tc.reason) {
				t.Fatalf("CrownAt: %v, want a rejection naming %q", err, tc.reason)
			}
		})
	}
}

// TestCrownNeverWritesTheReleaseStack: a crown updates the evaluation
// incumbent in the ledger and nothing else; the release stack file of
// the workspace is byte-identical after it.
func TestCrownNeverWritesTheReleaseStack(t *testing.T) {
	ws := applytest.Workspace(t, "../..")
	testtree.Copy(t, "../../stacks/release.hcl", filepath.Join(ws, "stacks", "release.hcl"))
	path := filepath.Join(ws, "stacks", "release.hcl")
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	crownedLedger(t, ws)
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	st2, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) || !st.ModTime().Equal(st2.ModTime()) {
		t.Errorf("settling a crown rewrote %s", path)
	}
}

// TestCrownAtTakesTheLatestCrown: a second crown at the target retires
// the first; the review reads the second, and the first's retirement,
// in the same chain, does not end it.
func TestCrownAtTakesTheLatestCrown(t *testing.T) {
	ctx := context.Background()
	f, first, _ := crownedLedger(t, workspace(t))
	// Qualify the next proposal against the new incumbent.
	f.Advance(t)
	second := f.Queue(t, "rmsnorm_triton", "5Fsecond", 4100300, nil)
	res, err := apply.Settle(ctx, f.L, f.Options())
	if err != nil || res.Winner != second.ID {
		t.Fatalf("second Settle: %+v, %v", res, err)
	}
	var retired bool
	for _, e := range res.Events {
		retired = retired || (e.EventType == "RETIREMENT" && strings.Contains(string(e.Body), first.Candidate.Proposal))
	}
	if !retired {
		t.Fatalf("the second crown did not retire the first: %+v", res.Events)
	}
	c, err := apply.CrownAt(ctx, f.L, second.Proposal.TargetID)
	if err != nil {
		t.Fatalf("CrownAt: %v", err)
	}
	if c.ProposalID != second.ID || c.EventSequence != res.Events[0].Sequence || c.ProposalContributionDigest != second.Candidate.Proposal ||
		c.StackDigest != second.Candidate.CandidateStack {
		t.Errorf("CrownAt read %+v, want the second crown (event %d, proposal %d)", c, res.Events[0].Sequence, second.ID)
	}
}

// TestCrownAtRefusesANeutralizedCrown: a crown at a member slot of the
// atomic target collective.moe_epilogue.v1, then an atomic crown there
// that displaces it. The second settlement NEUTRALIZES the first crown's
// entry (reason displaced), so the first crown is no longer current and
// CrownAt refuses it naming the event; the atomic crown reads back.
func TestCrownAtRefusesANeutralizedCrown(t *testing.T) {
	ctx := context.Background()
	ws := workspace(t)
	const member, atomic = "collective.ar_residual_rmsnorm", "collective.moe_epilogue.v1"
	name := applytest.Member(t, ws, member)
	f := applytest.New(t, ws, filepath.Join(t.TempDir(), "ledger.db"))
	first := f.Queue(t, name, "5Fminer", 4100200, nil)
	res, err := apply.Settle(ctx, f.L, f.Options())
	if err != nil || res.Winner != first.ID {
		t.Fatalf("first Settle: %+v, %v", res, err)
	}
	if c, err := apply.CrownAt(ctx, f.L, member); err != nil || c.ProposalID != first.ID {
		t.Fatalf("CrownAt(%s) before the atomic crown: %+v, %v", member, c, err)
	}

	f.Advance(t)
	second := f.Queue(t, applytest.Atomic, "5Fsecond", 4100300, nil)
	if d := second.Candidate.Transition.Displaced; len(d) != 1 || d[0].TargetID != member || d[0].Entry != first.Candidate.Proposal {
		t.Fatalf("the atomic candidate displaces %+v, want the crowned entry %s at %s", d, first.Candidate.Proposal, member)
	}
	res, err = apply.Settle(ctx, f.L, f.Options())
	if err != nil || res.Winner != second.ID {
		t.Fatalf("second Settle: %+v, %v", res, err)
	}
	var neutralization *ledger.Event
	var types []string
	for i, e := range res.Events {
		types = append(types, e.EventType)
		if e.EventType == "NEUTRALIZATION" {
			neutralization = &res.Events[i]
		}
	}
	if got := strings.Join(types, " "); got != "CROWN NEUTRALIZATION ADOPTION STACK_TRANSITION" || neutralization == nil ||
		!strings.Contains(string(neutralization.Body), first.Candidate.Proposal) || !strings.Contains(string(neutralization.Body), `"displaced"`) {
		t.Fatalf("the atomic crown's events %s, want its NEUTRALIZATION of %s: %+v", got, first.Candidate.Proposal, res.Events)
	}

	_, err = apply.CrownAt(ctx, f.L, member)
	var r *apply.Rejection
	if !errors.As(err, &r) || r.Reason != apply.ReasonCrownNotCurrent || r.ProposalID != first.ID ||
		!strings.Contains(err.Error(), fmt.Sprintf("NEUTRALIZATION event %d (displaced)", neutralization.Sequence)) {
		t.Fatalf("CrownAt(%s): %v, want %s naming NEUTRALIZATION event %d", member, err, apply.ReasonCrownNotCurrent, neutralization.Sequence)
	}
	c, err := apply.CrownAt(ctx, f.L, atomic)
	if err != nil || c.ProposalID != second.ID || c.ProposalContributionDigest != second.Candidate.Proposal || c.StackDigest != second.Candidate.CandidateStack {
		t.Fatalf("CrownAt(%s): %+v, %v, want the atomic crown of proposal %d", atomic, c, err, second.ID)
	}
}
