package ledger

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// checkpointed returns a ledger with three crowns, a live proposal and a
// finished one, a checkpoint, and a fourth crown after it; closed.
func checkpointed(t *testing.T) (path string, live, finished int64, cp Head) {
	t.Helper()
	ctx := context.Background()
	path = ledgerPath(t)
	l := openNew(t, path)
	if _, err := l.InitStack(ctx, stack(0)); err != nil {
		t.Fatal(err)
	}
	var h Head
	for n := 1; n <= 3; n++ {
		rec, err := l.Commit(ctx, crownSettlement(t, h, n))
		if err != nil {
			t.Fatal(err)
		}
		h = rec.Head
	}
	res, err := l.Intake(ctx, snapshot(t, writeBundle(t, "live")), request("hk-live", 10))
	if err != nil {
		t.Fatal(err)
	}
	live = res.Proposal.ID
	if res, err = l.Intake(ctx, snapshot(t, writeBundle(t, "finished")), request("hk-done", 11)); err != nil {
		t.Fatal(err)
	}
	finished = res.Proposal.ID
	if err := l.Transition(ctx, finished, Failed, "operator refusal"); err != nil {
		t.Fatal(err)
	}
	if _, cp, err = l.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Commit(ctx, crownSettlement(t, h, 4)); err != nil {
		t.Fatal(err)
	}
	l.Close()
	return path, live, finished, cp
}

// TestCheckpoint: after a checkpoint, Open and Check verify from it and
// still catch every edit of what a decision reads, or of anything after
// the checkpoint; an edit of history no decision reads passes them and
// is caught by CheckFull. Each case says where it must be caught.
func TestCheckpoint(t *testing.T) {
	ctx := context.Background()
	const (
		atOpen  = "open"
		atCheck = "check"
		atFull  = "full"
	)
	for _, c := range []struct {
		name  string
		edit  func(live, finished int64, cp Head) (string, []any)
		where string
		want  string
	}{
		{"a settlement event before the checkpoint", func(_, _ int64, _ Head) (string, []any) {
			return `UPDATE settlement_events SET body = replace(body, 'qualified_win', 'qualified_won') WHERE sequence = 1`, nil
		}, atFull, "settlement chain: event 1: digest"},
		{"an old crown's hotkey", func(_, _ int64, _ Head) (string, []any) {
			return `UPDATE crowns SET hotkey = 'thief' WHERE event_sequence = 1`, nil
		}, atFull, "crowns row 1: column hotkey differs"},
		{"a finished proposal's hotkey", func(_, finished int64, _ Head) (string, []any) {
			return `UPDATE proposals SET hotkey = 'thief' WHERE id = ?`, []any{finished}
		}, atFull, "column hotkey differs"},
		{"the standing claim's hotkey", func(_, _ int64, _ Head) (string, []any) {
			return `UPDATE standing_claims SET hotkey = 'thief'`, nil
		}, atCheck, "standing_claims row"},
		{"the current stack's HCL", func(_, _ int64, _ Head) (string, []any) {
			return `UPDATE evaluation_stacks SET hcl = '# edited' WHERE current = 1`, nil
		}, atCheck, "column hcl differs"},
		{"a live proposal's hotkey", func(live, _ int64, _ Head) (string, []any) {
			return `UPDATE proposals SET hotkey = 'thief' WHERE id = ?`, []any{live}
		}, atCheck, "column hotkey differs from row record"},
		{"a finished proposal made live", func(_, finished int64, _ Head) (string, []any) {
			return `UPDATE proposals SET status = 'published', reason = 'published' WHERE id = ?;
				UPDATE proposal_transitions SET to_status = 'published' WHERE proposal_id = ? AND seq = (SELECT max(seq) FROM proposal_transitions WHERE proposal_id = ?)`,
				[]any{finished, finished, finished}
		}, atCheck, "a decision reads it, yet no row record since checkpoint"},
		{"a settlement event after the checkpoint", func(_, _ int64, _ Head) (string, []any) {
			return `UPDATE settlement_events SET body = replace(body, 'qualified_win', 'qualified_won') WHERE sequence = 10`, nil
		}, atOpen, "settlement chain: event 10: digest"},
		{"the event the checkpoint names", func(_, _ int64, _ Head) (string, []any) {
			return `UPDATE settlement_events SET body = replace(body, 'qualified_win', 'qualified_won') WHERE sequence = 9`, nil
		}, atOpen, "settlement chain: event 9: digest"},
		{"the checkpoint's heads", func(_, _ int64, cp Head) (string, []any) {
			return `UPDATE row_records SET body = replace(body, '"sequence":9', '"sequence":3') WHERE sequence = ?`, []any{cp.Sequence}
		}, atOpen, "checkpoint: row record chain"},
		{"the checkpoint index moved to another record", func(_, _ int64, cp Head) (string, []any) {
			return `UPDATE checkpoints SET record_sequence = ? WHERE record_sequence = ?`, []any{cp.Sequence - 1, cp.Sequence}
		}, atOpen, "a transition record"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path, live, finished, cp := checkpointed(t)
			query, args := c.edit(live, finished, cp)
			res, err := rawDB(t, path).Exec(query, args...)
			if err != nil {
				t.Fatal(err)
			}
			if n, _ := res.RowsAffected(); n == 0 {
				t.Fatal("the edit changed nothing")
			}
			refused := func(stage string, err error) {
				t.Helper()
				if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("%s: %v, want a refusal naming %q", stage, err, c.want)
				}
			}
			l, err := Open(ctx, path, Options{})
			if c.where == atOpen {
				refused("Open", err)
				return
			}
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			defer l.Close()
			r, err := l.Check(ctx)
			if r.Full || r.Checkpoint != cp {
				t.Fatalf("Check was not the quick one from checkpoint %+v: full %v from %+v", cp, r.Full, r.Checkpoint)
			}
			if c.where == atCheck {
				refused("Check", err)
				return
			}
			if err != nil {
				t.Fatalf("Check: %v: history no decision reads is CheckFull's", err)
			}
			_, err = l.CheckFull(ctx)
			refused("CheckFull", err)
			if _, _, err := l.Checkpoint(ctx); !errors.Is(err, ErrRefused) {
				t.Fatalf("a checkpoint over a ledger that fails its full check: %v", err)
			}
		})
	}
}

// TestCheckpointLeavesAnUneditedLedgerClean: the quick and the full check
// agree on an unedited ledger, before and after a second checkpoint.
func TestCheckpointLeavesAnUneditedLedgerClean(t *testing.T) {
	ctx := context.Background()
	path, _, _, cp := checkpointed(t)
	l, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	quick, err := l.Check(ctx)
	if err != nil || quick.Full || quick.Checkpoint != cp {
		t.Fatalf("quick check: %+v, %v", quick, err)
	}
	full, err := l.CheckFull(ctx)
	if err != nil || !full.Full || full.Head != quick.Head || full.RecordHead != quick.RecordHead {
		t.Fatalf("full check %+v against quick %+v: %v", full, quick, err)
	}
	_, cp2, err := l.Checkpoint(ctx)
	if err != nil || cp2.Sequence <= cp.Sequence {
		t.Fatalf("second checkpoint %+v after %+v: %v", cp2, cp, err)
	}
	if r, err := l.Check(ctx); err != nil || r.Checkpoint != cp2 {
		t.Fatalf("quick check after the second checkpoint: %+v, %v", r, err)
	}
}

// TestClearCopyAfterACheckpoint: clearing a copy verdict is the one way a
// finished (failed) proposal becomes live again, so the clearing rebinds
// its rows: the quick check from an earlier checkpoint accepts it.
func TestClearCopyAfterACheckpoint(t *testing.T) {
	ctx := context.Background()
	l := openNew(t, ledgerPath(t))
	for i, hk := range []string{"hkA", "hkB"} {
		readme := ""
		if i == 1 {
			readme = "copy\n"
		}
		snap, r := inspected(t, kernelBundle(t, rmsKernel, readme), hk, int64(10+i))
		if _, err := l.Intake(ctx, snap, r); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := l.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, err := l.ClearCopy(ctx, 2, "the authors are one team"); err != nil {
		t.Fatal(err)
	}
	if r, err := l.Check(ctx); err != nil || r.Full {
		t.Fatalf("quick check after clearing: %+v, %v", r, err)
	}
	if _, err := l.CheckFull(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestBackupReplaysTheWholeHistory: a backup is what a damaged ledger is
// restored from, so its copy gets the full check even after a
// checkpoint: an edit of history the quick check skips is refused.
func TestBackupReplaysTheWholeHistory(t *testing.T) {
	ctx := context.Background()
	path, _, _, _ := checkpointed(t)
	if _, err := rawDB(t, path).Exec(`UPDATE crowns SET hotkey = 'thief' WHERE event_sequence = 1`); err != nil {
		t.Fatal(err)
	}
	l, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.Check(ctx); err != nil {
		t.Fatalf("quick check: %v", err)
	}
	if _, err := l.Backup(ctx, path+".bak"); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "crowns row 1: column hotkey differs") {
		t.Fatalf("backup of an edited history: %v", err)
	}
}

// TestCheckpointHoldsLiveLeases: a checkpoint records the lease state of
// every live proposal, and after it a lease is folded from that state and
// the events since, so a lease event before the checkpoint (not verified
// on the quick path) never feeds a reclaim or a back-off: here an edited
// back-off is still enforced, and CheckFull names the edit.
func TestCheckpointHoldsLiveLeases(t *testing.T) {
	ctx := context.Background()
	path, backingOff := leasedLedger(t)
	l := reopen(t, path, "gpu-7")
	res, err := l.Intake(ctx, snapshot(t, writeBundle(t, "second")), request("hk2", 11))
	if err != nil {
		t.Fatal(err)
	}
	leasedID := res.Proposal.ID
	if _, err := l.TakeLease(ctx, backingOff, "", leaseT0, leasePolicy); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Reclaim(ctx, backingOff, CauseExpired, "", leaseT0.Add(time.Hour), leasePolicy); err != nil {
		t.Fatal(err)
	}
	held, err := l.TakeLease(ctx, leasedID, "/work/run", leaseT0, leasePolicy)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := l.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	l.Close()
	// The reclaim's back-off ends at 04:05; the edit ends it at 03:05.
	if _, err := rawDB(t, path).Exec(`UPDATE lease_events SET body = replace(body, '"not_before":"2026-12-06T04:05:00Z"', '"not_before":"2026-12-06T03:05:00Z"') WHERE sequence = 2`); err != nil {
		t.Fatal(err)
	}
	l = reopen(t, path, "")
	if ls, err := l.LeaseOf(ctx, leasedID); err != nil || !ls.Live || ls.Holder != held.Holder || !ls.ExpiresAt.Equal(held.ExpiresAt) || ls.Attempts != 1 {
		t.Fatalf("the live lease after the checkpoint: %+v, %v; want %+v", ls, err, held)
	}
	ls, err := l.LeaseOf(ctx, backingOff)
	if err != nil || ls.Live || ls.Lost != 1 || !ls.NotBefore.Equal(leaseT0.Add(65*time.Minute)) {
		t.Fatalf("the reclaimed lease after the checkpoint: %+v, %v", ls, err)
	}
	if _, err := l.TakeLease(ctx, backingOff, "", leaseT0.Add(time.Hour), leasePolicy); !errors.Is(err, ErrBackingOff) {
		t.Fatalf("a lease during the recorded back-off: %v", err)
	}
	if _, err := l.CheckFull(ctx); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "lease chain: event 2: digest") {
		t.Fatalf("CheckFull: %v", err)
	}
}

// TestCheckBeforeWrite: below the threshold the check before a write is
// the quick one from the latest checkpoint and records nothing; at or
// past it, the full check and a new checkpoint the next check starts
// from; with no checkpoint the records are counted from the start. An
// edited row a decision reads is refused on both paths; an edit of
// history no decision reads is the full check's, so it is refused once
// the threshold is crossed, and no checkpoint is recorded over it.
func TestCheckBeforeWrite(t *testing.T) {
	ctx := context.Background()
	below := func(since int64) int { return int(since) + 1 }
	at := func(since int64) int { return int(since) }
	past := func(since int64) int { return int(since) - 1 }
	for _, c := range []struct {
		name  string
		every func(since int64) int
		// drop deletes the checkpoint's index row: no checkpoint.
		drop bool
		edit func(live, finished int64) (string, []any)
		// record: a new checkpoint is recorded; full: the check replayed
		// everything; want: the refusal names it.
		record, full bool
		want         string
	}{
		{name: "below the threshold", every: below},
		{name: "at the threshold", every: at, record: true, full: true},
		{name: "past the threshold", every: past, record: true, full: true},
		{name: "no checkpoint, below the threshold", every: below, drop: true, full: true},
		{name: "no checkpoint, at the threshold", every: at, drop: true, record: true, full: true},
		{name: "a live row edited, below the threshold", every: below, edit: func(live, _ int64) (string, []any) {
			return `UPDATE proposals SET hotkey = 'thief' WHERE id = ?`, []any{live}
		}, want: "column hotkey differs from row record"},
		{name: "a live row edited, at the threshold", every: at, full: true, edit: func(live, _ int64) (string, []any) {
			return `UPDATE proposals SET hotkey = 'thief' WHERE id = ?`, []any{live}
		}, want: "column hotkey differs from row record"},
		{name: "a finished row edited, below the threshold", every: below, edit: func(_, finished int64) (string, []any) {
			return `UPDATE proposals SET hotkey = 'thief' WHERE id = ?`, []any{finished}
		}},
		{name: "a finished row edited, at the threshold", every: at, full: true, edit: func(_, finished int64) (string, []any) {
			return `UPDATE proposals SET hotkey = 'thief' WHERE id = ?`, []any{finished}
		}, want: "column hotkey differs from row record"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path, live, finished, cp := checkpointed(t)
			raw := rawDB(t, path)
			if c.drop {
				if _, err := raw.Exec(`DELETE FROM checkpoints`); err != nil {
					t.Fatal(err)
				}
				cp = Head{}
			}
			if c.edit != nil {
				query, args := c.edit(live, finished)
				if res, err := raw.Exec(query, args...); err != nil {
					t.Fatal(err)
				} else if n, _ := res.RowsAffected(); n != 1 {
					t.Fatalf("the edit changed %d rows", n)
				}
			}
			checkpoints := func() int {
				t.Helper()
				var n int
				if err := raw.QueryRow(`SELECT count(*) FROM checkpoints`).Scan(&n); err != nil {
					t.Fatal(err)
				}
				return n
			}
			before := checkpoints()
			l, err := Open(ctx, path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			since, err := recordsSince(ctx, l.db, l.cp)
			if err != nil {
				t.Fatal(err)
			}
			// After the checkpoint: the fourth crown's three events and
			// its row record.
			if !c.drop && since != 4 {
				t.Fatalf("%d chain records since the checkpoint, want 4", since)
			}
			l.checkpointEvery = c.every(since)
			r, err := l.CheckBeforeWrite(ctx)
			if c.want != "" {
				if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
					t.Fatalf("%v, want a refusal naming %s and %q", err, path, c.want)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if r.Full != c.full {
				t.Errorf("full %v, want %v", r.Full, c.full)
			}
			if got := checkpoints() - before; got != map[bool]int{false: 0, true: 1}[c.record] {
				t.Fatalf("%d checkpoints recorded", got)
			}
			if !c.record {
				// The quick check names the checkpoint it ran from; a
				// full one none.
				if want := map[bool]Head{false: cp}[c.full]; r.Checkpoint != want {
					t.Errorf("checked from %+v, want %+v", r.Checkpoint, want)
				}
				return
			}
			if r.Checkpoint.Sequence <= cp.Sequence || r.Checkpoint != l.cp.record {
				t.Fatalf("checkpoint %+v after %+v (the ledger's latest: %+v)", r.Checkpoint, cp, l.cp.record)
			}
			// The next write's check is the quick one from it, with
			// nothing since.
			if n, err := recordsSince(ctx, l.db, l.cp); err != nil || n != 0 {
				t.Fatalf("%d chain records since the new checkpoint (%v)", n, err)
			}
			if q, err := l.CheckBeforeWrite(ctx); err != nil || q.Full || q.Checkpoint != r.Checkpoint {
				t.Fatalf("the next check: full %v from %+v (%v), want the quick one from %+v", q.Full, q.Checkpoint, err, r.Checkpoint)
			}
		})
	}
}

// TestClearCopyRefusesAHandEdit: clearing a copy verdict rebinds the
// proposal's rows, which the quick check does not read while it is
// failed; a hand edit of them must be refused, not bound into the chain.
// ClearCopy replays the whole history first, so the edit is refused, the
// proposal stays failed and the full check still names the edit.
func TestClearCopyRefusesAHandEdit(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name, edit, want string
	}{
		{"the proposal's hotkey", `UPDATE proposals SET hotkey = 'thief' WHERE id = 2`, "proposals row 2: column hotkey differs from row record"},
		{"its first transition's reason", `UPDATE proposal_transitions SET reason = 'edited' WHERE proposal_id = 2 AND seq = 1`,
			"proposal_transitions row 2/1: column reason differs from row record"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := ledgerPath(t)
			l := openNew(t, path)
			for i, hk := range []string{"hkA", "hkB"} {
				readme := ""
				if i == 1 {
					readme = "copy\n"
				}
				snap, r := inspected(t, kernelBundle(t, rmsKernel, readme), hk, int64(10+i))
				if _, err := l.Intake(ctx, snap, r); err != nil {
					t.Fatal(err)
				}
			}
			if _, _, err := l.Checkpoint(ctx); err != nil {
				t.Fatal(err)
			}
			l.Close()
			if _, err := rawDB(t, path).Exec(c.edit); err != nil {
				t.Fatal(err)
			}
			l, err := Open(ctx, path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if _, err := l.Check(ctx); err != nil {
				t.Fatalf("quick check: %v (the edit is of a failed proposal, which it does not read)", err)
			}
			if _, _, err := l.ClearCopy(ctx, 2, "the authors are one team"); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("clear copy over the edit: %v, want a refusal naming %q", err, c.want)
			}
			if p, err := l.Proposal(ctx, 2); err != nil || p.Status != Failed {
				t.Fatalf("proposal 2 after the refusal: %+v (%v)", p, err)
			}
			if _, err := l.CheckFull(ctx); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("full check after the refusal: %v, want a refusal naming %q", err, c.want)
			}
		})
	}
}
