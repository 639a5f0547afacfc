package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/cacheon/engine/kernels/fingerprint"
)

// Seed is one of the project's own contributions, by the name a copy
// verdict gives it (its source label) and its fingerprint.
type Seed struct {
	Name  string
	Print *fingerprint.Fingerprint
}

// CopyVerdict is intake's finding that a proposal copies an earlier one,
// or a seed contribution of the project.
type CopyVerdict struct {
	ProposalID int64  `json:"proposal_id"`
	CopyOf     int64  `json:"copy_of"` // the earlier proposal; 0 when Seed names what was copied
	Seed       string `json:"seed"`
	Rule       string `json:"rule"`   // fingerprint.RulePayload, RuleNormalizedDelta or RuleContainment
	Detail     string `json:"detail"` // the comparison's stable account (fingerprint.Verdict.Reason)
	// ClearedEvent is the intake event that cleared the verdict (0 while
	// it stands).
	ClearedEvent int64 `json:"cleared_event"`
}

// ReasonCopyCleared prefixes the reason of the transition that returns a
// proposal whose copy verdict was cleared to published.
const ReasonCopyCleared = "copy_cleared"

// EventCopyCleared is the intake event type of a cleared copy verdict.
const EventCopyCleared = "COPY_CLEARED"

// Reason is the proposal's failure reason: copy_of:<id>:<rule> naming the
// earlier proposal, or copy_of:seed:<name>:<rule>.
func (v *CopyVerdict) Reason() string {
	if v.CopyOf != 0 {
		return fmt.Sprintf("copy_of:%d:%s", v.CopyOf, v.Rule)
	}
	return fmt.Sprintf("copy_of:seed:%s:%s", v.Seed, v.Rule)
}

// findCopy compares r's fingerprint with the seeds, then with every
// earlier proposal (by finalized position) of another hotkey in the same
// namespace, and returns the first copy found, or nil. The namespace is
// the (arena, target) the proposal competes in: proposals of other
// targets do not compete, and neither do arenas. A miner resubmitting
// its own work is not copying. Seeds count whatever their target: the
// project's own code is nobody's to claim.
//
// Every earlier proposal counts, whatever became of it (a failed screen
// does not make an idea anyone's to take), except those taken in without
// a fingerprint (before schema 3, or refused before publication) and
// those whose own copy verdict stands: a copy has no priority, so it
// cannot make its original's author a copier when they resubmit.
func (l *Ledger) findCopy(ctx context.Context, q querier, r IntakeRequest) (*CopyVerdict, error) {
	for _, sd := range r.Seeds {
		if v := fingerprint.Compare(sd.Print, r.Print); v.Copy {
			return &CopyVerdict{Seed: sd.Name, Rule: v.Rule, Detail: v.Reason}, nil
		}
	}
	rows, err := q.QueryContext(ctx, `SELECT p.id, p.fingerprint FROM proposals p
		WHERE p.arena_digest = ? AND p.target_id = ? AND p.hotkey <> ? AND p.fingerprint <> ''
		  AND (p.block, p.event_index, p.subevent_index) < (?, ?, ?)
		  AND NOT EXISTS (SELECT 1 FROM copy_verdicts c WHERE c.proposal_id = p.id AND c.cleared_event IS NULL)
		ORDER BY p.block, p.event_index, p.subevent_index`,
		r.ArenaDigest, r.TargetID, r.Hotkey, r.Position.Block, r.Position.Event, r.Position.Subevent)
	if err != nil {
		return nil, classify(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var stored string
		if err := rows.Scan(&id, &stored); err != nil {
			return nil, classify(err)
		}
		earlier, err := fingerprint.Decode([]byte(stored))
		if err != nil {
			return nil, fmt.Errorf("%w: proposal %d: %v", ErrRefused, id, err)
		}
		if v := fingerprint.Compare(earlier, r.Print); v.Copy {
			return &CopyVerdict{CopyOf: id, Rule: v.Rule, Detail: v.Reason}, nil
		}
	}
	return nil, classify(rows.Err())
}

func insertCopyVerdict(ctx context.Context, t *sql.Tx, v *CopyVerdict) error {
	var of any
	if v.CopyOf != 0 {
		of = v.CopyOf
	}
	if _, err := t.ExecContext(ctx, `INSERT INTO copy_verdicts (proposal_id, copy_of, seed, rule, detail) VALUES (?, ?, ?, ?, ?)`,
		v.ProposalID, of, v.Seed, v.Rule, v.Detail); err != nil {
		return fmt.Errorf("insert copy verdict: %w", err)
	}
	return nil
}

// CopyVerdict returns proposal id's copy verdict, nil when intake found
// none.
func (l *Ledger) CopyVerdict(ctx context.Context, id int64) (*CopyVerdict, error) {
	return copyVerdict(ctx, l.db, id)
}

func copyVerdict(ctx context.Context, q querier, id int64) (*CopyVerdict, error) {
	var v CopyVerdict
	err := q.QueryRowContext(ctx, `SELECT proposal_id, coalesce(copy_of, 0), seed, rule, detail, coalesce(cleared_event, 0) FROM copy_verdicts WHERE proposal_id = ?`, id).
		Scan(&v.ProposalID, &v.CopyOf, &v.Seed, &v.Rule, &v.Detail, &v.ClearedEvent)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return &v, classify(err)
}

// ClearCopy corrects a wrong copy verdict before settlement: it chains a
// COPY_CLEARED intake event (the proposal, the verdict it clears and the
// operator's reason) and returns the proposal from failed to published,
// from where it is screened like any other. It is the one way out of
// failed, and only for a copy verdict: no other failure is corrected.
//
// It is refused once settlement has decided the proposal or a proposal
// at a later position in its namespace (arena, target): a crown settled
// after the copy was refused is not reopened by clearing it.
//
// It rebinds the proposal's rows as they stand, rows the quick check does
// not read while the proposal is failed: a hand edit of them would be
// bound into the chain and pass every later check. So it writes only
// right after a full check of the whole history that found nothing wrong,
// and records a checkpoint from it (checkedFull): the caller's own
// Checkpoint when nothing was written since, otherwise one it runs.
func (l *Ledger) ClearCopy(ctx context.Context, id int64, reason string) (*Proposal, Event, error) {
	reason = strings.TrimSpace(reason)
	if reason == "" || strings.ContainsAny(reason, "\x00\r\n") {
		return nil, Event{}, fmt.Errorf("%w: clear copy of proposal %d: the reason must be one non-empty line", ErrIllegal, id)
	}
	if err := l.checkedFull(ctx); err != nil {
		return nil, Event{}, fmt.Errorf("clear copy of proposal %d: %w", id, err)
	}
	var p *Proposal
	var ev Event
	err := l.tx(ctx, func(t *sql.Tx) error {
		var err error
		if p, err = l.proposal(ctx, t, id); err != nil {
			return err
		}
		v, err := copyVerdict(ctx, t, id)
		if err != nil {
			return err
		}
		switch {
		case v == nil:
			return fmt.Errorf("%w: proposal %d has no copy verdict (it is %s: %s)", ErrIllegal, id, p.Status, p.Reason)
		case v.ClearedEvent != 0:
			return fmt.Errorf("%w: proposal %d: its copy verdict was already cleared by intake event %d", ErrIllegal, id, v.ClearedEvent)
		case p.Status != Failed || p.Reason != v.Reason():
			return fmt.Errorf("%w: proposal %d is %s (%s), not failed by its copy verdict %s", ErrIllegal, id, p.Status, p.Reason, v.Reason())
		case !p.Published:
			return fmt.Errorf("%w: proposal %d: its bytes were never published", ErrIllegal, id)
		}
		var settled int64
		err = t.QueryRowContext(ctx, `SELECT coalesce(min(o.proposal_id), 0) FROM settlement_outcomes o JOIN proposals q ON q.id = o.proposal_id
			WHERE q.arena_digest = ? AND q.target_id = ? AND (q.block, q.event_index, q.subevent_index) >= (?, ?, ?)`,
			p.ArenaDigest, p.TargetID, p.Position.Block, p.Position.Event, p.Position.Subevent).Scan(&settled)
		if err != nil {
			return err
		}
		if settled != 0 {
			return fmt.Errorf("%w: proposal %d: settlement already decided proposal %d at target %q at or after its position %s; the copy verdict can no longer be cleared", ErrIllegal, id, settled, p.TargetID, p.Position)
		}
		h, err := headOf(ctx, t, intakeChain)
		if err != nil {
			return err
		}
		if ev, err = nextEvent(intakeChain.domain, h, EventCopyCleared, map[string]any{
			"proposal_id":  id,
			"content_hash": p.ContentHash,
			"verdict":      v.Reason(),
			"detail":       v.Detail,
			"reason":       reason,
		}); err != nil {
			return err
		}
		if _, err := t.ExecContext(ctx, `INSERT INTO intake_events (sequence, event_type, previous_event_digest, body, digest) VALUES (?, ?, ?, ?, ?)`,
			ev.Sequence, ev.EventType, ev.PreviousEventDigest, string(ev.Body), ev.Digest); err != nil {
			return fmt.Errorf("insert intake event %d: %w", ev.Sequence, err)
		}
		if _, err := t.ExecContext(ctx, `UPDATE copy_verdicts SET cleared_event = ? WHERE proposal_id = ?`, ev.Sequence, id); err != nil {
			return err
		}
		why := fmt.Sprintf("%s:%d", ReasonCopyCleared, ev.Sequence)
		// failed -> published is outside the state machine on purpose:
		// only a cleared copy verdict, chained above, takes it.
		if err := appendTransition(ctx, t, id, Failed, Published, why); err != nil {
			return err
		}
		if _, err := t.ExecContext(ctx, `UPDATE proposals SET status = ?, reason = ? WHERE id = ?`, string(Published), why, id); err != nil {
			return err
		}
		// The proposal is live again: its rows are rebound, so that a
		// quick check from a checkpoint taken while it was finished finds
		// them bound since (checkpoint.go).
		if err := bindRows(ctx, t, RecordCopyCleared, selection{"proposals", "id = ?", []any{id}},
			selection{"attempts", "proposal_id = ?", []any{id}}, selection{"settlement_outcomes", "proposal_id = ?", []any{id}},
			selection{"proposal_transitions", "proposal_id = ?", []any{id}}); err != nil {
			return err
		}
		p.Status, p.Reason = Published, why
		l.at("clear-copy-written")
		return nil
	})
	if err != nil {
		return nil, Event{}, fmt.Errorf("clear copy: %w", err)
	}
	return p, ev, nil
}
