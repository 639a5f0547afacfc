package ledger

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Report is what Check found.
type Report struct {
	SchemaVersion int    `json:"schema_version"`
	Integrity     string `json:"integrity"` // "ok", or SQLite's first complaint
	Head          Head   `json:"head"`
	// RecordHead is the end of the row record chain, which binds every
	// row that decides a payout: pin it with the settlement head.
	RecordHead   Head     `json:"record_head"`
	CurrentStack string   `json:"current_stack"` // digest; empty before the first stack
	Counts       Counts   `json:"counts"`
	Problems     []string `json:"problems"`
	// Full says every row and event was replayed (CheckFull, or a ledger
	// with no checkpoint yet); otherwise Check verified from Checkpoint,
	// the latest checkpoint's record (docs/reference/ledger.md).
	Full       bool `json:"full"`
	Checkpoint Head `json:"checkpoint"`
	// Stranded are proposals in flight whose run is gone: past their
	// lease, leased by a run on this host (the checker holds the writer
	// lock such a run would hold), or with no lease at all. Not damage:
	// the next qualify --ledger reclaims them.
	Stranded []InFlight `json:"stranded"`
	// Leased are proposals in flight under a live lease of a run on
	// another host.
	Leased []InFlight `json:"leased"`
}

// Counts are the rows of each table.
type Counts struct {
	Proposals       int `json:"proposals"`
	Attempts        int `json:"attempts"`
	Events          int `json:"events"`
	Stacks          int `json:"stacks"`
	Crowns          int `json:"crowns"`
	StandingClaims  int `json:"standing_claims"`
	DiscoveryClaims int `json:"discovery_claims"`
	Outcomes        int `json:"settlement_outcomes"`
	CopyVerdicts    int `json:"copy_verdicts"`
	IntakeEvents    int `json:"intake_events"`
	RowRecords      int `json:"row_records"`
	LeaseEvents     int `json:"lease_events"`
}

// OK reports whether the check found nothing wrong.
func (r *Report) OK() bool { return len(r.Problems) == 0 }

// Check is the check every command runs before it acts. On a ledger with
// a checkpoint it costs what happened since: the chains from the heads
// the checkpoint names, and every live row (a row a decision reads)
// against the records from the checkpoint on; history no decision reads
// is left to CheckFull. Without a checkpoint it is CheckFull.
func (l *Ledger) Check(ctx context.Context) (*Report, error) {
	cp, err := latestCheckpoint(ctx, l.db)
	if err != nil {
		return &Report{Stranded: []InFlight{}, Leased: []InFlight{}, Problems: []string{trimRefused(err)}}, err
	}
	return l.check(ctx, cp)
}

// CheckFull runs SQLite's integrity_check and foreign_key_check, then the
// ledger's own invariants: the schema version, the whole settlement chain
// and intake chain, every bound row exactly as the row record chain
// records it (record.go), exactly one current stack once any exists, every
// proposal's status known and equal to its last transition, and every
// standing copy verdict's proposal failed by it. It returns the report and, when
// anything is wrong, an error under ErrRefused naming the first problem.
func (l *Ledger) CheckFull(ctx context.Context) (*Report, error) {
	return l.check(ctx, checkpoint{})
}

// check verifies from cp; the zero cp replays everything.
func (l *Ledger) check(ctx context.Context, cp checkpoint) (*Report, error) {
	r := &Report{Stranded: []InFlight{}, Leased: []InFlight{}, Full: cp.record.Sequence == 0, Checkpoint: cp.record}
	if r.Full {
		if err := l.checkSQLite(ctx, r); err != nil {
			return r, err
		}
	} else {
		// SQLite's own checks read every page; the quick check leaves
		// them to CheckFull. A damaged page a decision reads still fails
		// that read (SQLITE_CORRUPT, a refusal).
		r.Integrity = "not checked (quick check from a checkpoint; ledger check --full runs it)"
	}
	applied, err := appliedMigrations(ctx, l.db)
	if err != nil {
		return r, err
	}
	r.SchemaVersion = maxKey(applied)
	if r.SchemaVersion != SchemaVersion() {
		r.Problems = append(r.Problems, fmt.Sprintf("schema version %d, this build's is %d", r.SchemaVersion, SchemaVersion()))
	}
	if h, err := verifyChainFrom(ctx, l.db, settlementChain, cp.from(settlementChain)); err != nil {
		r.Problems = append(r.Problems, trimRefused(err))
	} else {
		r.Head = h
	}
	if _, err := verifyChainFrom(ctx, l.db, intakeChain, cp.from(intakeChain)); err != nil {
		r.Problems = append(r.Problems, trimRefused(err))
	}
	if _, err := verifyChainFrom(ctx, l.db, leaseChain, cp.from(leaseChain)); err != nil {
		r.Problems = append(r.Problems, trimRefused(err))
	} else if r.Full {
		if err := l.checkLeases(ctx, r); err != nil {
			return r, err
		}
	}
	if r.Full {
		r.RecordHead, err = l.checkRows(ctx, r)
	} else {
		r.RecordHead, err = l.checkLiveRows(ctx, r, cp)
	}
	if err != nil {
		return r, err
	}
	for _, c := range []struct {
		dst   *int
		table string
	}{
		{&r.Counts.Proposals, "proposals"}, {&r.Counts.Attempts, "attempts"}, {&r.Counts.Events, "settlement_events"}, {&r.Counts.Outcomes, "settlement_outcomes"},
		{&r.Counts.Stacks, "evaluation_stacks"}, {&r.Counts.Crowns, "crowns"}, {&r.Counts.StandingClaims, "standing_claims"},
		{&r.Counts.DiscoveryClaims, "discovery_claims"}, {&r.Counts.CopyVerdicts, "copy_verdicts"}, {&r.Counts.IntakeEvents, "intake_events"},
		{&r.Counts.RowRecords, "row_records"}, {&r.Counts.LeaseEvents, "lease_events"},
	} {
		if err := l.db.QueryRowContext(ctx, `SELECT count(*) FROM `+c.table).Scan(c.dst); err != nil {
			return r, classify(err)
		}
	}
	var current int
	if err := l.db.QueryRowContext(ctx, `SELECT count(*) FROM evaluation_stacks WHERE current = 1`).Scan(&current); err != nil {
		return r, classify(err)
	}
	switch {
	case r.Counts.Stacks > 0 && current != 1:
		r.Problems = append(r.Problems, fmt.Sprintf("%d evaluation stacks, %d of them current (want exactly one)", r.Counts.Stacks, current))
	case current == 1:
		cur, err := l.CurrentStack(ctx)
		if err != nil {
			return r, err
		}
		r.CurrentStack = cur.StackDigest
		if cur.EventSequence > r.Head.Sequence {
			r.Problems = append(r.Problems, fmt.Sprintf("current stack %s names event %d past the chain head %d", cur.StackDigest, cur.EventSequence, r.Head.Sequence))
		}
	}
	// The quick check compares the live proposals' statuses only.
	liveOnly := ""
	if !r.Full {
		liveOnly = "WHERE " + liveProposals
	}
	bad, err := l.db.QueryContext(ctx, `SELECT proposals.id, proposals.status, coalesce((SELECT t.to_status FROM proposal_transitions t WHERE t.proposal_id = proposals.id ORDER BY t.seq DESC LIMIT 1), '')
		FROM proposals `+liveOnly+` ORDER BY proposals.id`)
	if err != nil {
		return r, classify(err)
	}
	for bad.Next() {
		var id int64
		var status, last string
		if err := bad.Scan(&id, &status, &last); err != nil {
			bad.Close()
			return r, classify(err)
		}
		if !Status(status).Known() {
			r.Problems = append(r.Problems, fmt.Sprintf("proposal %d: unknown status %q", id, status))
		} else if status != last {
			r.Problems = append(r.Problems, fmt.Sprintf("proposal %d: status %s, its last transition went to %q", id, status, last))
		}
	}
	bad.Close()
	if err := bad.Err(); err != nil {
		return r, classify(err)
	}
	if err := l.checkCopyVerdicts(ctx, r); err != nil {
		return r, err
	}
	if r.OK() {
		fl, err := l.Stale(ctx, time.Now())
		if err != nil {
			return r, err
		}
		for _, f := range fl {
			if f.Cause == "" {
				r.Leased = append(r.Leased, f)
			} else {
				r.Stranded = append(r.Stranded, f)
			}
		}
	}
	if !r.OK() {
		return r, fmt.Errorf("%w: %s: %s", ErrRefused, l.path, r.Problems[0])
	}
	return r, nil
}

// checkSQLite runs SQLite's integrity_check and foreign_key_check.
func (l *Ledger) checkSQLite(ctx context.Context, r *Report) error {
	rows, err := l.db.QueryContext(ctx, `PRAGMA integrity_check`)
	if err != nil {
		return classify(err)
	}
	var lines []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			rows.Close()
			return classify(err)
		}
		lines = append(lines, s)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return classify(err)
	}
	r.Integrity = strings.Join(lines, "; ")
	if r.Integrity != "ok" {
		r.Problems = append(r.Problems, "integrity_check: "+r.Integrity)
	}
	fk, err := l.db.QueryContext(ctx, `PRAGMA foreign_key_check`)
	if err != nil {
		return classify(err)
	}
	for fk.Next() {
		var table, parent string
		var rowid, idx any
		if err := fk.Scan(&table, &rowid, &parent, &idx); err != nil {
			fk.Close()
			return classify(err)
		}
		r.Problems = append(r.Problems, fmt.Sprintf("foreign_key_check: %s row %v references a missing %s", table, rowid, parent))
	}
	fk.Close()
	return nil
}

// checkCopyVerdicts adds a problem for every standing copy verdict whose
// proposal is not failed by it: a verdict leaves failed only by being
// cleared.
func (l *Ledger) checkCopyVerdicts(ctx context.Context, r *Report) error {
	rows, err := l.db.QueryContext(ctx, `SELECT c.proposal_id, coalesce(c.copy_of, 0), c.seed, c.rule, p.status, p.reason
		FROM copy_verdicts c JOIN proposals p ON p.id = c.proposal_id WHERE c.cleared_event IS NULL ORDER BY c.proposal_id`)
	if err != nil {
		return classify(err)
	}
	defer rows.Close()
	for rows.Next() {
		var v CopyVerdict
		var status, reason string
		if err := rows.Scan(&v.ProposalID, &v.CopyOf, &v.Seed, &v.Rule, &status, &reason); err != nil {
			return classify(err)
		}
		if status != string(Failed) || reason != v.Reason() {
			r.Problems = append(r.Problems, fmt.Sprintf("proposal %d: its copy verdict %s stands, yet it is %s (%s)", v.ProposalID, v.Reason(), status, reason))
		}
	}
	return classify(rows.Err())
}
