package settle

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/cacheon/engine/internal/canonjson"
	"github.com/cacheon/engine/internal/identity"
)

// Outcome is what settlement does with one candidate row.
type Outcome string

// Outcomes.
const (
	OutcomeCrown           Outcome = "CROWN"
	OutcomeHold            Outcome = "HOLD"
	OutcomeDiscoveryBounty Outcome = "DISCOVERY_BOUNTY"
)

// Row reasons (and the reasons events carry).
const (
	// ReasonQualifiedWin is the one winner of the plan.
	ReasonQualifiedWin Reason = "qualified_win"
	// ReasonStaleIncumbent is a row measured over a stack that is no
	// longer current: it must requalify.
	ReasonStaleIncumbent Reason = "stale_incumbent"
	// ReasonQualifiedDiscovery is a current discovery row: a bounty,
	// never a stack change.
	ReasonQualifiedDiscovery Reason = "qualified_discovery"
	// ReasonConflictLost is a current registered row that shares a
	// member slot with the winner and lost to it.
	ReasonConflictLost Reason = "conflict_lost"
	// ReasonIncumbentAdvanced is a current registered row disjoint from
	// the winner: the winner moves the incumbent under it, so it must
	// requalify against the new one.
	ReasonIncumbentAdvanced Reason = "incumbent_advanced"
	// ReasonSuperseded retires the winner target's prior entry.
	ReasonSuperseded Reason = "superseded"
	// ReasonDisplaced neutralizes an entry the winner's target displaces.
	ReasonDisplaced Reason = "displaced"
	// ReasonAdopted adopts the winner's entry into the stack.
	ReasonAdopted Reason = "adopted"
	// ReasonIncumbentUpdated moves the evaluation incumbent.
	ReasonIncumbentUpdated Reason = "incumbent_updated"

	// ReasonDuplicateCandidate is a plan given one candidate twice.
	ReasonDuplicateCandidate Reason = "duplicate_candidate"
	// ReasonDuplicateReservation is a plan given two candidates of one
	// reservation.
	ReasonDuplicateReservation Reason = "duplicate_reservation"
)

// EventType is the kind of a settlement event.
type EventType string

// Event types, in the order a winner's events are written.
const (
	EventCrown           EventType = "CROWN"
	EventRetirement      EventType = "RETIREMENT"
	EventNeutralization  EventType = "NEUTRALIZATION"
	EventAdoption        EventType = "ADOPTION"
	EventStackTransition EventType = "STACK_TRANSITION"
)

// Event is one link of the settlement hash chain. Digests are hex
// strings (not identity.Digest) because the first event's previous
// digest is the empty string.
type Event struct {
	Type                EventType `json:"event_type"`
	Sequence            uint64    `json:"sequence"`
	PreviousEventDigest string    `json:"previous_event_digest"`
	CandidateDigest     string    `json:"candidate_digest"`
	SubjectDigest       string    `json:"subject_digest"`
	TargetID            string    `json:"target_id"`
	FromStackDigest     string    `json:"from_stack_digest"`
	FromTreeDigest      string    `json:"from_tree_digest"`
	ToStackDigest       string    `json:"to_stack_digest"`
	ToTreeDigest        string    `json:"to_tree_digest"`
	Reason              Reason    `json:"reason"`
}

// Body is the event's canonical JSON object: what a ledger stores and
// what the digest is computed over.
func (e Event) Body() ([]byte, error) {
	b, err := canonjson.Marshal(e)
	if err != nil {
		return nil, fmt.Errorf("settlement event %d: %w", e.Sequence, err)
	}
	return b, nil
}

// Digest is H(cacheon.settlement.event, body).
func (e Event) Digest() (identity.Digest, error) {
	b, err := e.Body()
	if err != nil {
		return identity.Digest{}, err
	}
	return EventDigest(b)
}

// EventDigest is the digest of a stored event body, so a ledger that
// keeps bodies as bytes recomputes exactly Event.Digest.
func EventDigest(body []byte) (identity.Digest, error) {
	return identity.H(identity.DomainSettlementEvent, json.RawMessage(body))
}

// Head is where a chain continues: the sequence and digest of its last
// event (0 and "" before the first). Sequences run contiguously from 1,
// as the ledger stores them, so the next event is Sequence+1.
type Head struct {
	Sequence uint64
	Digest   string
}

// Genesis is the head of an empty chain.
var Genesis = Head{}

// VerifyChain checks that events continue the chain at head: contiguous
// sequences and each previous digest the digest of the event before. It
// returns the head after them.
func VerifyChain(head Head, events []Event) (Head, error) {
	for i, e := range events {
		if e.Sequence != head.Sequence+1 {
			return head, fmt.Errorf("event %d: sequence %d, want %d", i, e.Sequence, head.Sequence+1)
		}
		if e.PreviousEventDigest != head.Digest {
			return head, fmt.Errorf("event %d (sequence %d): previous digest %q, want %q", i, e.Sequence, e.PreviousEventDigest, head.Digest)
		}
		d, err := e.Digest()
		if err != nil {
			return head, err
		}
		head = Head{Sequence: e.Sequence, Digest: d.String()}
	}
	return head, nil
}

// Row is one candidate's outcome.
type Row struct {
	Candidate   string   `json:"candidate_digest"`
	Reservation string   `json:"reservation"`
	Finalized   Position `json:"finalized"`
	Lane        Lane     `json:"lane"`
	TargetID    string   `json:"target_id"`
	Hotkey      string   `json:"hotkey"`
	Speedup     string   `json:"speedup"`
	SpeedupPPM  int64    `json:"speedup_ppm"`
	Outcome     Outcome  `json:"outcome"`
	Reason      Reason   `json:"reason"`
}

// StandingClaim is the claim a crown writes for its (arena, target):
// who holds the target at which settled speedup since which finalized
// submission block.
type StandingClaim struct {
	Arena        string `json:"arena"`
	TargetID     string `json:"target"`
	TargetSpec   string `json:"target_spec"`
	Contribution string `json:"contribution"`
	Hotkey       string `json:"hotkey"`
	SpeedupPPM   int64  `json:"speedup_ppm"`
	CrownedBlock uint64 `json:"crowned_block"`
}

// Settlement is a planned settlement: every row's outcome in finalized
// order, the winner's events chained from the head, the standing claim
// of the crown, and the evaluation stack after it.
type Settlement struct {
	CurrentStack string `json:"current_stack"`
	CurrentTree  string `json:"current_tree"`
	Rows         []Row  `json:"rows"`
	// Events are empty when no registered row is current.
	Events []Event `json:"events"`
	// Winner indexes Rows; -1 when there is none.
	Winner        int            `json:"-"`
	StandingClaim *StandingClaim `json:"standing_claim"`
	NextStack     string         `json:"next_stack"`
	NextTree      string         `json:"next_tree"`
	// Digest is H(cacheon.settlement.plan, the fields above with the
	// events as their digests).
	Digest identity.Digest `json:"plan_digest"`
}

// planPayload is what the plan digest covers.
type planPayload struct {
	CurrentStack  string         `json:"current_stack"`
	CurrentTree   string         `json:"current_tree"`
	Rows          []Row          `json:"rows"`
	Events        []string       `json:"events"`
	StandingClaim *StandingClaim `json:"standing_claim"`
	NextStack     string         `json:"next_stack"`
	NextTree      string         `json:"next_tree"`
}

// Plan settles candidates against the current evaluation stack and tree,
// with the events starting a new chain; PlanFrom continues one.
func Plan(candidates []*Candidate, currentStack, currentTree string) (*Settlement, error) {
	return PlanFrom(Genesis, candidates, currentStack, currentTree)
}

// PlanFrom settles candidates against the current stack and tree:
//
//   - a row measured over another incumbent is HOLD stale_incumbent;
//   - a current discovery row is DISCOVERY_BOUNTY qualified_discovery;
//   - among current registered rows the one with the greatest
//     conservative speedup wins (CROWN qualified_win), ties going to the
//     earliest in finalized order (block, event index, subevent index,
//     reservation digest);
//   - every other current registered row is HOLD conflict_lost when it
//     shares a member with the winner, else incumbent_advanced.
//
// The winner's events follow head in order: CROWN, RETIREMENT of the
// prior entry at its target, NEUTRALIZATION of each displaced entry,
// ADOPTION and STACK_TRANSITION. The result depends only on the set of
// candidates, never on their order in the slice.
func PlanFrom(head Head, candidates []*Candidate, currentStack, currentTree string) (*Settlement, error) {
	for _, f := range []namedValue{{"current_stack", currentStack}, {"current_tree", currentTree}} {
		if err := identity.CheckDigest(f.name, f.value, false); err != nil {
			return nil, rejectf(ReasonInvalidField.on(f.name), "settlement plan: %v", err)
		}
	}
	if head.Digest != "" {
		if err := identity.CheckDigest("chain_head", head.Digest, false); err != nil {
			return nil, rejectf(ReasonInvalidField.on("chain_head"), "settlement plan: %v", err)
		}
	} else if head.Sequence != 0 {
		return nil, rejectf(ReasonInvalidField.on("chain_head"), "settlement plan: chain head at sequence %d has no digest", head.Sequence)
	}
	sorted := make([]*Candidate, len(candidates))
	copy(sorted, candidates)
	for i, c := range sorted {
		if c == nil {
			return nil, fmt.Errorf("settlement plan: candidate %d is nil", i)
		}
	}
	sort.Slice(sorted, func(i, j int) bool { return finalizedBefore(sorted[i], sorted[j]) })
	seen, reserved := map[identity.Digest]bool{}, map[string]bool{}
	for _, c := range sorted {
		if seen[c.digest] {
			return nil, rejectf(ReasonDuplicateCandidate, "candidate %s appears twice", c.digest)
		}
		seen[c.digest] = true
		if reserved[c.Reservation()] {
			return nil, rejectf(ReasonDuplicateReservation, "reservation %s has two candidates", c.Reservation())
		}
		reserved[c.Reservation()] = true
	}

	s := &Settlement{CurrentStack: currentStack, CurrentTree: currentTree, Rows: make([]Row, len(sorted)), Events: []Event{},
		Winner: -1, NextStack: currentStack, NextTree: currentTree}
	for i, c := range sorted {
		s.Rows[i] = Row{Candidate: c.digest.String(), Reservation: c.Reservation(), Finalized: c.Finalized(), Lane: c.Lane(),
			TargetID: c.TargetID(), Hotkey: c.Hotkey(), Speedup: c.speedupText, SpeedupPPM: c.ppm}
		switch {
		case c.IncumbentStack() != currentStack || c.IncumbentTree() != currentTree:
			s.Rows[i].Outcome, s.Rows[i].Reason = OutcomeHold, ReasonStaleIncumbent
		case c.Lane() == LaneDiscovery:
			s.Rows[i].Outcome, s.Rows[i].Reason = OutcomeDiscoveryBounty, ReasonQualifiedDiscovery
		case s.Winner < 0 || c.speedup.Cmp(sorted[s.Winner].speedup) > 0:
			// Rows are in finalized order, so only a strictly greater
			// speedup displaces an earlier leader.
			s.Winner = i
		}
	}
	if s.Winner >= 0 {
		w := sorted[s.Winner]
		for i, c := range sorted {
			switch {
			case i == s.Winner:
				s.Rows[i].Outcome, s.Rows[i].Reason = OutcomeCrown, ReasonQualifiedWin
			case s.Rows[i].Outcome != "":
			case overlaps(c.first.Members, w.first.Members):
				s.Rows[i].Outcome, s.Rows[i].Reason = OutcomeHold, ReasonConflictLost
			default:
				s.Rows[i].Outcome, s.Rows[i].Reason = OutcomeHold, ReasonIncumbentAdvanced
			}
		}
		events, err := crownEvents(head, w, currentStack, currentTree)
		if err != nil {
			return nil, err
		}
		s.Events = events
		s.NextStack, s.NextTree = w.CandidateStack(), w.CandidateTree()
		s.StandingClaim = &StandingClaim{Arena: w.Arena(), TargetID: w.TargetID(), TargetSpec: w.TargetSpec(),
			Contribution: w.Proposal(), Hotkey: w.Hotkey(), SpeedupPPM: w.ppm, CrownedBlock: w.Finalized().Block}
	}
	p := planPayload{CurrentStack: s.CurrentStack, CurrentTree: s.CurrentTree, Rows: s.Rows, Events: []string{},
		StandingClaim: s.StandingClaim, NextStack: s.NextStack, NextTree: s.NextTree}
	for _, e := range s.Events {
		d, err := e.Digest()
		if err != nil {
			return nil, err
		}
		p.Events = append(p.Events, d.String())
	}
	d, err := identity.H(identity.DomainSettlementPlan, p)
	if err != nil {
		return nil, fmt.Errorf("settlement plan: %w", err)
	}
	s.Digest = d
	return s, nil
}

// finalizedBefore is finalized order: block, event index, subevent
// index, then reservation digest; the candidate digest last, so the
// order is total even over inputs Plan then refuses.
func finalizedBefore(a, b *Candidate) bool {
	if c := a.Finalized().compare(b.Finalized()); c != 0 {
		return c < 0
	}
	if a.Reservation() != b.Reservation() {
		return a.Reservation() < b.Reservation()
	}
	return a.digest.String() < b.digest.String()
}

// crownEvents chains the winner's events after head.
func crownEvents(head Head, w *Candidate, fromStack, fromTree string) ([]Event, error) {
	base := Event{CandidateDigest: w.digest.String(), TargetID: w.TargetID(),
		FromStackDigest: fromStack, FromTreeDigest: fromTree, ToStackDigest: w.CandidateStack(), ToTreeDigest: w.CandidateTree()}
	with := func(t EventType, subject, target string, reason Reason) Event {
		e := base
		e.Type, e.SubjectDigest, e.TargetID, e.Reason = t, subject, target, reason
		return e
	}
	tr := w.Transition()
	events := []Event{with(EventCrown, w.Proposal(), w.TargetID(), ReasonQualifiedWin)}
	if tr.Prior != "" {
		events = append(events, with(EventRetirement, tr.Prior, w.TargetID(), ReasonSuperseded))
	}
	for _, d := range tr.Displaced {
		events = append(events, with(EventNeutralization, d.Entry, d.TargetID, ReasonDisplaced))
	}
	events = append(events,
		with(EventAdoption, w.Proposal(), w.TargetID(), ReasonAdopted),
		with(EventStackTransition, w.CandidateStack(), w.TargetID(), ReasonIncumbentUpdated))
	for i := range events {
		events[i].Sequence = head.Sequence + 1
		events[i].PreviousEventDigest = head.Digest
		d, err := events[i].Digest()
		if err != nil {
			return nil, err
		}
		head = Head{Sequence: head.Sequence + 1, Digest: d.String()}
	}
	return events, nil
}
