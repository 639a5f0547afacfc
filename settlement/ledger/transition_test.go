package ledger

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// transitioned is a ledger holding a live proposal in screening and a
// failed one, each with four transitions (intake's reserved, fetching
// and published, then the one under test), and with a checkpoint after
// them when checkpointed is set. It returns the ledger's path, the two
// proposals and the checkpoint (zero without one).
func transitioned(t *testing.T, checkpointed bool) (path string, live, failed int64, cp Head) {
	t.Helper()
	ctx := context.Background()
	path = ledgerPath(t)
	l := openNew(t, path)
	if _, err := l.InitStack(ctx, stack(0)); err != nil {
		t.Fatal(err)
	}
	res, err := l.Intake(ctx, snapshot(t, writeBundle(t, "live")), request("hk-live", 10))
	if err != nil {
		t.Fatal(err)
	}
	live = res.Proposal.ID
	if err := l.Transition(ctx, live, Screening, ""); err != nil {
		t.Fatal(err)
	}
	if res, err = l.Intake(ctx, snapshot(t, writeBundle(t, "failed")), request("hk-failed", 11)); err != nil {
		t.Fatal(err)
	}
	failed = res.Proposal.ID
	if err := l.Transition(ctx, failed, Failed, "operator refusal"); err != nil {
		t.Fatal(err)
	}
	for _, id := range []int64{live, failed} {
		var last int
		if err := l.db.QueryRowContext(ctx, `SELECT max(seq) FROM proposal_transitions WHERE proposal_id = ?`, id).Scan(&last); err != nil || last != 4 {
			t.Fatalf("proposal %d: last transition %d (%v), the cases edit transition 4", id, last, err)
		}
	}
	if checkpointed {
		if _, cp, err = l.Checkpoint(ctx); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	return path, live, failed, cp
}

// TestTransitionsAreBound: a proposal's status is checked against its
// last transition, so an edit of both together, a deleted last
// transition with the status set back, or a forged transition with the
// status set to it must be refused by the bound transitions: by the
// quick check (from a checkpoint or not) for a live proposal, and always
// by the full check.
func TestTransitionsAreBound(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name string
		edit func(live, failed int64) (string, []any)
		// the transition the problem names
		row func(live, failed int64) string
	}{
		{"a screening proposal made qualified with its last transition", func(live, _ int64) (string, []any) {
			return `UPDATE proposals SET status = 'qualified' WHERE id = ?;
				UPDATE proposal_transitions SET to_status = 'qualified' WHERE proposal_id = ? AND seq = 4`, []any{live, live}
		}, func(live, _ int64) string {
			return fmt.Sprintf("proposal_transitions row %d/4: column to_status differs", live)
		}},
		{"a failed proposal made published again with its last transition", func(_, failed int64) (string, []any) {
			return `UPDATE proposals SET status = 'published', reason = 'published' WHERE id = ?;
				UPDATE proposal_transitions SET to_status = 'published', reason = 'published' WHERE proposal_id = ? AND seq = 4`, []any{failed, failed}
		}, func(_, failed int64) string { return fmt.Sprintf("proposal_transitions row %d/4", failed) }},
		{"a live proposal's last transition deleted and its status set back", func(live, _ int64) (string, []any) {
			return `UPDATE proposals SET status = 'published', reason = 'published' WHERE id = ?;
				DELETE FROM proposal_transitions WHERE proposal_id = ? AND seq = 4`, []any{live, live}
		}, func(live, _ int64) string {
			return fmt.Sprintf("proposal_transitions row %d/4: missing, bound by row record", live)
		}},
		{"a forged transition with the status set to it", func(live, _ int64) (string, []any) {
			return `UPDATE proposals SET status = 'qualified' WHERE id = ?;
				INSERT INTO proposal_transitions (proposal_id, seq, from_status, to_status, reason) VALUES (?, 5, 'screening', 'qualified', '')`, []any{live, live}
		}, func(live, _ int64) string { return fmt.Sprintf("proposal_transitions row %d/5: ", live) }},
	} {
		for _, checkpointed := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/checkpoint=%v", c.name, checkpointed), func(t *testing.T) {
				path, live, failed, cp := transitioned(t, checkpointed)
				query, args := c.edit(live, failed)
				if _, err := rawDB(t, path).Exec(query, args...); err != nil {
					t.Fatal(err)
				}
				want := c.row(live, failed)
				l, err := Open(ctx, path, Options{})
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				defer l.Close()
				refused := func(stage string, r *Report, err error) {
					t.Helper()
					if !errors.Is(err, ErrRefused) || !strings.Contains(strings.Join(r.Problems, "\n"), want) {
						t.Errorf("%s: %v, problems %q; want a refusal naming %q", stage, err, r.Problems, want)
					}
				}
				r, err := l.Check(ctx)
				if r.Checkpoint != cp || (checkpointed && r.Full) {
					t.Fatalf("Check ran from checkpoint %+v (full %v), want %+v", r.Checkpoint, r.Full, cp)
				}
				refused("Check", r, err)
				r, err = l.CheckFull(ctx)
				refused("CheckFull", r, err)
			})
		}
	}
}
