package ledger

import (
	"context"
	"strings"
	"testing"
)

// settledLedger is a ledger with an initial stack, one proposal qualified
// by two passes with settlement views, and a crown settled on it.
func settledLedger(t *testing.T) *Ledger {
	t.Helper()
	ctx := context.Background()
	l := openNew(t, ledgerPath(t))
	if _, err := l.InitStack(ctx, stack(0)); err != nil {
		t.Fatal(err)
	}
	id := qualifiedProposal(t, l, "a", 10)
	h, err := l.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s := crownSettlement(t, h, 1)
	s.Crowns[0].ProposalID = id
	s.Outcomes = []Outcome{{ProposalID: id, PlanDigest: hex64("plan"), CandidateDigest: hex64("candidate1"), Outcome: OutcomeCrown,
		Reason: "qualified_win", EventSequence: s.Crowns[0].EventSequence}}
	if _, err := l.Commit(ctx, s); err != nil {
		t.Fatal(err)
	}
	return l
}

// Every row that moves weights is bound by the row record chain: a hand
// edit of any of them, as an attacker with the file would make, is named
// by ledger check.
func TestCheckRefusesRowsTheRecordChainDoesNotBind(t *testing.T) {
	tests := []struct {
		name   string
		sql    string
		wanted string
	}{
		{"standing claim's hotkey", `UPDATE standing_claims SET hotkey = 'thief'`, "standing_claims row " + hex64("arena") + "/norm.rmsnorm: column hotkey differs from row record"},
		{"standing claim's speedup", `UPDATE standing_claims SET speedup_ppm = 9990000`, "column speedup_ppm differs"},
		{"crown's speedup", `UPDATE crowns SET speedup = '9.99'`, "crowns row 1: column speedup differs"},
		{"crown deleted", `DELETE FROM crowns`, "crowns row 1: missing, bound by row record"},
		{"settlement view", `UPDATE attempts SET settlement = '{"side":"z"}' WHERE seq = 3`, "attempts row 1/3: column settlement differs"},
		{"attempt's decision", `UPDATE attempts SET decision = 'FAIL' WHERE seq = 1`, "attempts row 1/1: column decision differs"},
		{"proposal's hotkey", `UPDATE proposals SET hotkey = 'thief'`, "proposals row 1: column hotkey differs"},
		{"current flag moved back", `UPDATE evaluation_stacks SET current = NULL; UPDATE evaluation_stacks SET current = 1 WHERE id = 1`, "evaluation_stacks row 1: column current differs"},
		{"stack HCL edited", `UPDATE evaluation_stacks SET hcl = '# another stack' || char(10) WHERE id = 2`, "evaluation_stacks row 2: column hcl differs"},
		{"outcome's reason", `UPDATE settlement_outcomes SET reason = 'forged'`, "settlement_outcomes row 1/1: column reason differs"},
		{"claim added by hand", `INSERT INTO discovery_claims (event_sequence, arena_digest, contribution_digest, hotkey, speedup_ppm, awarded_block, evidence_digest)
			VALUES (2, '` + hex64("arena") + `', '` + hex64("c") + `', 'thief', 2000000, 5, '` + hex64("e") + `')`, "discovery_claims row 2: no row record binds it"},
		{"record rewritten", `UPDATE row_records SET body = replace(body, '"hk"', '"thief"') WHERE event_type = 'settlement'`, "row record chain: event"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			l := settledLedger(t)
			if r, err := l.Check(ctx); err != nil {
				t.Fatalf("before the edit: %v (%v)", err, r.Problems)
			}
			if _, err := l.db.ExecContext(ctx, tc.sql); err != nil {
				t.Fatal(err)
			}
			r, err := l.Check(ctx)
			if err == nil {
				t.Fatalf("check passed after %s", tc.sql)
			}
			if !strings.Contains(strings.Join(r.Problems, "\n"), tc.wanted) {
				t.Errorf("problems %q do not name %q", r.Problems, tc.wanted)
			}
		})
	}
}

// The record head moves with every bound write and check reports it.
func TestCheckReportsTheRecordHead(t *testing.T) {
	ctx := context.Background()
	l := settledLedger(t)
	r, err := l.Check(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// stack_init, intake (with its first transition), six transitions,
	// three attempts, settlement.
	if r.RecordHead.Sequence != 12 || r.Counts.RowRecords != 12 || len(r.RecordHead.Digest) != 64 {
		t.Errorf("record head %+v, %d records; want sequence 12", r.RecordHead, r.Counts.RowRecords)
	}
}
