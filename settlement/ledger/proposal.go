package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/cacheon/engine/internal/identity"
	"github.com/cacheon/engine/kernels/bundle"
	"github.com/cacheon/engine/kernels/fingerprint"
)

// Position is a finalized position on the chain: the order that decides
// priority (block, then event index, then subevent index).
type Position struct {
	Block    int64 `json:"block"`
	Event    int64 `json:"event_index"`
	Subevent int64 `json:"subevent_index"`
}

func (p Position) String() string { return fmt.Sprintf("%d/%d/%d", p.Block, p.Event, p.Subevent) }

// IntakeRequest is a finalized reveal as the intake sees it: who revealed
// what at which position, and what the validator derived from the bytes
// (kernels/contribution.InspectSnapshot). The content hashes are not part
// of it: the ledger computes them from the snapshot it publishes.
type IntakeRequest struct {
	Hotkey   string
	Position Position
	// ArenaDigest names the arena (64 hex) the proposal competes in; empty
	// when intake names none. Duplicate replay is per arena.
	ArenaDigest           string
	TargetID              string // empty: unregistered (discovery lane)
	TargetSpecDigest      string
	SelectedPayloadDigest string
	SelectedDeltaDigest   string
	// Refusal, when set, says why the validator refused the bytes before
	// publishing them (a bundle that does not inspect): the position is
	// still reserved, and the proposal is recorded failed with this
	// reason. The identities may then be empty.
	Refusal string
	// Print is the anti-copy fingerprint of the bytes (kernels/fingerprint.Of
	// of the same inspection): it is stored with the proposal and compared
	// with every earlier proposal of another hotkey in its namespace and
	// with Seeds; a copy is failed at its position naming what it copies.
	// Nil takes no part in anti-copy (a caller that is not a market intake,
	// such as a test of a later stage); a market intake always sets it.
	Print *fingerprint.Fingerprint
	// Seeds are the project's own contributions a proposal must not copy
	// either (the seed entries of the initial evaluation stack).
	Seeds []Seed
}

// Proposal is one intake proposal as the ledger holds it.
type Proposal struct {
	ID                    int64    `json:"id"`
	ArenaDigest           string   `json:"arena_digest"`
	ContentHash           string   `json:"content_hash"`
	CommittedContentHash  string   `json:"committed_content_hash"`
	Hotkey                string   `json:"hotkey"`
	Position              Position `json:"position"`
	TargetID              string   `json:"target_id"`
	TargetSpecDigest      string   `json:"target_spec_digest"`
	SelectedPayloadDigest string   `json:"selected_payload_digest"`
	SelectedDeltaDigest   string   `json:"selected_delta_digest"`
	Published             bool     `json:"published"`
	Status                Status   `json:"status"`
	Reason                string   `json:"reason"`
	// ReplayOf is the proposal whose terminal FAIL this one replays (0:
	// none).
	ReplayOf int64 `json:"replay_of"`
	// Fingerprinted says intake stored an anti-copy fingerprint.
	Fingerprinted bool `json:"fingerprinted"`
}

// IntakeResult says what Intake did.
type IntakeResult struct {
	Proposal *Proposal
	// Existing: the same reveal (position, hotkey and bytes) was already
	// taken in; nothing was written.
	Existing bool
	// Publication is the published bytes' directory; empty for a replay,
	// whose bytes are never evaluated again.
	Publication string
}

// Reasons the ledger itself writes.
const (
	ReasonFinalizedReveal = "finalized_reveal"
	ReasonPublished       = "published"
	ReasonDuplicateReplay = "duplicate_replay"
)

func (r IntakeRequest) validate() error {
	if r.Hotkey == "" {
		return fmt.Errorf("%w: intake: hotkey is empty", ErrIllegal)
	}
	if r.Position.Block <= 0 || r.Position.Event < 0 || r.Position.Subevent < 0 {
		return fmt.Errorf("%w: intake: position %s: block must be > 0, event and subevent >= 0", ErrIllegal, r.Position)
	}
	for _, f := range []struct{ name, v string }{
		{"arena_digest", r.ArenaDigest}, {"target_spec_digest", r.TargetSpecDigest},
		{"selected_payload_digest", r.SelectedPayloadDigest}, {"selected_delta_digest", r.SelectedDeltaDigest},
	} {
		if f.v != "" && !identity.IsHex64(f.v) {
			return fmt.Errorf("%w: intake: %s %q is not 64 lowercase hex", ErrIllegal, f.name, f.v)
		}
	}
	if r.Refusal != "" {
		if r.Print != nil {
			return fmt.Errorf("%w: intake: a refused bundle has no fingerprint", ErrIllegal)
		}
		return nil
	}
	if r.Print != nil && r.Print.SelectedPayloadDigest.String() != r.SelectedPayloadDigest {
		return fmt.Errorf("%w: intake: the fingerprint is of selected payload %s, the request names %s", ErrIllegal, r.Print.SelectedPayloadDigest, r.SelectedPayloadDigest)
	}
	for _, sd := range r.Seeds {
		if sd.Name == "" || sd.Print == nil {
			return fmt.Errorf("%w: intake: a seed contribution needs a name and a fingerprint", ErrIllegal)
		}
	}
	if r.SelectedPayloadDigest == "" {
		return fmt.Errorf("%w: intake: selected_payload_digest is empty", ErrIllegal)
	}
	if (r.TargetID == "") != (r.TargetSpecDigest == "") || (r.TargetID == "") != (r.SelectedDeltaDigest == "") {
		return fmt.Errorf("%w: intake: target_id, target_spec_digest and selected_delta_digest are set together or not at all", ErrIllegal)
	}
	return nil
}

// Intake takes one finalized reveal in: it reserves the position,
// publishes the snapshot's bytes (immutable, content-addressed) and records
// the proposal as published — or, when the same bytes under the same arena
// already ended in a terminal FAIL, as a failed replay of that proposal,
// which is never qualified again. Bytes that ever passed a screen or a
// qualification are never replayed: they are evaluated afresh.
//
// With a fingerprint (r.Print) the proposal is also checked for copies
// (findCopy): one that copies a seed or an earlier proposal of another
// hotkey in its namespace is published (its bytes are the evidence) and
// failed at once with a copy verdict, in the same transaction.
//
// Taking in the same reveal again (same position, hotkey and bytes) is a
// no-op that returns the existing proposal, so a chain adapter may retry
// after a crash; another reveal at a reserved position is refused.
func (l *Ledger) Intake(ctx context.Context, snap *bundle.Snapshot, r IntakeRequest) (*IntakeResult, error) {
	if err := r.validate(); err != nil {
		return nil, err
	}
	contentDigest, committedDigest, err := snap.ContentHashes()
	if err != nil {
		return nil, fmt.Errorf("intake: content hash: %w", err)
	}
	// The ledger stores identities as text: a refused or unregistered
	// proposal holds "" for what was never derived.
	content, committed := contentDigest.String(), committedDigest.String()
	existing, err := l.proposalAt(ctx, l.db, r.Position)
	if err != nil {
		return nil, err
	}
	if existing != nil {
		if existing.Hotkey != r.Hotkey || existing.ContentHash != content {
			return nil, fmt.Errorf("%w: intake: position %s is already reserved by proposal %d (hotkey %s, content hash %s)", ErrIllegal, r.Position, existing.ID, existing.Hotkey, existing.ContentHash)
		}
		res := &IntakeResult{Proposal: existing, Existing: true}
		if existing.Published {
			res.Publication = l.publicationPath(content)
		}
		return res, nil
	}
	var print string
	if r.Print != nil {
		if r.Print.ContentHash != contentDigest {
			return nil, fmt.Errorf("%w: intake: the fingerprint is of content hash %s, the snapshot's is %s", ErrIllegal, r.Print.ContentHash, content)
		}
		b, err := fingerprint.Encode(r.Print)
		if err != nil {
			return nil, fmt.Errorf("intake: fingerprint: %w", err)
		}
		print = string(b)
	}
	var replayOf int64
	if r.Refusal == "" {
		if replayOf, err = l.replaySource(ctx, l.db, r.ArenaDigest, content, r.Position); err != nil {
			return nil, err
		}
	}
	var copied *CopyVerdict
	if replayOf == 0 && r.Print != nil {
		if copied, err = l.findCopy(ctx, l.db, r); err != nil {
			return nil, err
		}
	}
	res := &IntakeResult{}
	publish := replayOf == 0 && r.Refusal == ""
	if publish {
		// Bytes first: a crash after publishing leaves an orphan
		// publication (harmless, reused by the retry), never a proposal
		// whose bytes are missing.
		dir, err := l.publish(snap, content)
		if err != nil {
			return nil, err
		}
		res.Publication = dir
	}
	l.at("intake-published")
	p := &Proposal{
		ArenaDigest: r.ArenaDigest, ContentHash: content, CommittedContentHash: committed,
		Hotkey: r.Hotkey, Position: r.Position, TargetID: r.TargetID, TargetSpecDigest: r.TargetSpecDigest,
		SelectedPayloadDigest: r.SelectedPayloadDigest, SelectedDeltaDigest: r.SelectedDeltaDigest,
		Published: publish, ReplayOf: replayOf, Fingerprinted: print != "",
	}
	type step struct {
		to     Status
		reason string
	}
	steps := []step{{Reserved, ReasonFinalizedReveal}, {Fetching, ""}, {Published, ReasonPublished}}
	switch {
	case r.Refusal != "":
		steps = []step{{Reserved, ReasonFinalizedReveal}, {Fetching, ""}, {Failed, r.Refusal}}
	case replayOf != 0:
		steps = []step{{Failed, ReasonDuplicateReplay}}
	case copied != nil:
		// The bytes stay published: they are the evidence of the verdict,
		// and what a cleared verdict is evaluated from.
		steps = append(steps, step{Failed, copied.Reason()})
	}
	err = l.tx(ctx, func(t *sql.Tx) error {
		var replay any
		if replayOf != 0 {
			replay = replayOf
		}
		last := steps[len(steps)-1]
		out, err := t.ExecContext(ctx, `INSERT INTO proposals (arena_digest, content_hash, committed_content_hash, hotkey, block, event_index, subevent_index,
			target_id, target_spec_digest, selected_payload_digest, selected_delta_digest, published, status, reason, replay_of, fingerprint)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			p.ArenaDigest, p.ContentHash, p.CommittedContentHash, p.Hotkey, p.Position.Block, p.Position.Event, p.Position.Subevent,
			p.TargetID, p.TargetSpecDigest, p.SelectedPayloadDigest, p.SelectedDeltaDigest, p.Published, string(last.to), last.reason, replay, print)
		if err != nil {
			return fmt.Errorf("insert proposal: %w", err)
		}
		if p.ID, err = out.LastInsertId(); err != nil {
			return err
		}
		from := start
		for i, s := range steps {
			if err := checkTransition(p.ID, from, s.to); err != nil {
				return err
			}
			if _, err := t.ExecContext(ctx, `INSERT INTO proposal_transitions (proposal_id, seq, from_status, to_status, reason) VALUES (?, ?, ?, ?, ?)`,
				p.ID, i+1, string(from), string(s.to), s.reason); err != nil {
				return fmt.Errorf("insert transition: %w", err)
			}
			from = s.to
		}
		if copied != nil {
			copied.ProposalID = p.ID
			if err := insertCopyVerdict(ctx, t, copied); err != nil {
				return err
			}
		}
		if err := bindRows(ctx, t, RecordIntake, selection{"proposals", "id = ?", []any{p.ID}},
			selection{"proposal_transitions", "proposal_id = ?", []any{p.ID}}); err != nil {
			return err
		}
		p.Status, p.Reason = last.to, last.reason
		l.at("intake-inserted")
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("intake at %s: %w", r.Position, err)
	}
	res.Proposal = p
	return res, nil
}

// replaySource returns the proposal whose terminal FAIL a reveal of these
// bytes at pos replays, or 0. The source is the earliest earlier proposal
// of the same bytes under the same arena that failed with a FAIL decision
// as its last attempt; when any earlier proposal of the bytes has a PASS
// there is none.
func (l *Ledger) replaySource(ctx context.Context, q querier, arena, content string, pos Position) (int64, error) {
	var passed int
	err := q.QueryRowContext(ctx, `SELECT count(*) FROM proposals p JOIN attempts a ON a.proposal_id = p.id
		WHERE p.arena_digest = ? AND p.content_hash = ? AND a.decision = 'PASS'`, arena, content).Scan(&passed)
	if err != nil {
		return 0, classify(err)
	}
	if passed > 0 {
		return 0, nil
	}
	var id int64
	err = q.QueryRowContext(ctx, `SELECT p.id FROM proposals p
		WHERE p.arena_digest = ? AND p.content_hash = ? AND p.status = 'failed' AND p.replay_of IS NULL
		  AND (p.block, p.event_index, p.subevent_index) < (?, ?, ?)
		  AND (SELECT a.decision FROM attempts a WHERE a.proposal_id = p.id ORDER BY a.seq DESC LIMIT 1) = 'FAIL'
		ORDER BY p.block, p.event_index, p.subevent_index LIMIT 1`,
		arena, content, pos.Block, pos.Event, pos.Subevent).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return id, classify(err)
}

const proposalColumns = `id, arena_digest, content_hash, committed_content_hash, hotkey, block, event_index, subevent_index,
	target_id, target_spec_digest, selected_payload_digest, selected_delta_digest, published, status, reason, coalesce(replay_of, 0), fingerprint <> ''`

func scanProposal(row interface{ Scan(...any) error }) (*Proposal, error) {
	var p Proposal
	var status string
	err := row.Scan(&p.ID, &p.ArenaDigest, &p.ContentHash, &p.CommittedContentHash, &p.Hotkey, &p.Position.Block, &p.Position.Event, &p.Position.Subevent,
		&p.TargetID, &p.TargetSpecDigest, &p.SelectedPayloadDigest, &p.SelectedDeltaDigest, &p.Published, &status, &p.Reason, &p.ReplayOf, &p.Fingerprinted)
	if err != nil {
		return nil, err
	}
	p.Status = Status(status)
	return &p, nil
}

func (l *Ledger) proposalAt(ctx context.Context, q querier, pos Position) (*Proposal, error) {
	p, err := scanProposal(q.QueryRowContext(ctx, `SELECT `+proposalColumns+` FROM proposals WHERE block = ? AND event_index = ? AND subevent_index = ?`,
		pos.Block, pos.Event, pos.Subevent))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return p, classify(err)
}

// Proposal returns the proposal id.
func (l *Ledger) Proposal(ctx context.Context, id int64) (*Proposal, error) {
	return l.proposal(ctx, l.db, id)
}

func (l *Ledger) proposal(ctx context.Context, q querier, id int64) (*Proposal, error) {
	p, err := scanProposal(q.QueryRowContext(ctx, `SELECT `+proposalColumns+` FROM proposals WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w: no proposal %d", ErrIllegal, id)
	}
	return p, classify(err)
}

// Transition moves proposal id to status to, with a reason (required for
// failed, expired, held and no_decision). The state machine is enforced,
// and so is the evidence a status needs: reproduction_pending needs a
// PASS qualification, qualified two of them.
//
// A proposal enters flight under a lease (TakeLease) and goes back to the
// queue only by Reclaim; Transition moving it out of flight releases its
// lease in the same transaction.
func (l *Ledger) Transition(ctx context.Context, id int64, to Status, reason string) error {
	return l.tx(ctx, func(t *sql.Tx) error {
		p, err := l.proposal(ctx, t, id)
		if err != nil {
			return err
		}
		if to == Published && leased(p.Status) {
			return fmt.Errorf("%w: proposal %d: only a lease reclaim returns a proposal in flight to the queue", ErrIllegal, id)
		}
		return l.transition(ctx, t, p, to, reason)
	})
}

// transition moves p to status to in t, checking the state machine and
// the evidence the status needs, and releases p's lease when it leaves
// flight.
func (l *Ledger) transition(ctx context.Context, t *sql.Tx, p *Proposal, to Status, reason string) error {
	id := p.ID
	if err := checkTransition(id, p.Status, to); err != nil {
		return err
	}
	if reason == "" && (to == Failed || to == Expired || to == Held || to == NoDecision) {
		return fmt.Errorf("%w: proposal %d: a transition to %s needs a reason", ErrIllegal, id, to)
	}
	if need := map[Status]int{ReproductionPending: 1, Qualified: 2}[to]; need > 0 {
		var passes int
		if err := t.QueryRowContext(ctx, `SELECT count(*) FROM attempts WHERE proposal_id = ? AND stage = 'qualification' AND decision = 'PASS'`, id).Scan(&passes); err != nil {
			return err
		}
		if passes < need {
			return fmt.Errorf("%w: proposal %d: %s needs %d passing qualifications, it has %d", ErrIllegal, id, to, need, passes)
		}
	}
	if to == Screening && !p.Published {
		return fmt.Errorf("%w: proposal %d: bytes were never published", ErrIllegal, id)
	}
	if to != Published {
		if err := l.releaseIfLeaving(ctx, t, p, to); err != nil {
			return err
		}
	}
	if err := appendTransition(ctx, t, id, p.Status, to, reason); err != nil {
		return err
	}
	_, err := t.ExecContext(ctx, `UPDATE proposals SET status = ?, reason = ? WHERE id = ?`, string(to), reason, id)
	return err
}

// appendTransition inserts proposal id's next transition in t and binds
// it to the row record chain in the same transaction. The proposal's
// status and reason are checked against its last transition rather than
// bound themselves, so binding every transition is what makes a hand edit
// of a status, together with the transition that explains it, refused.
func appendTransition(ctx context.Context, t *sql.Tx, id int64, from, to Status, reason string) error {
	var seq int
	if err := t.QueryRowContext(ctx, `SELECT coalesce(max(seq), 0) + 1 FROM proposal_transitions WHERE proposal_id = ?`, id).Scan(&seq); err != nil {
		return fmt.Errorf("proposal %d: next transition: %w", id, classify(err))
	}
	if _, err := t.ExecContext(ctx, `INSERT INTO proposal_transitions (proposal_id, seq, from_status, to_status, reason) VALUES (?, ?, ?, ?, ?)`,
		id, seq, string(from), string(to), reason); err != nil {
		return fmt.Errorf("proposal %d: insert transition %d: %w", id, seq, classify(err))
	}
	return bindRows(ctx, t, RecordTransition, selection{"proposal_transitions", "proposal_id = ? AND seq = ?", []any{id, seq}})
}

// Attempt is one screen or qualification run on a proposal, with where its
// evidence lives.
type Attempt struct {
	Seq             int    `json:"seq"`
	Stage           string `json:"stage"` // "screen" or "qualification"
	ReportDigest    string `json:"report_digest"`
	EvidenceAddress string `json:"evidence_address"` // the report's address in the evidence store
	Decision        string `json:"decision"`         // PASS, FAIL or NO_DECISION
	Reason          string `json:"reason"`
	// Settlement is a passing qualification's settlement view: canonical
	// JSON (settlement/settle.Qualification) that settlement pairs. Empty
	// for screens, for FAILs and while the qualification report does not
	// yet carry every field settlement needs.
	Settlement []byte `json:"settlement,omitempty"`
}

// Attempt stages.
const (
	StageScreen        = "screen"
	StageQualification = "qualification"
)

// RecordAttempt records an attempt on proposal id, which must be in the
// status the stage runs in (screening for a screen, qualifying for a
// qualification), and returns its sequence number.
func (l *Ledger) RecordAttempt(ctx context.Context, id int64, a Attempt) (int, error) {
	want := map[string]Status{StageScreen: Screening, StageQualification: Qualifying}[a.Stage]
	if want == "" {
		return 0, fmt.Errorf("%w: attempt stage %q is not screen or qualification", ErrIllegal, a.Stage)
	}
	if a.Decision != "PASS" && a.Decision != "FAIL" && a.Decision != "NO_DECISION" {
		return 0, fmt.Errorf("%w: attempt decision %q is not PASS, FAIL or NO_DECISION", ErrIllegal, a.Decision)
	}
	if err := identity.CheckDigest("report_digest", a.ReportDigest, false); err != nil {
		return 0, fmt.Errorf("%w: attempt: %v", ErrIllegal, err)
	}
	if err := identity.CheckDigest("evidence_address", a.EvidenceAddress, false); err != nil {
		return 0, fmt.Errorf("%w: attempt: %v", ErrIllegal, err)
	}
	if len(a.Settlement) > 0 {
		if a.Stage != StageQualification || a.Decision != "PASS" {
			return 0, fmt.Errorf("%w: attempt: only a passing qualification carries a settlement view (this is a %s %s)", ErrIllegal, a.Decision, a.Stage)
		}
		if err := checkCanonicalObject(a.Settlement); err != nil {
			return 0, fmt.Errorf("%w: attempt: settlement view: %v", ErrIllegal, err)
		}
	}
	var seq int
	err := l.tx(ctx, func(t *sql.Tx) error {
		p, err := l.proposal(ctx, t, id)
		if err != nil {
			return err
		}
		if p.Status != want {
			return fmt.Errorf("%w: proposal %d is %s; a %s attempt needs %s", ErrIllegal, id, p.Status, a.Stage, want)
		}
		if err := t.QueryRowContext(ctx, `SELECT coalesce(max(seq), 0) + 1 FROM attempts WHERE proposal_id = ?`, id).Scan(&seq); err != nil {
			return err
		}
		if _, err := t.ExecContext(ctx, `INSERT INTO attempts (proposal_id, seq, stage, report_digest, evidence_address, decision, reason, settlement) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			id, seq, a.Stage, a.ReportDigest, a.EvidenceAddress, a.Decision, a.Reason, string(a.Settlement)); err != nil {
			return err
		}
		return bindRows(ctx, t, RecordAttempt, selection{"attempts", "proposal_id = ? AND seq = ?", []any{id, seq}})
	})
	return seq, err
}

// Attempts returns proposal id's attempts in order.
func (l *Ledger) Attempts(ctx context.Context, id int64) ([]Attempt, error) {
	return attempts(ctx, l.db, id)
}

func attempts(ctx context.Context, q querier, id int64) ([]Attempt, error) {
	rows, err := q.QueryContext(ctx, `SELECT seq, stage, report_digest, evidence_address, decision, reason, settlement FROM attempts WHERE proposal_id = ? ORDER BY seq`, id)
	if err != nil {
		return nil, classify(err)
	}
	defer rows.Close()
	var out []Attempt
	for rows.Next() {
		var a Attempt
		var view string
		if err := rows.Scan(&a.Seq, &a.Stage, &a.ReportDigest, &a.EvidenceAddress, &a.Decision, &a.Reason, &view); err != nil {
			return nil, classify(err)
		}
		if view != "" {
			a.Settlement = []byte(view)
		}
		out = append(out, a)
	}
	return out, classify(rows.Err())
}

// Undecided lists the proposals evaluation has not decided, in finalized
// order: every one whose status is not terminal (on its way to a verdict,
// held, or no_decision), each with its last reason. They are what a
// settlement with nothing queued names as the reason nothing was crowned.
func (l *Ledger) Undecided(ctx context.Context) ([]Proposal, error) {
	rows, err := l.db.QueryContext(ctx, `SELECT `+proposalColumns+` FROM proposals WHERE status NOT IN (?, ?, ?) ORDER BY block, event_index, subevent_index`,
		string(Failed), string(Expired), string(Qualified))
	if err != nil {
		return nil, classify(err)
	}
	defer rows.Close()
	out := []Proposal{}
	for rows.Next() {
		p, err := scanProposal(rows)
		if err != nil {
			return nil, classify(err)
		}
		out = append(out, *p)
	}
	return out, classify(rows.Err())
}

// Proposals lists the proposals in status s, in finalized order (block,
// event, subevent): the order evaluation takes them in.
func (l *Ledger) Proposals(ctx context.Context, s Status) ([]Proposal, error) {
	rows, err := l.db.QueryContext(ctx, `SELECT `+proposalColumns+` FROM proposals WHERE status = ? ORDER BY block, event_index, subevent_index`, string(s))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []Proposal{}
	for rows.Next() {
		p, err := scanProposal(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *p)
	}
	return out, rows.Err()
}
