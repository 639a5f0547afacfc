package apply

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/cacheon/engine/internal/identity"
	"github.com/cacheon/engine/kernels/contribution"
	"github.com/cacheon/engine/settlement/ledger"
	"github.com/cacheon/engine/settlement/settle"
	"github.com/cacheon/engine/stacks/stack"
)

// Refusals of a crown read back from the ledger.
const (
	// ReasonNoCrown: the ledger holds no crown at the target.
	ReasonNoCrown Reason = "no_crown"
	// ReasonCrownNotCurrent: a later event retired or neutralized the
	// target's last crown, so the evaluation incumbent no longer holds it.
	ReasonCrownNotCurrent Reason = "crown_not_current"
	// ReasonCrownNotIntake: the crown names no intake proposal of this
	// ledger, so its qualification attempts are not here.
	ReasonCrownNotIntake Reason = "crown_not_intake"
	// ReasonCrownInconsistent: the ledger's rows behind a crown disagree
	// (named after the colon); the ledger passed its check, so this is a
	// crown the settlement rules never wrote.
	ReasonCrownInconsistent Reason = "crown_inconsistent"
)

// Crowned is a crown as the ledger holds it, with every digest an
// integration review binds recomputed from the ledger's own rows: the
// CROWN event, the settled pair of qualification attempts and the
// evaluation stack the crown made current. It is a plain value, so the
// release side reads a crown without the settlement rules.
type Crowned struct {
	EventSequence int64  `json:"event_sequence"`
	ProposalID    int64  `json:"proposal_id"`
	ArenaDigest   string `json:"arena_digest"`
	TargetID      string `json:"target_id"`
	// TargetSpecDigest is the target-spec digest both qualifications and
	// the intake row were resolved under.
	TargetSpecDigest string `json:"target_spec_digest"`
	// ProposalContributionDigest is the crowned proposal reference (the
	// CROWN event's subject).
	ProposalContributionDigest string `json:"proposal_contribution_digest"`
	// SettlementCandidateDigest is the paired candidate (the CROWN event's
	// candidate), recomputed by pairing the two attempts again.
	SettlementCandidateDigest string `json:"settlement_candidate_digest"`
	// SettlementEvidenceDigest is the evidence the crown's standing claim
	// retains, recomputed from the candidate and the two attempts.
	SettlementEvidenceDigest string `json:"settlement_evidence_digest"`
	CrownEventDigest         string `json:"crown_event_digest"`
	// SelectedPayloadDigest and ArtifactDigest are the intake row's: what
	// the published bytes select and their content hash.
	SelectedPayloadDigest string `json:"selected_payload_digest"`
	ArtifactDigest        string `json:"artifact_digest"`
	// AttributionDigest is the crowned entry's in the stack the crown made
	// current; with the fields above it re-derives the proposal reference.
	AttributionDigest string `json:"attribution_digest"`
	// StackDigest is that stack.
	StackDigest string `json:"stack_digest"`
	// Primary and Reproduction are the two qualification attempts the
	// crown settled on, in the order they ran; each carries its settlement
	// view, the canonical JSON settlement paired.
	Primary      ledger.Attempt `json:"primary_attempt"`
	Reproduction ledger.Attempt `json:"reproduction_attempt"`
}

// CrownAt reads the current crown of target from l: the last crown
// settled at target, refused when a later event retired or neutralized
// it. The ledger must pass its full check first (a crown is history the
// quick check from a checkpoint skips), and every digest is recomputed
// and cross-checked against the rows that recorded it, so a caller never
// binds a value the ledger merely asserts.
func CrownAt(ctx context.Context, l *ledger.Ledger, target string) (*Crowned, error) {
	if _, err := l.CheckFull(ctx); err != nil {
		return nil, fmt.Errorf("ledger check: %w", err)
	}
	crowns, err := l.Crowns(ctx)
	if err != nil {
		return nil, err
	}
	var crown *ledger.Crown
	crowned := map[string]bool{}
	for i := range crowns {
		crowned[crowns[i].TargetID] = true
		if crowns[i].TargetID == target {
			crown = &crowns[i]
		}
	}
	if crown == nil {
		names := make([]string, 0, len(crowned))
		for t := range crowned {
			names = append(names, t)
		}
		sort.Strings(names)
		held := "none"
		if len(names) > 0 {
			held = strings.Join(names, ", ")
		}
		return nil, &Rejection{Reason: ReasonNoCrown, Detail: fmt.Sprintf("ledger %s holds no crown at target %s (crowned targets: %s)", l.Path(), target, held)}
	}
	if crown.ProposalID == 0 {
		return nil, &Rejection{Reason: ReasonCrownNotIntake, Detail: fmt.Sprintf("the crown of event %d at %s names no intake proposal of this ledger; its qualification attempts are not here", crown.EventSequence, target)}
	}
	events, err := l.Events(ctx, crown.EventSequence, 0)
	if err != nil {
		return nil, err
	}
	if len(events) == 0 || events[0].Sequence != crown.EventSequence {
		return nil, inconsistent("crown_event", crown.ProposalID, "the crown names event %d, which the chain does not hold", crown.EventSequence)
	}
	ev, err := decodeEvent(events[0])
	if err != nil {
		return nil, inconsistent("crown_event", crown.ProposalID, "%v", err)
	}
	switch {
	case ev.Type != settle.EventCrown || ev.Reason != settle.ReasonQualifiedWin:
		return nil, inconsistent("crown_event", crown.ProposalID, "event %d is %s (%s), not a CROWN for %s", ev.Sequence, ev.Type, ev.Reason, settle.ReasonQualifiedWin)
	case ev.TargetID != target:
		return nil, inconsistent("crown_event", crown.ProposalID, "event %d crowns target %s, the crown row says %s", ev.Sequence, ev.TargetID, target)
	case ev.SubjectDigest != crown.ContributionDigest:
		return nil, inconsistent("crown_event", crown.ProposalID, "event %d crowns contribution %s, the crown row says %s", ev.Sequence, ev.SubjectDigest, crown.ContributionDigest)
	}
	for _, later := range events[1:] {
		e, err := decodeEvent(later)
		if err != nil {
			return nil, inconsistent("event", crown.ProposalID, "%v", err)
		}
		// A later settlement ends this crown by retiring (a new crown at
		// the target) or neutralizing (a displacing crown) its entry.
		if e.SubjectDigest == crown.ContributionDigest && (e.Type == settle.EventRetirement || e.Type == settle.EventNeutralization) {
			return nil, &Rejection{Reason: ReasonCrownNotCurrent, ProposalID: crown.ProposalID,
				Detail: fmt.Sprintf("the crown of event %d at %s was ended by %s event %d (%s); the evaluation incumbent no longer holds it", crown.EventSequence, target, e.Type, e.Sequence, e.Reason)}
		}
	}

	p, err := l.Proposal(ctx, crown.ProposalID)
	if err != nil {
		return nil, err
	}
	all, err := l.Attempts(ctx, p.ID)
	if err != nil {
		return nil, err
	}
	var passes []ledger.Attempt
	for _, a := range all {
		if a.Stage == ledger.StageQualification && a.Decision == "PASS" {
			passes = append(passes, a)
		}
	}
	// The pair is chosen exactly as Settle chose it, and proven to be the
	// one settled by the candidate digest the event and the outcome hold.
	w, err := pairOf(ledger.Queued{Proposal: *p, Passes: passes})
	if err != nil {
		return nil, inconsistent("attempts", p.ID, "%v", err)
	}
	cand := w.candidate.Digest().String()
	if cand != ev.CandidateDigest {
		return nil, inconsistent("candidate", p.ID, "its attempts %d and %d pair to candidate %s, event %d crowned %s", w.passes[0].Seq, w.passes[1].Seq, cand, ev.Sequence, ev.CandidateDigest)
	}
	outcomes, err := l.Outcomes(ctx, p.ID)
	if err != nil {
		return nil, err
	}
	var outcome *ledger.Outcome
	for i := range outcomes {
		if outcomes[i].EventSequence == crown.EventSequence {
			outcome = &outcomes[i]
		}
	}
	if outcome == nil || outcome.Outcome != ledger.OutcomeCrown || outcome.CandidateDigest != cand {
		return nil, inconsistent("outcome", p.ID, "no CROWN outcome of candidate %s records event %d", cand, crown.EventSequence)
	}
	evidence, err := evidenceDigest(&w)
	if err != nil {
		return nil, err
	}
	claims, err := l.StandingClaims(ctx)
	if err != nil {
		return nil, err
	}
	for _, c := range claims {
		if c.EventSequence == crown.EventSequence && c.EvidenceDigest != evidence {
			return nil, inconsistent("settlement_evidence", p.ID, "the standing claim of event %d retains evidence %s, its attempts recompute %s", c.EventSequence, c.EvidenceDigest, evidence)
		}
	}
	if w.candidate.TargetSpec() != p.TargetSpecDigest {
		return nil, inconsistent("target_spec", p.ID, "the qualifications measured target spec %s, intake recorded %s", w.candidate.TargetSpec(), p.TargetSpecDigest)
	}
	spec, payload, content, err := proposalDigests(p)
	if err != nil {
		return nil, inconsistent("intake", p.ID, "%v", err)
	}
	delta, err := contribution.SelectedDelta(payload, target, spec)
	if err != nil || delta.String() != p.SelectedDeltaDigest {
		return nil, inconsistent("selected_delta", p.ID, "intake's selected payload %s at %s re-derives delta %s (%v), intake recorded %s", p.SelectedPayloadDigest, target, delta, err, p.SelectedDeltaDigest)
	}

	st, attribution, err := crownedEntry(ctx, l, crown, p, w.candidate.CandidateStack())
	if err != nil {
		return nil, err
	}
	ref := contribution.ProposalRef{Type: contribution.KindProposal, SchemaVersion: 1, TargetID: target, TargetSpecDigest: spec,
		ArtifactDigest: content, SelectedPayloadDigest: payload, AttributionDigest: attribution}
	rd, err := ref.RefDigest()
	if err != nil {
		return nil, inconsistent("attribution", p.ID, "%v", err)
	}
	if rd.String() != crown.ContributionDigest {
		return nil, inconsistent("proposal", p.ID, "intake's bytes, payload and spec with the stack's attribution %s re-derive proposal %s, the crown is %s", attribution, rd, crown.ContributionDigest)
	}
	return &Crowned{
		EventSequence: crown.EventSequence, ProposalID: p.ID, ArenaDigest: crown.ArenaDigest, TargetID: target,
		TargetSpecDigest: p.TargetSpecDigest, ProposalContributionDigest: crown.ContributionDigest,
		SettlementCandidateDigest: cand, SettlementEvidenceDigest: evidence, CrownEventDigest: events[0].Digest,
		SelectedPayloadDigest: p.SelectedPayloadDigest, ArtifactDigest: p.ContentHash, AttributionDigest: attribution.String(),
		StackDigest: st.StackDigest, Primary: w.passes[0], Reproduction: w.passes[1],
	}, nil
}

// crownedEntry finds the stack the crown's settlement made current (the
// first one recorded by an event after the CROWN: its STACK_TRANSITION),
// checks it is the candidate stack both qualifications measured and
// returns it with the attribution of its entry at the crowned target.
func crownedEntry(ctx context.Context, l *ledger.Ledger, crown *ledger.Crown, p *ledger.Proposal, candidate string) (*ledger.Stack, identity.Digest, error) {
	stacks, err := l.Stacks(ctx)
	if err != nil {
		return nil, identity.Digest{}, err
	}
	var st *ledger.Stack
	for i := range stacks {
		s := &stacks[i]
		if s.EventSequence > crown.EventSequence && (st == nil || s.EventSequence < st.EventSequence) {
			st = s
		}
	}
	if st == nil {
		return nil, identity.Digest{}, inconsistent("stack", p.ID, "no evaluation stack was made current after the crown of event %d", crown.EventSequence)
	}
	if st.StackDigest != candidate {
		return nil, identity.Digest{}, inconsistent("stack", p.ID, "the stack made current after event %d is %s, both qualifications measured %s", crown.EventSequence, st.StackDigest, candidate)
	}
	f, diags := stack.Parse("crowned.hcl", []byte(st.HCL))
	if diags.HasErrors() {
		return nil, identity.Digest{}, inconsistent("stack", p.ID, "the HCL rendering of stack %s does not parse: %v", st.StackDigest, diags)
	}
	e, ok := f.Entry(crown.TargetID)
	if !ok || e.Kind != stack.ProposalKind {
		return nil, identity.Digest{}, inconsistent("stack", p.ID, "stack %s holds no proposal entry at %s", st.StackDigest, crown.TargetID)
	}
	if e.ArtifactDigest.String() != p.ContentHash {
		return nil, identity.Digest{}, inconsistent("stack", p.ID, "stack %s pins content hash %s at %s, the crowned proposal's is %s", st.StackDigest, e.ArtifactDigest, crown.TargetID, p.ContentHash)
	}
	return st, e.AttributionDigest, nil
}

func decodeEvent(e ledger.Event) (settle.Event, error) {
	var s settle.Event
	dec := json.NewDecoder(bytes.NewReader(e.Body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return s, fmt.Errorf("event %d does not decode as a settlement event: %v", e.Sequence, err)
	}
	return s, nil
}

// proposalDigests reads the identities the ledger holds as text for a
// proposal: its target spec, selected payload and content hash.
func proposalDigests(p *ledger.Proposal) (spec, payload, content identity.Digest, err error) {
	for _, f := range []struct {
		name, v string
		dst     *identity.Digest
	}{
		{"target_spec_digest", p.TargetSpecDigest, &spec},
		{"selected_payload_digest", p.SelectedPayloadDigest, &payload},
		{"content_hash", p.ContentHash, &content},
	} {
		if *f.dst, err = identity.ParseField(f.name, f.v, false); err != nil {
			return identity.Digest{}, identity.Digest{}, identity.Digest{}, fmt.Errorf("proposal %d: %w", p.ID, err)
		}
	}
	return spec, payload, content, nil
}

func inconsistent(field string, proposal int64, format string, args ...any) *Rejection {
	return &Rejection{Reason: ReasonCrownInconsistent + Reason(":"+field), ProposalID: proposal, Detail: fmt.Sprintf(format, args...)}
}
