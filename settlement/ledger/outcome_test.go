package ledger

import (
	"context"
	"errors"
	"testing"
)

// qualifiedProposal takes a bundle in and walks it to qualified with two
// passing qualifications carrying views.
func qualifiedProposal(t *testing.T, l *Ledger, seed string, block int64) int64 {
	t.Helper()
	ctx := context.Background()
	res, err := l.Intake(ctx, snapshot(t, writeBundle(t, seed)), request("hk"+seed, block))
	if err != nil {
		t.Fatal(err)
	}
	id := res.Proposal.ID
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(l.Transition(ctx, id, Screening, ""))
	_, err = l.RecordAttempt(ctx, id, Attempt{Stage: StageScreen, ReportDigest: hex64("s"), EvidenceAddress: hex64("s"), Decision: "PASS"})
	must(err)
	must(l.Transition(ctx, id, Promoted, ""))
	must(l.Transition(ctx, id, Qualifying, ""))
	for i, view := range []string{`{"side":"a"}`, `{"side":"b"}`} {
		_, err = l.RecordAttempt(ctx, id, Attempt{Stage: StageQualification, ReportDigest: hex64(seed + view), EvidenceAddress: hex64(view), Decision: "PASS", Settlement: []byte(view)})
		must(err)
		if i == 0 {
			must(l.Transition(ctx, id, ReproductionPending, ""))
			must(l.Transition(ctx, id, Qualifying, ""))
		}
	}
	must(l.Transition(ctx, id, Qualified, ""))
	return id
}

func TestSettlementViewsMustBeCanonicalPasses(t *testing.T) {
	ctx := context.Background()
	l := openNew(t, ledgerPath(t))
	res, err := l.Intake(ctx, snapshot(t, writeBundle(t, "v")), request("hk", 1))
	if err != nil {
		t.Fatal(err)
	}
	id := res.Proposal.ID
	if err := l.Transition(ctx, id, Screening, ""); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		a    Attempt
	}{
		{"a screen", Attempt{Stage: StageScreen, Decision: "PASS", Settlement: []byte(`{"a":1}`)}},
		{"a FAIL", Attempt{Stage: StageQualification, Decision: "FAIL", Settlement: []byte(`{"a":1}`)}},
		{"not canonical", Attempt{Stage: StageQualification, Decision: "PASS", Settlement: []byte(`{"b":1, "a":2}`)}},
		{"not an object", Attempt{Stage: StageQualification, Decision: "PASS", Settlement: []byte(`[1]`)}},
	}
	for _, tc := range cases {
		tc.a.ReportDigest, tc.a.EvidenceAddress = hex64("r"), hex64("e")
		if _, err := l.RecordAttempt(ctx, id, tc.a); !errors.Is(err, ErrIllegal) {
			t.Errorf("%s with a settlement view: %v", tc.name, err)
		}
	}
}

func TestOutcomesAndTheSettlementQueue(t *testing.T) {
	ctx := context.Background()
	l := openNew(t, ledgerPath(t))
	if _, err := l.InitStack(ctx, stack(1)); err != nil {
		t.Fatal(err)
	}
	a := qualifiedProposal(t, l, "a", 10)
	b := qualifiedProposal(t, l, "b", 11)
	q, err := l.SettlementQueue(ctx)
	if err != nil || len(q) != 2 || q[0].Proposal.ID != a || len(q[0].Passes) != 2 || string(q[0].Passes[1].Settlement) != `{"side":"b"}` {
		t.Fatalf("queue %+v (%v)", q, err)
	}
	hold := Outcome{ProposalID: b, PlanDigest: hex64("plan"), CandidateDigest: hex64("cand b"), Outcome: OutcomeHold, Reason: "stale_incumbent"}
	refused := []struct {
		name string
		o    Outcome
	}{
		{"a crown without its event", Outcome{ProposalID: a, PlanDigest: hex64("plan"), CandidateDigest: hex64("cand a"), Outcome: OutcomeCrown, Reason: "qualified_win", EventSequence: 1}},
		{"a hold naming an event", Outcome{ProposalID: b, PlanDigest: hex64("plan"), CandidateDigest: hex64("cand b"), Outcome: OutcomeHold, Reason: "conflict_lost", EventSequence: 1}},
		{"an unknown outcome", Outcome{ProposalID: b, PlanDigest: hex64("plan"), CandidateDigest: hex64("cand b"), Outcome: "MAYBE", Reason: "x"}},
	}
	for _, tc := range refused {
		if _, err := l.Commit(ctx, Settlement{Outcomes: []Outcome{tc.o}}); !errors.Is(err, ErrIllegal) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	if _, err := l.Commit(ctx, Settlement{Outcomes: []Outcome{hold}}); err != nil {
		t.Fatalf("a hold-only settlement: %v", err)
	}
	p, _ := l.Proposal(ctx, b)
	if p.Status != Held || p.Reason != "stale_incumbent" {
		t.Errorf("held proposal is %s %s", p.Status, p.Reason)
	}
	// Held, it is not queued and cannot be held again.
	if q, _ := l.SettlementQueue(ctx); len(q) != 1 || q[0].Proposal.ID != a {
		t.Errorf("queue after the hold: %+v", q)
	}
	if _, err := l.Commit(ctx, Settlement{Outcomes: []Outcome{hold}}); !errors.Is(err, ErrIllegal) {
		t.Errorf("holding a held proposal: %v", err)
	}
	if out, err := l.Outcomes(ctx, b); err != nil || len(out) != 1 || out[0].Seq != 1 || out[0].EventSequence != 0 {
		t.Errorf("outcomes %+v (%v)", out, err)
	}
	if r, err := l.Check(ctx); err != nil || r.Counts.Outcomes != 1 {
		t.Errorf("check %+v (%v)", r, err)
	}
}
