package qualify

import (
	"fmt"
	"slices"
	"sort"

	"github.com/cacheon/engine/evaluator/audit"
	"github.com/cacheon/engine/evaluator/evidence"
	"github.com/cacheon/engine/evaluator/quality"
	"github.com/cacheon/engine/internal/identity"
	"github.com/cacheon/engine/stacks/plan"
)

// Attempt is the report's record of who ran the qualification, which
// experiment it planned and which attempt of that plan this was: the
// three digests settlement requires to differ between two independent
// qualifications (spec §6.1), with the commitments they are computed
// from, so that a regrade recomputes every one of them from the report
// and its evidence (docs/reference/settlement.md defines them).
type Attempt struct {
	// Authority is H(cacheon.qualification.authority.v1, {controller,
	// audit_secret_commitment}): the controller binary that ran the
	// qualification and the validator secret it holds, the one secret
	// that is the validator's own.
	Authority             string `json:"authority"`
	AuditSecretCommitment string `json:"audit_secret_commitment"`
	// Plan is H(cacheon.qualification.plan.v1, planRecord): the
	// authority, the marginal arm plan, the model, workload and speed
	// policy, the lane each role read on, and the report reproduced.
	Plan string `json:"plan"`
	// SelectionCommitment is the digest of T's prompt selection, sealed
	// before any engine ran; SelectionSecretCommitment its secret's
	// commitment. "" when no selection could be sealed.
	SelectionCommitment       string `json:"selection_commitment"`
	SelectionSecretCommitment string `json:"selection_secret_commitment"`
	// Digest is H(cacheon.qualification.attempt.v1, {plan, started,
	// selection_commitment, selection_secret_commitment,
	// audit_secret_commitment}).
	Digest string `json:"digest"`
}

// Transition is the marginal arm plan's one target transition, as
// settlement needs it: the target's spec and member slots, the
// candidate's contribution reference (the entry a crown adopts), the
// incumbent entry it replaces at its target ("" when the target was not
// active) and the entries of other targets it displaces, sorted by
// target. Every digest is a contribution reference digest.
type Transition struct {
	TargetSpec string      `json:"target_spec"`
	Members    []string    `json:"members"`
	Proposal   string      `json:"proposal"`
	Prior      string      `json:"prior"`
	Displaced  []Displaced `json:"displaced"`
}

// Displaced is one incumbent entry the transition removes.
type Displaced struct {
	TargetID string `json:"target_id"`
	Entry    string `json:"entry"`
}

// AuditPolicy is the audit's sealed policy with the seed it ran under:
// the seed is derived from the validator's secret and the selected
// delta (audit.Seed) and published only now that the audit is over, so
// that settlement can see two audits ran under two seeds.
type AuditPolicy struct {
	ValidatorSeed string   `json:"validator_seed"`
	SampleRatePPM int64    `json:"sample_rate_ppm"`
	MinCalls      int64    `json:"min_calls"`
	ExpectedSlots []string `json:"expected_slots"`
	TPSize        int64    `json:"tp_size"`
}

// LaneOrientation binds the speed evidence to the devices that read it:
// the speed policy, the lane control (H(cacheon.qualification.lane-
// control.v1, {speed_policy, workload, model})) and the lane digests of
// the baseline and the candidate role. A report carries one only when the
// two roles read on different devices: on one shared device (the CPU
// lane, or a GPU machine with a single lane) exchanging the roles
// exchanges nothing, and no orientation is claimed.
type LaneOrientation struct {
	SpeedPolicy   string `json:"speed_policy"`
	Control       string `json:"control"`
	BaselineLane  string `json:"baseline_lane"`
	CandidateLane string `json:"candidate_lane"`
}

// authority is the authority digest of a controller holding the audit
// secret with the given commitment.
func authority(controller, auditSecretCommitment string) (string, error) {
	d, err := identity.H(identity.DomainQualificationAuthority, map[string]any{
		"controller": controller, "audit_secret_commitment": auditSecretCommitment,
	})
	return d.String(), err
}

// laneDigest identifies a lane by its devices, never its name: the names
// are the roles ("baseline", "candidate"), which an exchange keeps.
func laneDigest(l Lane) (string, error) {
	gpus := make([]any, len(l.GPUs))
	for i, g := range l.GPUs {
		gpus[i] = g
	}
	d, err := identity.H(identity.DomainQualificationLane, map[string]any{"device": l.Device, "gpus": gpus})
	return d.String(), err
}

// planDigest is the digest of the experiment r planned under authority:
// what it measured (the marginal arm plan, model, workload, speed
// policy), where (the lane of each role) and which report it reproduces.
// A reproduction plans the same arms on exchanged lanes and names the
// report it reproduces, so its plan is never the first's.
func planDigest(auth string, r *Report) (string, error) {
	if len(r.Lanes) != 2 {
		return "", fmt.Errorf("qualification plan: %d lanes, want 2", len(r.Lanes))
	}
	b, err := laneDigest(r.Lanes[0])
	if err != nil {
		return "", err
	}
	c, err := laneDigest(r.Lanes[1])
	if err != nil {
		return "", err
	}
	d, err := identity.H(identity.DomainQualificationPlan, map[string]any{
		"authority": auth, "marginal_arm_plan": r.Inputs.MarginalArmPlan, "model": r.Inputs.Model,
		"workload": r.Inputs.Workload, "speed_policy": r.Inputs.Policy,
		"baseline_lane": b, "candidate_lane": c, "reproduces": r.Reproduces,
	})
	return d.String(), err
}

// attemptDigest is the digest of one attempt of a's plan, started at
// started (RFC 3339): the same plan run again starts at another time
// under fresh selection (and, without a validator secret, audit) secrets.
func attemptDigest(a *Attempt, started string) (string, error) {
	d, err := identity.H(identity.DomainQualificationAttempt, map[string]any{
		"plan": a.Plan, "started": started, "selection_commitment": a.SelectionCommitment,
		"selection_secret_commitment": a.SelectionSecretCommitment, "audit_secret_commitment": a.AuditSecretCommitment,
	})
	return d.String(), err
}

// newAttempt computes r's attempt record once its inputs are known (after
// the build stage planned the arms and the selection was sealed).
func newAttempt(r *Report, controller, auditSecretCommitment string, sel *Selection) (*Attempt, error) {
	a := &Attempt{AuditSecretCommitment: auditSecretCommitment}
	var err error
	if a.Authority, err = authority(controller, auditSecretCommitment); err != nil {
		return nil, err
	}
	if a.Plan, err = planDigest(a.Authority, r); err != nil {
		return nil, err
	}
	if sel != nil && sel.Sealed != nil {
		a.SelectionCommitment, a.SelectionSecretCommitment = sel.Sealed.Digest, sel.Sealed.Commitment.SecretCommitment
	}
	if a.Digest, err = attemptDigest(a, r.Started); err != nil {
		return nil, err
	}
	return a, nil
}

// transitionOf is the settlement view of the planned transition: the
// target's spec and sorted members from the catalog, and the reference
// digests of the replacement, the prior entry and every displaced entry.
func transitionOf(o Options, planned *plan.Result) (*Transition, error) {
	tr := planned.Candidate.Transition
	cat := o.Plan.Materialize.Catalog
	if cat == nil {
		return nil, fmt.Errorf("transition: the plan request carries no catalog")
	}
	tg, ok := cat.Target(tr.TargetID)
	if !ok {
		return nil, fmt.Errorf("transition: target %s is not in the catalog", tr.TargetID)
	}
	out := &Transition{TargetSpec: tr.TargetSpecDigest.String(), Members: append([]string{}, tg.Members...), Displaced: []Displaced{}}
	sort.Strings(out.Members)
	proposal, err := tr.Replacement.RefDigest()
	if err != nil {
		return nil, fmt.Errorf("transition: replacement: %w", err)
	}
	out.Proposal = proposal.String()
	if tr.Prior != nil {
		prior, err := tr.Prior.RefDigest()
		if err != nil {
			return nil, fmt.Errorf("transition: prior entry: %w", err)
		}
		out.Prior = prior.String()
	}
	displaced := append([]string(nil), tr.Displaced...)
	sort.Strings(displaced)
	for _, id := range displaced {
		e, ok := planned.Candidate.Incumbent.Entry(id)
		if !ok {
			return nil, fmt.Errorf("transition: displaced target %s has no incumbent entry", id)
		}
		d, err := e.RefDigest()
		if err != nil {
			return nil, fmt.Errorf("transition: displaced entry %s: %w", id, err)
		}
		out.Displaced = append(out.Displaced, Displaced{TargetID: id, Entry: d.String()})
	}
	return out, nil
}

// auditPolicyOf is the report's audit policy: the evidence's sealed
// policy and the seed the secret gives for the selected delta.
func auditPolicyOf(ev *audit.Evidence, secret []byte, selectedDelta string) (*AuditPolicy, error) {
	seed, err := audit.Seed(secret, selectedDelta)
	if err != nil {
		return nil, err
	}
	return &AuditPolicy{ValidatorSeed: seed, SampleRatePPM: int64(ev.Policy.RatePPM), MinCalls: int64(ev.Policy.MinCalls),
		ExpectedSlots: append([]string{}, ev.Policy.ExpectedSlots...), TPSize: int64(ev.Policy.WorldSize)}, nil
}

// orientationOf is r's lane orientation, nil when both roles read on one
// device (see LaneOrientation).
func orientationOf(r *Report) (*LaneOrientation, error) {
	if len(r.Lanes) != 2 {
		return nil, fmt.Errorf("lane orientation: %d lanes, want 2", len(r.Lanes))
	}
	b, err := laneDigest(r.Lanes[0])
	if err != nil {
		return nil, err
	}
	c, err := laneDigest(r.Lanes[1])
	if err != nil {
		return nil, err
	}
	if b == c || r.Lanes[0].SharedDevice || r.Lanes[1].SharedDevice {
		return nil, nil
	}
	ctl, err := identity.H(identity.DomainLaneControl, map[string]any{
		"speed_policy": r.Inputs.Policy, "workload": r.Inputs.Workload, "model": r.Inputs.Model,
	})
	if err != nil {
		return nil, err
	}
	return &LaneOrientation{SpeedPolicy: r.Inputs.Policy, Control: ctl.String(), BaselineLane: b, CandidateLane: c}, nil
}

// regradeSelection checks a v2 report's selection digests against T's
// evidence: the commitment and its secret's commitment the attempt names
// are the ones T revealed against, and the receipt is T's reveal.
func regradeSelection(r *Report, ev *quality.Evidence) error {
	if r.Quality.SelectionReceipt != ev.Receipt.Digest {
		return fmt.Errorf("%w: the report names selection receipt %q, T's evidence revealed %s", ErrRegrade, r.Quality.SelectionReceipt, ev.Receipt.Digest)
	}
	if r.Attempt == nil {
		return fmt.Errorf("%w: T revealed a selection and the report has no attempt record", ErrRegrade)
	}
	if r.Attempt.SelectionCommitment != ev.CommitmentDigest || r.Attempt.SelectionSecretCommitment != ev.Commitment.SecretCommitment {
		return fmt.Errorf("%w: the attempt names selection commitment %s (secret %s), T revealed against %s (secret %s)", ErrRegrade,
			r.Attempt.SelectionCommitment, r.Attempt.SelectionSecretCommitment, ev.CommitmentDigest, ev.Commitment.SecretCommitment)
	}
	return nil
}

// regradeAttempt recomputes a v2 report's settlement record from the
// report and its evidence: the authority, plan and attempt digests, the
// audit control and policy (all but the seed, which only the validator's
// secret gives) and the lane orientation.
func regradeAttempt(store *evidence.Store, r *Report) error {
	if a := r.Attempt; a != nil {
		auth, err := authority(r.Inputs.Controller, a.AuditSecretCommitment)
		if err != nil {
			return err
		}
		if auth != a.Authority {
			return fmt.Errorf("%w: the authority recomputes to %s, the report says %s", ErrRegrade, auth, a.Authority)
		}
		pl, err := planDigest(a.Authority, r)
		if err != nil {
			return err
		}
		if pl != a.Plan {
			return fmt.Errorf("%w: the qualification plan recomputes to %s, the report says %s", ErrRegrade, pl, a.Plan)
		}
		d, err := attemptDigest(a, r.Started)
		if err != nil {
			return err
		}
		if d != a.Digest {
			return fmt.Errorf("%w: the attempt recomputes to %s, the report says %s", ErrRegrade, d, a.Digest)
		}
	}
	if r.Audit == nil {
		if r.AuditControl != "" || r.AuditPolicy != nil {
			return fmt.Errorf("%w: an audit control or policy without audit evidence", ErrRegrade)
		}
	} else {
		data, err := store.Get(*r.Audit)
		if err != nil {
			return fmt.Errorf("audit evidence: %w", err)
		}
		ev, err := audit.Parse(data)
		if err != nil {
			return err
		}
		ctl, err := ev.Control()
		if err != nil {
			return err
		}
		if ctl != r.AuditControl {
			return fmt.Errorf("%w: the audit control recomputes to %s, the report says %q", ErrRegrade, ctl, r.AuditControl)
		}
		p := r.AuditPolicy
		if p == nil || p.SampleRatePPM != int64(ev.Policy.RatePPM) || p.MinCalls != int64(ev.Policy.MinCalls) ||
			p.TPSize != int64(ev.Policy.WorldSize) || !slices.Equal(p.ExpectedSlots, ev.Policy.ExpectedSlots) {
			return fmt.Errorf("%w: the report's audit policy %+v is not the evidence's %+v", ErrRegrade, p, ev.Policy)
		}
		if r.Attempt == nil || r.Attempt.AuditSecretCommitment != ev.SecretCommitment {
			return fmt.Errorf("%w: the audit ran under secret commitment %s, which is not the attempt's", ErrRegrade, ev.SecretCommitment)
		}
	}
	var want *LaneOrientation
	if r.Speed != nil {
		var err error
		if want, err = orientationOf(r); err != nil {
			return err
		}
	}
	if (want == nil) != (r.LaneOrientation == nil) || want != nil && *want != *r.LaneOrientation {
		return fmt.Errorf("%w: the lane orientation recomputes to %+v, the report says %+v", ErrRegrade, want, r.LaneOrientation)
	}
	return nil
}
