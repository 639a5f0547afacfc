package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/big"
	"strings"

	"github.com/cacheon/engine/internal/canonjson"
)

// A checkpoint lets an open, and the quick check every command runs
// before it acts, cost what happened since the checkpoint rather than the
// whole history. It is a record of the row record chain (RecordCheckpoint)
// written by Checkpoint only after CheckFull found nothing wrong, holding
//
//	{"event_type": "checkpoint", "sequence": …, "previous_event_digest": …,
//	 "heads": {"settlement_events": {…}, "intake_events": {…}, "lease_events": {…}},
//	 "rows": {<every live row, rebound as it stands>},
//	 "leases": {"<proposal>": <its lease state, for a live proposal with any>}}
//
// The invariant the quick path keeps: every row a decision reads (a live
// row, liveSelections) is bound by a record at or after the latest
// checkpoint and equals it, and every chain verifies from the head the
// checkpoint names to its end. What it skips is history no decision reads:
// rows that stopped being live before the checkpoint, and chain events
// before it. Those are what CheckFull still replays (docs/reference/ledger.md).

// RecordCheckpoint is the record type of a checkpoint.
const RecordCheckpoint = "checkpoint"

// checkpoint is the latest checkpoint as read back and verified: its
// record's head, and the other chains' heads it names. The zero value is
// "no checkpoint": verify everything.
type checkpoint struct {
	record Head
	heads  map[string]Head // chain table → head
	// leases are the lease states of the live proposals with any lease
	// event, folded up to the lease head.
	leases map[int64]Lease
}

// from is where chain c is verified from.
func (cp checkpoint) from(c chain) Head {
	if c == recordChain {
		return cp.record
	}
	return cp.heads[c.table]
}

// liveSelections pick the rows a decision reads: the current evaluation
// stack (qualify, settle, stack export), every standing and discovery
// claim (weights), and every proposal that is not finished with its
// attempts, settlement outcomes and transitions (intake's later steps,
// qualify and the settlement queue; a status is read as its last
// transition). A finished proposal is failed, expired, or qualified
// and settled by a crown or bounty; none of them is read again but by a
// full check and by apply.CrownAt (crown review), which runs one.
func liveSelections() []selection {
	const live = liveProposals
	return []selection{
		{table: "evaluation_stacks", where: "current = 1"},
		{table: "standing_claims"},
		{table: "discovery_claims"},
		{table: "proposals", where: live},
		{table: "proposal_transitions", where: "proposal_id IN (SELECT id FROM proposals WHERE " + live + ")"},
		{table: "attempts", where: "proposal_id IN (SELECT id FROM proposals WHERE " + live + ")"},
		{table: "settlement_outcomes", where: "proposal_id IN (SELECT id FROM proposals WHERE " + live + ")"},
	}
}

// liveProposals is the SQL condition on a proposals row that it is live.
const liveProposals = `status NOT IN ('failed', 'expired') AND NOT (status = 'qualified'
		AND coalesce((SELECT o.outcome FROM settlement_outcomes o WHERE o.proposal_id = proposals.id ORDER BY o.seq DESC LIMIT 1), 'HOLD') <> 'HOLD')`

// wholeTables are the live tables every row of which is live, so a row
// bound since the checkpoint and missing from the table is missing.
var wholeTables = map[string]bool{"standing_claims": true, "discovery_claims": true}

// liveTransition reports whether the proposal_transitions key k ("<proposal>/<seq>")
// belongs to a proposal among have's live proposals: every transition of a
// live proposal is bound since the checkpoint (the checkpoint rebinds them,
// and a proposal becoming live again rebinds its own), so one bound since
// and gone from the table was deleted, and the status the quick check
// compares with the last transition cannot be trusted.
func liveTransition(have boundRows, k string) bool {
	id, _, ok := strings.Cut(k, "/")
	if !ok {
		return false
	}
	_, live := have["proposals"][id]
	return live
}

// Checkpoint runs CheckFull and, when it finds nothing wrong, records a
// checkpoint in one transaction; it returns the checkpoint's record head.
// A ledger that fails its full check gets no checkpoint.
func (l *Ledger) Checkpoint(ctx context.Context) (*Report, Head, error) {
	r, err := l.CheckFull(ctx)
	if err != nil {
		return r, Head{}, err
	}
	var h Head
	err = l.tx(ctx, func(t *sql.Tx) error {
		heads := map[string]any{}
		for _, c := range []chain{settlementChain, intakeChain, leaseChain} {
			ch, err := headOf(ctx, t, c)
			if err != nil {
				return err
			}
			heads[c.table] = map[string]any{"sequence": ch.Sequence, "digest": ch.Digest}
		}
		rows := boundRows{}
		for _, s := range liveSelections() {
			if err := readBound(ctx, t, s, rows); err != nil {
				return err
			}
		}
		leases := map[string]any{}
		for k := range rows["proposals"] {
			var id int64
			if _, err := fmt.Sscan(k, &id); err != nil {
				return err
			}
			ls, err := foldLease(ctx, t, Lease{Proposal: id}, 0)
			if err != nil {
				return err
			}
			if ls.Attempts > 0 || ls.Lost > 0 {
				leases[k] = leaseFields(ls)
			}
		}
		prev, err := headOf(ctx, t, recordChain)
		if err != nil {
			return err
		}
		ev, err := nextEvent(recordChain.domain, prev, RecordCheckpoint, map[string]any{"rows": rows, "heads": heads, "leases": leases})
		if err != nil {
			return err
		}
		if _, err := t.ExecContext(ctx, `INSERT INTO row_records (sequence, event_type, previous_event_digest, body, digest) VALUES (?, ?, ?, ?, ?)`,
			ev.Sequence, ev.EventType, ev.PreviousEventDigest, string(ev.Body), ev.Digest); err != nil {
			return fmt.Errorf("insert checkpoint record %d: %w", ev.Sequence, err)
		}
		if _, err := t.ExecContext(ctx, `INSERT INTO checkpoints (record_sequence) VALUES (?)`, ev.Sequence); err != nil {
			return err
		}
		h = ev.Head()
		return nil
	})
	if err != nil {
		return r, Head{}, fmt.Errorf("record checkpoint: %w", err)
	}
	if l.cp, err = latestCheckpoint(ctx, l.db); err != nil {
		return r, h, err
	}
	l.checkedAt = h
	r.Checkpoint = h
	return r, h, nil
}

// AutoCheckpointRecords is how many chain records since the latest
// checkpoint (since the start, on a ledger with none) make a writer
// record a checkpoint before it writes (CheckBeforeWrite). A chain record
// is an event of any of the four hash chains: a settlement event, an
// intake event, a lease event or a row record. Open and the quick check
// verify every chain record since the checkpoint, so this bounds what
// they cost on a ledger whose operator never runs `ledger check --full`.
const AutoCheckpointRecords = 1024

// CheckBeforeWrite is the check a command that writes runs before it
// writes. Below AutoCheckpointRecords chain records since the latest
// checkpoint it is Check, the quick check from that checkpoint. At or past
// the threshold it is Checkpoint: the full check and, when that finds
// nothing wrong, a new checkpoint, so the next open verifies from here.
// Either way a problem refuses the write, under ErrRefused naming the
// ledger and the first problem, and the Report names them all.
func (l *Ledger) CheckBeforeWrite(ctx context.Context) (*Report, error) {
	n, err := recordsSince(ctx, l.db, l.cp)
	if err != nil {
		return &Report{Stranded: []InFlight{}, Leased: []InFlight{}}, err
	}
	every := int64(AutoCheckpointRecords)
	if l.checkpointEvery > 0 {
		every = int64(l.checkpointEvery)
	}
	if n < every {
		return l.Check(ctx)
	}
	r, _, err := l.Checkpoint(ctx)
	return r, err
}

// recordsSince counts the chain records after the heads cp names: every
// one of them without a checkpoint. A checkpoint's own record is not
// counted.
func recordsSince(ctx context.Context, q querier, cp checkpoint) (int64, error) {
	var n int64
	for _, c := range []chain{settlementChain, intakeChain, leaseChain, recordChain} {
		var k int64
		if err := q.QueryRowContext(ctx, `SELECT count(*) FROM `+c.table+` WHERE sequence > ?`, cp.from(c).Sequence).Scan(&k); err != nil {
			return 0, classify(err)
		}
		n += k
	}
	return n, nil
}

// checkedFull makes sure the whole history was replayed right before a
// write that rebinds rows the quick check does not read (ClearCopy makes
// a finished proposal live again): unless the last checkpoint this writer
// recorded is still the record chain's head, it runs Checkpoint, whose
// full check refuses a hand edit anywhere.
func (l *Ledger) checkedFull(ctx context.Context) error {
	h, err := headOf(ctx, l.db, recordChain)
	if err != nil {
		return classify(err)
	}
	if l.checkedAt.Sequence != 0 && h == l.checkedAt {
		return nil
	}
	_, _, err = l.Checkpoint(ctx)
	return err
}

// latestCheckpoint reads the latest checkpoint and verifies its record
// on its own: a checkpoint record, its body hashing to its digest.
func latestCheckpoint(ctx context.Context, q querier) (checkpoint, error) {
	var seq sql.NullInt64
	if err := q.QueryRowContext(ctx, `SELECT max(record_sequence) FROM checkpoints`).Scan(&seq); err != nil {
		return checkpoint{}, classify(err)
	}
	if !seq.Valid {
		return checkpoint{}, nil
	}
	var stored Event
	var body string
	err := q.QueryRowContext(ctx, `SELECT sequence, event_type, previous_event_digest, body, digest FROM row_records WHERE sequence = ?`, seq.Int64).
		Scan(&stored.Sequence, &stored.EventType, &stored.PreviousEventDigest, &body, &stored.Digest)
	if errors.Is(err, sql.ErrNoRows) {
		return checkpoint{}, fmt.Errorf("%w: checkpoint names row record %d, which is missing", ErrRefused, seq.Int64)
	}
	if err != nil {
		return checkpoint{}, classify(err)
	}
	if stored.EventType != RecordCheckpoint {
		return checkpoint{}, fmt.Errorf("%w: checkpoint names row record %d, a %s record", ErrRefused, seq.Int64, stored.EventType)
	}
	// Its own link is checked by the record chain's verification from
	// the checkpoint: here only its body against its columns.
	if err := verifyStoredIn(recordChain.domain, Head{Sequence: stored.Sequence - 1, Digest: stored.PreviousEventDigest}, stored, []byte(body)); err != nil {
		return checkpoint{}, fmt.Errorf("%w: checkpoint: row record chain: %v", ErrRefused, err)
	}
	v, err := canonjson.Parse([]byte(body))
	if err != nil {
		return checkpoint{}, err
	}
	cp := checkpoint{record: stored.Head(), heads: map[string]Head{}}
	heads, _ := v.(map[string]any)["heads"].(map[string]any)
	for _, c := range []chain{settlementChain, intakeChain, leaseChain} {
		h, ok := heads[c.table].(map[string]any)
		n, okN := h["sequence"].(*big.Int)
		d, okD := h["digest"].(string)
		if !ok || !okN || !okD || !n.IsInt64() {
			return checkpoint{}, fmt.Errorf("%w: checkpoint record %d names no head of the %s", ErrRefused, stored.Sequence, c.name)
		}
		cp.heads[c.table] = Head{Sequence: n.Int64(), Digest: d}
	}
	leases, _ := v.(map[string]any)["leases"].(map[string]any)
	cp.leases = map[int64]Lease{}
	for k, lv := range leases {
		var id int64
		if _, err := fmt.Sscan(k, &id); err != nil {
			return checkpoint{}, fmt.Errorf("%w: checkpoint record %d: lease of %q", ErrRefused, stored.Sequence, k)
		}
		ls, err := parseLeaseFields(id, lv)
		if err != nil {
			return checkpoint{}, fmt.Errorf("%w: checkpoint record %d: lease of proposal %d: %v", ErrRefused, stored.Sequence, id, err)
		}
		cp.leases[id] = ls
	}
	return cp, nil
}

// verifyChainFrom verifies chain c from head from (its event at
// from.Sequence must still be the one the checkpoint named, its body
// hashing to it) to its end, and returns the end.
func verifyChainFrom(ctx context.Context, q querier, c chain, from Head) (Head, error) {
	if from.Sequence == 0 {
		return verifyChainOf(ctx, q, c)
	}
	rows, err := q.QueryContext(ctx, `SELECT sequence, event_type, previous_event_digest, body, digest FROM `+c.table+` WHERE sequence >= ? ORDER BY sequence`, from.Sequence)
	if err != nil {
		return Head{}, classify(err)
	}
	defer rows.Close()
	head := Head{}
	for rows.Next() {
		var stored Event
		var body string
		if err := rows.Scan(&stored.Sequence, &stored.EventType, &stored.PreviousEventDigest, &body, &stored.Digest); err != nil {
			return Head{}, classify(err)
		}
		if head.Sequence == 0 {
			// The checkpoint's own event: it must be the one named.
			if stored.Sequence != from.Sequence || stored.Digest != from.Digest {
				return Head{}, fmt.Errorf("%w: %s: event %d is %s, the checkpoint names event %d %s", ErrRefused, c.name, stored.Sequence, stored.Digest, from.Sequence, from.Digest)
			}
			head = Head{Sequence: stored.Sequence - 1, Digest: stored.PreviousEventDigest}
		}
		if err := verifyStoredIn(c.domain, head, stored, []byte(body)); err != nil {
			return Head{}, fmt.Errorf("%w: %s: %v", ErrRefused, c.name, err)
		}
		head = stored.Head()
	}
	if err := rows.Err(); err != nil {
		return Head{}, classify(err)
	}
	if head.Sequence == 0 {
		return Head{}, fmt.Errorf("%w: %s: the checkpoint names event %d, which is missing", ErrRefused, c.name, from.Sequence)
	}
	return head, nil
}

// checkLiveRows is the quick check's row comparison: the records from
// the checkpoint on, folded, against every live row. A live row that no
// record since the checkpoint binds is refused: the checkpoint rebound
// every live row, and a finished proposal becomes live again only by a
// cleared copy verdict, which rebinds its rows.
func (l *Ledger) checkLiveRows(ctx context.Context, r *Report, cp checkpoint) (Head, error) {
	h, err := verifyChainFrom(ctx, l.db, recordChain, cp.record)
	if err != nil {
		r.Problems = append(r.Problems, trimRefused(err))
		return Head{}, nil
	}
	recs, err := eventsOf(ctx, l.db, recordChain, cp.record.Sequence, 0)
	if err != nil {
		return h, err
	}
	want, bound, problems := foldRecords(recs)
	r.Problems = append(r.Problems, problems...)
	have := boundRows{}
	for _, s := range liveSelections() {
		if err := readBound(ctx, l.db, s, have); err != nil {
			return h, err
		}
	}
	for _, b := range boundTables {
		keys := map[string]bool{}
		for k := range have[b.name] {
			keys[k] = true
		}
		for k := range want[b.name] {
			if wholeTables[b.name] || (b.name == "proposal_transitions" && liveTransition(have, k)) {
				keys[k] = true
			}
		}
		for _, k := range sortedKeys(keys) {
			w, inChain := want[b.name][k]
			g, inTable := have[b.name][k]
			switch {
			case !inChain:
				r.Problems = append(r.Problems, fmt.Sprintf("%s row %s: a decision reads it, yet no row record since checkpoint %d binds it", b.name, k, cp.record.Sequence))
			case !inTable:
				r.Problems = append(r.Problems, fmt.Sprintf("%s row %s: missing, bound by row record %d", b.name, k, bound[b.name][k]))
			default:
				if !sameJSON(w, g) {
					r.Problems = append(r.Problems, fmt.Sprintf("%s row %s: %s differs from row record %d", b.name, k, differingColumns(w, g), bound[b.name][k]))
				}
			}
		}
	}
	return h, nil
}
