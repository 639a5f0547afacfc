package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/cacheon/engine/internal/identity"
)

// Stack is one evaluation stack of the history: its manifest digest, the
// digest of the engine tree it materializes to, and its HCL rendering.
type Stack struct {
	ID          int64  `json:"id"`
	StackDigest string `json:"stack_digest"`
	TreeDigest  string `json:"tree_digest"`
	HCL         string `json:"hcl"`
	// EventSequence is the settlement event that made it current (0: the
	// initial stack).
	EventSequence int64 `json:"event_sequence"`
	Current       bool  `json:"current"`
}

// Crown is a settled crown, bound to its CROWN event.
type Crown struct {
	EventSequence      int64  `json:"event_sequence"`
	ArenaDigest        string `json:"arena_digest"`
	TargetID           string `json:"target_id"`
	ContributionDigest string `json:"contribution_digest"`
	ProposalID         int64  `json:"proposal_id"` // 0: not an intake proposal of this ledger
	Hotkey             string `json:"hotkey"`
	Speedup            string `json:"speedup"` // canonical decimal string
}

// StandingClaim is the emissions claim of the crown holding (arena,
// target); a new crown's claim replaces the old one.
type StandingClaim struct {
	ArenaDigest        string `json:"arena_digest"`
	TargetID           string `json:"target_id"`
	TargetSpecDigest   string `json:"target_spec_digest"`
	ContributionDigest string `json:"contribution_digest"`
	Hotkey             string `json:"hotkey"`
	SpeedupPPM         int64  `json:"speedup_ppm"`
	CrownedBlock       int64  `json:"crowned_block"`
	EvidenceDigest     string `json:"evidence_digest"`
	EventSequence      int64  `json:"event_sequence"`
}

// DiscoveryClaim is a discovery bounty, bound to its event.
type DiscoveryClaim struct {
	EventSequence      int64  `json:"event_sequence"`
	ArenaDigest        string `json:"arena_digest"`
	ContributionDigest string `json:"contribution_digest"`
	Hotkey             string `json:"hotkey"`
	SpeedupPPM         int64  `json:"speedup_ppm"`
	AwardedBlock       int64  `json:"awarded_block"`
	EvidenceDigest     string `json:"evidence_digest"`
}

// Outcome is what a settlement decided for one qualified proposal. A HOLD
// moves the proposal from qualified to held (with the reason), so it must
// requalify; a CROWN or DISCOVERY_BOUNTY leaves it qualified and settled.
type Outcome struct {
	ProposalID      int64  `json:"proposal_id"`
	Seq             int    `json:"seq"`
	PlanDigest      string `json:"plan_digest"`
	CandidateDigest string `json:"candidate_digest"`
	Outcome         string `json:"outcome"` // CROWN, HOLD or DISCOVERY_BOUNTY
	Reason          string `json:"reason"`
	// EventSequence is the event the outcome made (the CROWN event of a
	// crown); 0 for a HOLD, and for a bounty the plan made no event for.
	EventSequence int64 `json:"event_sequence"`
}

// Settlement outcomes, as recorded.
const (
	OutcomeCrown           = "CROWN"
	OutcomeHold            = "HOLD"
	OutcomeDiscoveryBounty = "DISCOVERY_BOUNTY"
)

// Settlement is everything one settlement writes. Events must extend the
// chain's head exactly. When NewStack is set, FromStack must be the digest
// of the current stack (the incumbent the settlement was planned
// against) and NewStack becomes current, made so by the last event.
type Settlement struct {
	Events          []Event
	FromStack       string
	NewStack        *Stack
	Crowns          []Crown
	StandingClaims  []StandingClaim
	DiscoveryClaims []DiscoveryClaim
	// Outcomes are the plan's rows for the ledger's proposals; every one
	// must be qualified when the transaction runs.
	Outcomes []Outcome
}

// Receipt is what a committed settlement left: the new head and current
// stack, as read back inside the transaction before it committed.
type Receipt struct {
	Head         Head   `json:"head"`
	CurrentStack *Stack `json:"current_stack"`
}

// Steps of Commit, in order; tests kill the process at each.
var CommitSteps = []string{"begin", "events", "stack", "crowns", "claims", "outcomes", "readback", "committed"}

func checkStack(s *Stack) error {
	if err := identity.CheckDigest("stack_digest", s.StackDigest, false); err != nil {
		return fmt.Errorf("%w: stack: %v", ErrIllegal, err)
	}
	if err := identity.CheckDigest("tree_digest", s.TreeDigest, false); err != nil {
		return fmt.Errorf("%w: stack: %v", ErrIllegal, err)
	}
	if s.HCL == "" {
		return fmt.Errorf("%w: stack %s: HCL rendering is empty", ErrIllegal, s.StackDigest)
	}
	return nil
}

// InitStack records the first evaluation stack as current. It is refused
// once any stack exists: every later stack comes from a settlement.
func (l *Ledger) InitStack(ctx context.Context, s Stack) (*Stack, error) {
	if err := checkStack(&s); err != nil {
		return nil, err
	}
	err := l.tx(ctx, func(t *sql.Tx) error {
		var n int
		if err := t.QueryRowContext(ctx, `SELECT count(*) FROM evaluation_stacks`).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return fmt.Errorf("%w: the ledger already has %d evaluation stacks; a new one comes only from a settlement", ErrIllegal, n)
		}
		out, err := t.ExecContext(ctx, `INSERT INTO evaluation_stacks (stack_digest, tree_digest, hcl, event_sequence, current) VALUES (?, ?, ?, NULL, 1)`,
			s.StackDigest, s.TreeDigest, s.HCL)
		if err != nil {
			return err
		}
		if s.ID, err = out.LastInsertId(); err != nil {
			return err
		}
		s.Current, s.EventSequence = true, 0
		return bindRows(ctx, t, RecordStackInit, selection{"evaluation_stacks", "id = ?", []any{s.ID}})
	})
	if err != nil {
		return nil, fmt.Errorf("initial stack: %w", err)
	}
	return &s, nil
}

// Commit writes a settlement in one transaction: the events, the new
// current stack and the crowns and claims. Before committing it reads the
// chain head and the current stack back and checks them; any failure rolls
// the whole settlement back, so the old stack stays current.
func (l *Ledger) Commit(ctx context.Context, s Settlement) (*Receipt, error) {
	if len(s.Events) == 0 && len(s.Outcomes) == 0 {
		return nil, fmt.Errorf("%w: settlement has no events and no outcomes", ErrIllegal)
	}
	if s.NewStack != nil {
		if err := checkStack(s.NewStack); err != nil {
			return nil, err
		}
	}
	var rec Receipt
	err := l.tx(ctx, func(t *sql.Tx) error {
		l.at("begin")
		prev, err := head(ctx, t)
		if err != nil {
			return err
		}
		// The bound rows this settlement writes, recorded in the row
		// record chain before the readback.
		first := prev.Sequence + 1
		bound := []selection{}
		seqs := map[int64]bool{}
		for _, e := range s.Events {
			if err := verifyStored(prev, e, e.Body); err != nil {
				return fmt.Errorf("%w: %v (chain head is %d)", ErrIllegal, err, prev.Sequence)
			}
			if _, err := t.ExecContext(ctx, `INSERT INTO settlement_events (sequence, event_type, previous_event_digest, body, digest) VALUES (?, ?, ?, ?, ?)`,
				e.Sequence, e.EventType, e.PreviousEventDigest, string(e.Body), e.Digest); err != nil {
				return fmt.Errorf("insert event %d: %w", e.Sequence, err)
			}
			seqs[e.Sequence] = true
			prev = e.Head()
		}
		l.at("events")
		if s.NewStack != nil {
			cur, err := currentStack(ctx, t)
			if err != nil {
				return err
			}
			if cur == nil {
				return fmt.Errorf("%w: the ledger has no current stack to settle against (record the initial one first)", ErrIllegal)
			}
			if cur.StackDigest != s.FromStack {
				return fmt.Errorf("%w: settlement planned against stack %s, the current stack is %s", ErrIllegal, s.FromStack, cur.StackDigest)
			}
			if _, err := t.ExecContext(ctx, `UPDATE evaluation_stacks SET current = NULL WHERE id = ?`, cur.ID); err != nil {
				return err
			}
			out, err := t.ExecContext(ctx, `INSERT INTO evaluation_stacks (stack_digest, tree_digest, hcl, event_sequence, current) VALUES (?, ?, ?, ?, 1)`,
				s.NewStack.StackDigest, s.NewStack.TreeDigest, s.NewStack.HCL, prev.Sequence)
			if err != nil {
				return fmt.Errorf("insert stack %s: %w", s.NewStack.StackDigest, err)
			}
			id, err := out.LastInsertId()
			if err != nil {
				return err
			}
			bound = append(bound, selection{"evaluation_stacks", "id IN (?, ?)", []any{cur.ID, id}})
		} else if s.FromStack != "" {
			return fmt.Errorf("%w: from_stack %s given without a new stack", ErrIllegal, s.FromStack)
		}
		l.at("stack")
		for _, c := range s.Crowns {
			if !seqs[c.EventSequence] {
				return fmt.Errorf("%w: crown of %s names event %d, not one of this settlement", ErrIllegal, c.TargetID, c.EventSequence)
			}
			var pid any
			if c.ProposalID != 0 {
				pid = c.ProposalID
			}
			if _, err := t.ExecContext(ctx, `INSERT INTO crowns (event_sequence, arena_digest, target_id, contribution_digest, proposal_id, hotkey, speedup) VALUES (?, ?, ?, ?, ?, ?, ?)`,
				c.EventSequence, c.ArenaDigest, c.TargetID, c.ContributionDigest, pid, c.Hotkey, c.Speedup); err != nil {
				return fmt.Errorf("insert crown of %s: %w", c.TargetID, err)
			}
		}
		l.at("crowns")
		for _, c := range s.StandingClaims {
			if !seqs[c.EventSequence] {
				return fmt.Errorf("%w: standing claim of %s names event %d, not one of this settlement", ErrIllegal, c.TargetID, c.EventSequence)
			}
			if _, err := t.ExecContext(ctx, `INSERT INTO standing_claims (arena_digest, target_id, target_spec_digest, contribution_digest, hotkey, speedup_ppm, crowned_block, evidence_digest, event_sequence)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
				ON CONFLICT (arena_digest, target_id) DO UPDATE SET target_spec_digest = excluded.target_spec_digest, contribution_digest = excluded.contribution_digest,
					hotkey = excluded.hotkey, speedup_ppm = excluded.speedup_ppm, crowned_block = excluded.crowned_block,
					evidence_digest = excluded.evidence_digest, event_sequence = excluded.event_sequence`,
				c.ArenaDigest, c.TargetID, c.TargetSpecDigest, c.ContributionDigest, c.Hotkey, c.SpeedupPPM, c.CrownedBlock, c.EvidenceDigest, c.EventSequence); err != nil {
				return fmt.Errorf("upsert standing claim of %s: %w", c.TargetID, err)
			}
		}
		for _, c := range s.DiscoveryClaims {
			if !seqs[c.EventSequence] {
				return fmt.Errorf("%w: discovery claim names event %d, not one of this settlement", ErrIllegal, c.EventSequence)
			}
			if _, err := t.ExecContext(ctx, `INSERT INTO discovery_claims (event_sequence, arena_digest, contribution_digest, hotkey, speedup_ppm, awarded_block, evidence_digest) VALUES (?, ?, ?, ?, ?, ?, ?)`,
				c.EventSequence, c.ArenaDigest, c.ContributionDigest, c.Hotkey, c.SpeedupPPM, c.AwardedBlock, c.EvidenceDigest); err != nil {
				return fmt.Errorf("insert discovery claim: %w", err)
			}
		}
		l.at("claims")
		for _, o := range s.Outcomes {
			seq, err := l.recordOutcome(ctx, t, o, seqs)
			if err != nil {
				return err
			}
			bound = append(bound, selection{"settlement_outcomes", "proposal_id = ? AND seq = ?", []any{o.ProposalID, seq}})
		}
		l.at("outcomes")
		// Crowns and claims name events of this settlement (checked above).
		for _, table := range []string{"crowns", "standing_claims", "discovery_claims"} {
			bound = append(bound, selection{table, "event_sequence BETWEEN ? AND ?", []any{first, prev.Sequence}})
		}
		if err := bindRows(ctx, t, RecordSettlement, bound...); err != nil {
			return err
		}
		// Read back what the transaction wrote before letting it commit.
		got, err := head(ctx, t)
		if err != nil {
			return err
		}
		if got != prev {
			return fmt.Errorf("readback: chain head is %d %s, wrote %d %s", got.Sequence, got.Digest, prev.Sequence, prev.Digest)
		}
		cur, err := currentStack(ctx, t)
		if err != nil {
			return err
		}
		if s.NewStack != nil && (cur == nil || cur.StackDigest != s.NewStack.StackDigest || cur.TreeDigest != s.NewStack.TreeDigest) {
			return errors.New("readback: the new stack is not current")
		}
		rec = Receipt{Head: got, CurrentStack: cur}
		l.at("readback")
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("commit settlement: %w", err)
	}
	l.at("committed")
	return &rec, nil
}

// recordOutcome inserts o (and moves a held proposal) and returns the
// outcome's sequence number.
func (l *Ledger) recordOutcome(ctx context.Context, t *sql.Tx, o Outcome, seqs map[int64]bool) (int, error) {
	p, err := l.proposal(ctx, t, o.ProposalID)
	if err != nil {
		return 0, err
	}
	if p.Status != Qualified {
		return 0, fmt.Errorf("%w: settlement outcome for proposal %d, which is %s, not qualified", ErrIllegal, o.ProposalID, p.Status)
	}
	var ev any
	switch o.Outcome {
	case OutcomeHold:
		if o.EventSequence != 0 {
			return 0, fmt.Errorf("%w: a HOLD of proposal %d names event %d", ErrIllegal, o.ProposalID, o.EventSequence)
		}
	case OutcomeCrown, OutcomeDiscoveryBounty:
		// A crown names its CROWN event; a bounty names its event when the
		// plan made one (the plan makes none today).
		if o.Outcome == OutcomeDiscoveryBounty && o.EventSequence == 0 {
			break
		}
		if !seqs[o.EventSequence] {
			return 0, fmt.Errorf("%w: %s of proposal %d names event %d, not one of this settlement", ErrIllegal, o.Outcome, o.ProposalID, o.EventSequence)
		}
		ev = o.EventSequence
	default:
		return 0, fmt.Errorf("%w: settlement outcome %q of proposal %d is not CROWN, HOLD or DISCOVERY_BOUNTY", ErrIllegal, o.Outcome, o.ProposalID)
	}
	var seq int
	if err := t.QueryRowContext(ctx, `SELECT coalesce(max(seq), 0) + 1 FROM settlement_outcomes WHERE proposal_id = ?`, o.ProposalID).Scan(&seq); err != nil {
		return 0, err
	}
	if _, err := t.ExecContext(ctx, `INSERT INTO settlement_outcomes (proposal_id, seq, plan_digest, candidate_digest, outcome, reason, event_sequence) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		o.ProposalID, seq, o.PlanDigest, o.CandidateDigest, o.Outcome, o.Reason, ev); err != nil {
		return 0, fmt.Errorf("insert outcome of proposal %d: %w", o.ProposalID, err)
	}
	if o.Outcome != OutcomeHold {
		return seq, nil
	}
	if err := checkTransition(o.ProposalID, Qualified, Held); err != nil {
		return 0, err
	}
	if err := appendTransition(ctx, t, o.ProposalID, Qualified, Held, o.Reason); err != nil {
		return 0, err
	}
	_, err = t.ExecContext(ctx, `UPDATE proposals SET status = ?, reason = ? WHERE id = ?`, string(Held), o.Reason, o.ProposalID)
	return seq, err
}

// Queued is a qualified proposal waiting for settlement, with its
// passing qualification attempts that carry a settlement view.
type Queued struct {
	Proposal Proposal
	Passes   []Attempt
}

// SettlementQueue returns every qualified proposal not yet settled (no
// outcome, or its last one a HOLD it has since requalified from), in
// finalized order, with its passing qualifications' settlement views.
func (l *Ledger) SettlementQueue(ctx context.Context) ([]Queued, error) {
	rows, err := l.db.QueryContext(ctx, `SELECT `+proposalColumns+` FROM proposals p WHERE status = 'qualified'
		AND coalesce((SELECT o.outcome FROM settlement_outcomes o WHERE o.proposal_id = p.id ORDER BY o.seq DESC LIMIT 1), 'HOLD') = 'HOLD'
		ORDER BY block, event_index, subevent_index`)
	if err != nil {
		return nil, classify(err)
	}
	var out []Queued
	for rows.Next() {
		p, err := scanProposal(rows)
		if err != nil {
			rows.Close()
			return nil, classify(err)
		}
		out = append(out, Queued{Proposal: *p})
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, classify(err)
	}
	for i := range out {
		as, err := attempts(ctx, l.db, out[i].Proposal.ID)
		if err != nil {
			return nil, err
		}
		for _, a := range as {
			if a.Stage == StageQualification && a.Decision == "PASS" {
				out[i].Passes = append(out[i].Passes, a)
			}
		}
	}
	return out, nil
}

// Outcomes returns proposal id's settlement outcomes in order.
func (l *Ledger) Outcomes(ctx context.Context, id int64) ([]Outcome, error) {
	rows, err := l.db.QueryContext(ctx, `SELECT proposal_id, seq, plan_digest, candidate_digest, outcome, reason, coalesce(event_sequence, 0) FROM settlement_outcomes WHERE proposal_id = ? ORDER BY seq`, id)
	if err != nil {
		return nil, classify(err)
	}
	defer rows.Close()
	var out []Outcome
	for rows.Next() {
		var o Outcome
		if err := rows.Scan(&o.ProposalID, &o.Seq, &o.PlanDigest, &o.CandidateDigest, &o.Outcome, &o.Reason, &o.EventSequence); err != nil {
			return nil, classify(err)
		}
		out = append(out, o)
	}
	return out, classify(rows.Err())
}

const stackColumns = `id, stack_digest, tree_digest, hcl, coalesce(event_sequence, 0), current IS NOT NULL`

func scanStack(row interface{ Scan(...any) error }) (*Stack, error) {
	var s Stack
	err := row.Scan(&s.ID, &s.StackDigest, &s.TreeDigest, &s.HCL, &s.EventSequence, &s.Current)
	return &s, err
}

func currentStack(ctx context.Context, q querier) (*Stack, error) {
	s, err := scanStack(q.QueryRowContext(ctx, `SELECT `+stackColumns+` FROM evaluation_stacks WHERE current = 1`))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return s, classify(err)
}

// CurrentStack returns the current evaluation stack, nil when there is none
// yet.
func (l *Ledger) CurrentStack(ctx context.Context) (*Stack, error) { return currentStack(ctx, l.db) }

// Stacks returns the history of evaluation stacks, oldest first.
func (l *Ledger) Stacks(ctx context.Context) ([]Stack, error) {
	rows, err := l.db.QueryContext(ctx, `SELECT `+stackColumns+` FROM evaluation_stacks ORDER BY id`)
	if err != nil {
		return nil, classify(err)
	}
	defer rows.Close()
	var out []Stack
	for rows.Next() {
		s, err := scanStack(rows)
		if err != nil {
			return nil, classify(err)
		}
		out = append(out, *s)
	}
	return out, classify(rows.Err())
}

// StandingClaims returns the standing claims by (arena, target).
func (l *Ledger) StandingClaims(ctx context.Context) ([]StandingClaim, error) {
	rows, err := l.db.QueryContext(ctx, `SELECT arena_digest, target_id, target_spec_digest, contribution_digest, hotkey, speedup_ppm, crowned_block, evidence_digest, event_sequence
		FROM standing_claims ORDER BY arena_digest, target_id`)
	if err != nil {
		return nil, classify(err)
	}
	defer rows.Close()
	var out []StandingClaim
	for rows.Next() {
		var c StandingClaim
		if err := rows.Scan(&c.ArenaDigest, &c.TargetID, &c.TargetSpecDigest, &c.ContributionDigest, &c.Hotkey, &c.SpeedupPPM, &c.CrownedBlock, &c.EvidenceDigest, &c.EventSequence); err != nil {
			return nil, classify(err)
		}
		out = append(out, c)
	}
	return out, classify(rows.Err())
}

// Crowns returns every crown in event order.
func (l *Ledger) Crowns(ctx context.Context) ([]Crown, error) {
	rows, err := l.db.QueryContext(ctx, `SELECT event_sequence, arena_digest, target_id, contribution_digest, coalesce(proposal_id, 0), hotkey, speedup FROM crowns ORDER BY event_sequence`)
	if err != nil {
		return nil, classify(err)
	}
	defer rows.Close()
	var out []Crown
	for rows.Next() {
		var c Crown
		if err := rows.Scan(&c.EventSequence, &c.ArenaDigest, &c.TargetID, &c.ContributionDigest, &c.ProposalID, &c.Hotkey, &c.Speedup); err != nil {
			return nil, classify(err)
		}
		out = append(out, c)
	}
	return out, classify(rows.Err())
}

// DiscoveryClaims returns every discovery claim in event order.
func (l *Ledger) DiscoveryClaims(ctx context.Context) ([]DiscoveryClaim, error) {
	rows, err := l.db.QueryContext(ctx, `SELECT event_sequence, arena_digest, contribution_digest, hotkey, speedup_ppm, awarded_block, evidence_digest FROM discovery_claims ORDER BY event_sequence`)
	if err != nil {
		return nil, classify(err)
	}
	defer rows.Close()
	var out []DiscoveryClaim
	for rows.Next() {
		var c DiscoveryClaim
		if err := rows.Scan(&c.EventSequence, &c.ArenaDigest, &c.ContributionDigest, &c.Hotkey, &c.SpeedupPPM, &c.AwardedBlock, &c.EvidenceDigest); err != nil {
			return nil, classify(err)
		}
		out = append(out, c)
	}
	return out, classify(rows.Err())
}
