// Package apply settles the ledger: it reads the qualified proposals the
// ledger holds, pairs each one's two passing qualifications
// (settle.Pair), plans them against the ledger's current evaluation stack
// (settle.PlanFrom, continuing the ledger's chain) and writes the plan —
// its events, the new current stack, the crown, the standing claim and
// every row's outcome — in one ledger transaction (ledger.Commit). On any
// refusal or failure nothing is written and the old stack stays current.
//
// The rules are settlement/settle's; persistence is settlement/ledger's.
// What this package adds is the binding between them: the settlement
// views are checked against the ledger's own proposal rows, and the new
// stack's HCL is derived from the current one with the winner's
// transition applied, its crowned entry pointing at the ledger's
// immutable publication, and re-assembled to prove it is the stack both
// qualifications measured.
package apply

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/cacheon/engine/catalog"
	"github.com/cacheon/engine/internal/hclload"
	"github.com/cacheon/engine/internal/identity"
	"github.com/cacheon/engine/internal/reject"
	"github.com/cacheon/engine/kernels/contribution"
	"github.com/cacheon/engine/settlement/ledger"
	"github.com/cacheon/engine/settlement/settle"
	"github.com/cacheon/engine/stacks/plan"
	"github.com/cacheon/engine/stacks/stack"
)

// Reason is a stable code of a refusal this package makes; the pair and
// plan rules' codes are settle.Reason.
type Reason string

// Refusals of the ledger's contents as settlement input.
const (
	// ReasonMissingView: a qualified proposal without two passing
	// qualifications that carry a settlement view.
	ReasonMissingView Reason = "missing_settlement_view"
	// ReasonViewMismatch: a settlement view that disagrees with the
	// ledger's proposal or attempt row (named after the colon).
	ReasonViewMismatch Reason = "settlement_view_mismatch"
	// ReasonNoCurrentStack: the ledger has no evaluation stack to settle
	// against.
	ReasonNoCurrentStack Reason = "no_current_stack"
	// ReasonCandidateStackMismatch: the current stack with the winner's
	// transition applied does not assemble to the candidate stack (or
	// proposal) both qualifications measured.
	ReasonCandidateStackMismatch Reason = "candidate_stack_mismatch"
)

// Rejection is a refusal of the ledger's contents as settlement input.
// It matches reject.ErrRejected (exit 2).
type Rejection struct {
	Reason     Reason
	ProposalID int64 // 0 when no one proposal is at fault
	Detail     string
}

func (r *Rejection) Error() string {
	if r.ProposalID != 0 {
		return fmt.Sprintf("settlement rejected (%s): proposal %d: %s", r.Reason, r.ProposalID, r.Detail)
	}
	return fmt.Sprintf("settlement rejected (%s): %s", r.Reason, r.Detail)
}

// Is makes a Rejection a rejected input.
func (r *Rejection) Is(target error) bool { return target == reject.ErrRejected }

// Options configure Settle.
type Options struct {
	// Workspace is the repository root the current stack's //labels
	// (catalog, seed contributions) resolve against; "" finds it above
	// the working directory.
	Workspace string
	// Payload are the payload options bundles are inspected with (the
	// Python closure, the CUDA check): the ones qualification used.
	Payload contribution.PayloadOptions
	// Attribution gives the attribution digest of a proposal's entry;
	// nil means plan.LocalAttribution of its content hash, the one a
	// candidate planned without an intake attribution carries.
	Attribution func(p *ledger.Proposal) identity.Digest
	// Fault, when set, is called at each of Steps (crash tests kill the
	// process there; the ledger's own steps are its Options.Fault).
	Fault func(step string)
}

// Steps of Settle before the ledger commit, in order.
var Steps = []string{"queued", "paired", "planned", "rendered"}

// Row is one plan row bound to the ledger proposal it settles.
type Row struct {
	settle.Row
	ProposalID int64 `json:"proposal_id"`
}

// Result is what Settle decided and wrote.
type Result struct {
	// Plan is the settlement plan; nil when nothing was queued.
	Plan *settle.Settlement `json:"-"`
	Rows []Row              `json:"rows"`
	// Events are the committed events, as the ledger holds them.
	Events []ledger.Event `json:"events"`
	// Winner is the crowned proposal (0: none) and Stack the current
	// stack after the settlement (the new one after a crown).
	Winner int64         `json:"winner"`
	Stack  *ledger.Stack `json:"stack"`
	// Committed says a settlement was written; false when the queue was
	// empty.
	Committed bool `json:"committed"`
	// Undecided says why nothing was queued: the proposals evaluation has
	// not decided (ledger.Undecided), each with its status and last
	// reason. Empty when a settlement was planned.
	Undecided []Undecided `json:"undecided"`
}

// Undecided is a proposal that is not, or not yet, qualified: it waits
// for its evaluation, a retry (no_decision) or an operator (held).
type Undecided struct {
	ProposalID int64         `json:"proposal_id"`
	Hotkey     string        `json:"hotkey"`
	TargetID   string        `json:"target_id"`
	Status     ledger.Status `json:"status"`
	Reason     string        `json:"reason"`
}

func (o Options) at(step string) {
	if o.Fault != nil {
		o.Fault(step)
	}
}

type queued struct {
	proposal  ledger.Proposal
	candidate *settle.Candidate
	passes    [2]ledger.Attempt
}

// Settle settles every queued proposal of l in one plan and commits it.
// With nothing queued it writes nothing and returns a Result with
// Committed false and the proposals that wait undecided.
func Settle(ctx context.Context, l *ledger.Ledger, o Options) (*Result, error) {
	queue, err := l.SettlementQueue(ctx)
	if err != nil {
		return nil, err
	}
	cur, err := l.CurrentStack(ctx)
	if err != nil {
		return nil, err
	}
	res := &Result{Stack: cur, Rows: []Row{}, Events: []ledger.Event{}, Undecided: []Undecided{}}
	if len(queue) == 0 {
		// Nothing to crown is not a refusal; the operator is told why
		// (what evaluation has not decided, and the reason it gave).
		waiting, err := l.Undecided(ctx)
		if err != nil {
			return nil, err
		}
		for _, p := range waiting {
			res.Undecided = append(res.Undecided, Undecided{ProposalID: p.ID, Hotkey: p.Hotkey, TargetID: p.TargetID, Status: p.Status, Reason: p.Reason})
		}
		return res, nil
	}
	if cur == nil {
		return nil, &Rejection{Reason: ReasonNoCurrentStack, Detail: "the ledger has no current evaluation stack; record the initial one first"}
	}
	o.at("queued")
	rows := make([]queued, 0, len(queue))
	byDigest := map[string]*queued{}
	cands := make([]*settle.Candidate, 0, len(queue))
	for _, q := range queue {
		r, err := pairOf(q)
		if err != nil {
			return nil, err
		}
		rows = append(rows, r)
	}
	for i := range rows {
		byDigest[rows[i].candidate.Digest().String()] = &rows[i]
		cands = append(cands, rows[i].candidate)
	}
	o.at("paired")
	head, err := l.Head(ctx)
	if err != nil {
		return nil, err
	}
	p, err := settle.PlanFrom(settle.Head{Sequence: uint64(head.Sequence), Digest: head.Digest}, cands, cur.StackDigest, cur.TreeDigest)
	if err != nil {
		return nil, fmt.Errorf("settlement plan: %w", err)
	}
	res.Plan = p
	o.at("planned")

	s := ledger.Settlement{}
	for _, e := range p.Events {
		body, err := e.Body()
		if err != nil {
			return nil, err
		}
		le, err := ledger.ParseEvent(body)
		if err != nil {
			return nil, fmt.Errorf("settlement event %d: %w", e.Sequence+1, err)
		}
		s.Events = append(s.Events, le)
	}
	var crownSeq int64
	if p.Winner >= 0 {
		w := byDigest[p.Rows[p.Winner].Candidate]
		crownSeq = s.Events[0].Sequence
		next, err := nextStack(l, cur, w, crownSeq, o)
		if err != nil {
			return nil, err
		}
		s.FromStack, s.NewStack = cur.StackDigest, next
		evidence, err := evidenceDigest(w)
		if err != nil {
			return nil, err
		}
		c := w.candidate
		s.Crowns = []ledger.Crown{{EventSequence: crownSeq, ArenaDigest: c.Arena(), TargetID: c.TargetID(),
			ContributionDigest: c.Proposal(), ProposalID: w.proposal.ID, Hotkey: c.Hotkey(), Speedup: c.Speedup()}}
		sc := p.StandingClaim
		s.StandingClaims = []ledger.StandingClaim{{ArenaDigest: sc.Arena, TargetID: sc.TargetID, TargetSpecDigest: sc.TargetSpec,
			ContributionDigest: sc.Contribution, Hotkey: sc.Hotkey, SpeedupPPM: sc.SpeedupPPM, CrownedBlock: int64(sc.CrownedBlock),
			EvidenceDigest: evidence, EventSequence: crownSeq}}
		res.Winner = w.proposal.ID
	}
	o.at("rendered")
	for _, row := range p.Rows {
		q := byDigest[row.Candidate]
		out := ledger.Outcome{ProposalID: q.proposal.ID, PlanDigest: p.Digest.String(), CandidateDigest: row.Candidate,
			Outcome: string(row.Outcome), Reason: string(row.Reason)}
		if row.Outcome == settle.OutcomeCrown {
			out.EventSequence = crownSeq
		}
		s.Outcomes = append(s.Outcomes, out)
		res.Rows = append(res.Rows, Row{Row: row, ProposalID: q.proposal.ID})
	}
	rec, err := l.Commit(ctx, s)
	if err != nil {
		return nil, err
	}
	res.Committed, res.Stack = true, rec.CurrentStack
	res.Events = append(res.Events, s.Events...)
	return res, nil
}

// pairOf pairs the last two passing qualifications of a queued proposal
// after checking each view against the ledger's rows.
func pairOf(q ledger.Queued) (queued, error) {
	p := q.Proposal
	var views []ledger.Attempt
	for _, a := range q.Passes {
		if len(a.Settlement) > 0 {
			views = append(views, a)
		}
	}
	if len(views) < 2 {
		return queued{}, &Rejection{Reason: ReasonMissingView, ProposalID: p.ID,
			Detail: fmt.Sprintf("%d of its %d passing qualifications carry a settlement view; settlement needs two", len(views), len(q.Passes))}
	}
	pair := [2]ledger.Attempt{views[len(views)-2], views[len(views)-1]}
	var qs [2]settle.Qualification
	for i, a := range pair {
		dec := json.NewDecoder(bytes.NewReader(a.Settlement))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&qs[i]); err != nil {
			return queued{}, &Rejection{Reason: ReasonViewMismatch + ":settlement", ProposalID: p.ID,
				Detail: fmt.Sprintf("attempt %d: settlement view does not decode: %v", a.Seq, err)}
		}
		if err := checkView(p, a, qs[i]); err != nil {
			return queued{}, err
		}
	}
	c, err := settle.Pair(qs[0], qs[1])
	if err != nil {
		return queued{}, fmt.Errorf("proposal %d (attempts %d and %d): %w", p.ID, pair[0].Seq, pair[1].Seq, err)
	}
	return queued{proposal: p, candidate: c, passes: pair}, nil
}

// checkView binds a settlement view to the ledger: it must speak of this
// proposal (its hotkey, position, arena, target and bytes) and of this
// attempt's report.
func checkView(p ledger.Proposal, a ledger.Attempt, q settle.Qualification) error {
	pos := settle.Position{Block: uint64(p.Position.Block), EventIndex: uint32(p.Position.Event), SubeventIndex: uint32(p.Position.Subevent)}
	checks := []struct {
		field    string
		ok       bool
		got, has any
	}{
		{"hotkey", q.Hotkey == p.Hotkey, q.Hotkey, p.Hotkey},
		{"finalized", q.Finalized == pos, q.Finalized, pos},
		{"arena", p.ArenaDigest == "" || q.Arena == p.ArenaDigest, q.Arena, p.ArenaDigest},
		{"target_id", q.TargetID == p.TargetID, q.TargetID, p.TargetID},
		{"target_spec", q.TargetSpec == p.TargetSpecDigest, q.TargetSpec, p.TargetSpecDigest},
		{"selected_delta", q.SelectedDelta == p.SelectedDeltaDigest, q.SelectedDelta, p.SelectedDeltaDigest},
		{"qualification_report", q.Report == a.ReportDigest, q.Report, a.ReportDigest},
	}
	for _, c := range checks {
		if !c.ok {
			return &Rejection{Reason: ReasonViewMismatch + Reason(":"+c.field), ProposalID: p.ID,
				Detail: fmt.Sprintf("attempt %d: the settlement view says %s %v, the ledger holds %v", a.Seq, c.field, c.got, c.has)}
		}
	}
	return nil
}

// evidenceDigest is the settlement evidence a standing claim retains: the
// candidate and both attempts it settled on (their reports, attempts and
// selection evidence).
func evidenceDigest(w *queued) (string, error) {
	type side struct {
		Seq               int    `json:"attempt_seq"`
		Attempt           string `json:"qualification_attempt"`
		Report            string `json:"qualification_report"`
		EvidenceAddress   string `json:"evidence_address"`
		SelectionEvidence string `json:"selection_evidence"`
	}
	first, second := w.candidate.First(), w.candidate.Second()
	d, err := identity.H(identity.DomainSettlementEvidence, struct {
		Candidate string  `json:"candidate_digest"`
		Proposal  int64   `json:"proposal_id"`
		Attempts  [2]side `json:"attempts"`
	}{w.candidate.Digest().String(), w.proposal.ID, [2]side{
		{w.passes[0].Seq, first.Attempt, first.Report, w.passes[0].EvidenceAddress, first.SelectionEvidence},
		{w.passes[1].Seq, second.Attempt, second.Report, w.passes[1].EvidenceAddress, second.SelectionEvidence},
	}})
	if err != nil {
		return "", err
	}
	return d.String(), nil
}

// nextStack renders the winner's candidate stack: the current stack's
// HCL with the winner's transition applied, its entry's source the
// ledger's publication of the crowned bytes (content hash pinned), and
// proves by assembling it that it is the stack and proposal both
// qualifications measured.
func nextStack(l *ledger.Ledger, cur *ledger.Stack, w *queued, event int64, o Options) (*ledger.Stack, error) {
	f, diags := stack.Parse("current.hcl", []byte(cur.HCL))
	if diags.HasErrors() {
		return nil, fmt.Errorf("%w: current stack %s: its HCL rendering does not parse: %v", ledger.ErrRefused, cur.StackDigest, diags)
	}
	if f.Kind != stack.Evaluation {
		return nil, fmt.Errorf("%w: current stack %s is a %s stack, not an evaluation stack", ledger.ErrRefused, cur.StackDigest, f.Kind)
	}
	c := w.candidate
	p := w.proposal
	_, _, content, err := proposalDigests(&p)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ledger.ErrRefused, err)
	}
	attr := plan.LocalAttribution(content)
	if o.Attribution != nil {
		attr = o.Attribution(&p)
	}
	var displaced []string
	for _, d := range c.Transition().Displaced {
		displaced = append(displaced, d.TargetID)
	}
	pub := ledger.Publications{Dir: l.PublicationsDir()}.Path(p.ContentHash)
	g := f.WithContribution(stack.Contribution{TargetID: c.TargetID(), Kind: stack.ProposalKind, Source: pub,
		AttributionDigest: attr, ArtifactDigest: content}, displaced)
	comment := fmt.Sprintf("The evaluation incumbent, exported from the settlement ledger.\n"+
		"Crowned at %s: proposal %d (hotkey %s, block %d), settlement event %d.\n"+
		"Regenerate with `cacheon stack export --ledger LEDGER --out FILE`; never edit it by hand.",
		c.TargetID(), p.ID, p.Hotkey, p.Position.Block, event)
	hcl := stack.Format(g, comment)
	digest, proposal, err := Assemble(hcl, o.Workspace, o.Payload, c.TargetID())
	if err != nil {
		return nil, fmt.Errorf("new stack: %w", err)
	}
	if digest != c.CandidateStack() {
		return nil, &Rejection{Reason: ReasonCandidateStackMismatch, ProposalID: p.ID,
			Detail: fmt.Sprintf("the current stack with its transition at %s assembles to %s, both qualifications measured candidate stack %s", c.TargetID(), digest, c.CandidateStack())}
	}
	if proposal != c.Proposal() {
		return nil, &Rejection{Reason: ReasonCandidateStackMismatch, ProposalID: p.ID,
			Detail: fmt.Sprintf("its entry at %s from the ledger's publication is contribution %s, both qualifications measured %s", c.TargetID(), proposal, c.Proposal())}
	}
	return &ledger.Stack{StackDigest: digest, TreeDigest: c.CandidateTree(), HCL: string(hcl)}, nil
}

// Assemble assembles a stack's HCL rendering (its //labels resolved
// against workspace) and returns its manifest digest and, when target is
// set, the digest of the entry there.
func Assemble(hcl []byte, workspace string, payload contribution.PayloadOptions, target string) (string, string, error) {
	f, diags := stack.Parse("stack.hcl", hcl)
	if diags.HasErrors() {
		return "", "", reject.Errorf("stack rendering does not parse: %v", diags)
	}
	if workspace == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", "", err
		}
		if workspace, err = stack.FindWorkspace(wd); err != nil {
			return "", "", fmt.Errorf("the stack names //labels: %w (give the repository root)", err)
		}
	}
	src := stack.Sources{Workspace: workspace}
	catPath, err := src.CatalogPath(f)
	if err != nil {
		return "", "", reject.Wrap(err)
	}
	catSrc, err := hclload.ReadPath(catPath)
	if err != nil {
		return "", "", fmt.Errorf("catalog %s: %w", catPath, err)
	}
	cat, cdiags := catalog.Parse(catSrc, catPath)
	if cdiags.HasErrors() {
		return "", "", reject.Errorf("catalog %s: %v", catPath, cdiags)
	}
	a, err := stack.Assemble(f, src, cat, payload)
	if err != nil {
		return "", "", err
	}
	digest, err := a.Manifest.Digest()
	if err != nil {
		return "", "", err
	}
	if target == "" {
		return digest.String(), "", nil
	}
	ref, ok := a.Manifest.Entry(target)
	if !ok {
		return "", "", errors.New("the new stack has no entry at " + target)
	}
	rd, err := ref.RefDigest()
	if err != nil {
		return "", "", err
	}
	return digest.String(), rd.String(), nil
}
