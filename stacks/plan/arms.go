package plan

import (
	"errors"
	"fmt"

	"github.com/cacheon/engine/internal/identity"
)

// Arm roles, in the order a qualification reads them: the incumbent (B),
// the candidate (C) and the incumbent again (B′), which brackets C so
// drift during the measurement shows up as B ≠ B′.
const (
	RoleBaseline       = "B"
	RoleCandidate      = "C"
	RoleBaselineRepeat = "B_prime"
)

// PolicyVersion names the planning rules a MarginalArmPlan was made
// under. It is hashed with the plan, so a plan made under other rules can
// never share its digest. The string is upstream's, which makes the plan
// digest comparable with the upstream toolchain's.
const PolicyVersion = "stack-plan.v1"

// ArmPlanSchemaVersion is the MarginalArmPlan payload's schema version.
const ArmPlanSchemaVersion = 1

// Arm is one measured engine: a stack and the tree it materializes to.
// Its role is the plan field that holds it.
type Arm struct {
	StackDigest identity.Digest `json:"stack_digest"`
	TreeDigest  identity.Digest `json:"tree_digest"`
}

// RoleArm is an arm with its role, for callers that walk the arms in read
// order (RoleArms).
type RoleArm struct {
	Role string
	Arm
}

// MarginalArmPlan binds one marginal qualification: the incumbent and
// candidate stacks, the transition between them and the three arms. Its
// JSON form is exactly the payload its digest hashes, with upstream's
// keys: each arm is a named field (baseline_before, challenger,
// baseline_after) rather than an element of a list, so a payload can only
// name the three arms once each and in their roles.
type MarginalArmPlan struct {
	SchemaVersion        int             `json:"schema_version"`
	PolicyVersion        string          `json:"policy_version"`
	IncumbentStackDigest identity.Digest `json:"incumbent_stack_digest"`
	CandidateStackDigest identity.Digest `json:"candidate_stack_digest"`
	Transition           Transition      `json:"transition"`
	BaselineBefore       Arm             `json:"baseline_before"` // B
	Challenger           Arm             `json:"challenger"`      // C
	BaselineAfter        Arm             `json:"baseline_after"`  // B′
}

// RoleArms returns the arms in read order, B, C, B′, each with its role.
func (p *MarginalArmPlan) RoleArms() []RoleArm {
	return []RoleArm{
		{RoleBaseline, p.BaselineBefore},
		{RoleCandidate, p.Challenger},
		{RoleBaselineRepeat, p.BaselineAfter},
	}
}

// Arms binds the candidate to the trees its two stacks materialize to.
// The candidate tree must differ from the incumbent's: a transition that
// changes no byte of the engine measures nothing.
func (c *Candidate) Arms(incumbentTreeDigest, candidateTreeDigest identity.Digest) (*MarginalArmPlan, error) {
	for _, f := range []struct {
		name string
		v    identity.Digest
	}{{"incumbent tree digest", incumbentTreeDigest}, {"candidate tree digest", candidateTreeDigest}} {
		if err := identity.CheckField(f.name, f.v, false); err != nil {
			return nil, fmt.Errorf("arm plan: %w", err)
		}
	}
	if incumbentTreeDigest == candidateTreeDigest {
		return nil, reject(ReasonNoOp, "the candidate materializes to the incumbent's engine tree %s", incumbentTreeDigest)
	}
	b, err := c.Incumbent.Digest()
	if err != nil {
		return nil, fmt.Errorf("arm plan: incumbent: %w", err)
	}
	cs, err := c.Stack.Digest()
	if err != nil {
		return nil, fmt.Errorf("arm plan: candidate: %w", err)
	}
	baseline := Arm{StackDigest: b, TreeDigest: incumbentTreeDigest}
	p := &MarginalArmPlan{
		SchemaVersion:        ArmPlanSchemaVersion,
		PolicyVersion:        PolicyVersion,
		IncumbentStackDigest: b,
		CandidateStackDigest: cs,
		Transition:           c.Transition,
		BaselineBefore:       baseline,
		Challenger:           Arm{StackDigest: cs, TreeDigest: candidateTreeDigest},
		BaselineAfter:        baseline,
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return p, nil
}

// Validate checks the plan's invariants: this schema and policy; B and B′
// identical and bound to the incumbent; C bound to the candidate with a
// tree other than B's.
func (p *MarginalArmPlan) Validate() error {
	b, c, b2 := p.BaselineBefore, p.Challenger, p.BaselineAfter
	switch {
	case p.SchemaVersion != ArmPlanSchemaVersion:
		return fmt.Errorf("arm plan: schema version %d, this tool reads %d", p.SchemaVersion, ArmPlanSchemaVersion)
	case p.PolicyVersion != PolicyVersion:
		return fmt.Errorf("arm plan: policy version %q, this tool plans under %q", p.PolicyVersion, PolicyVersion)
	case b != b2:
		return errors.New("arm plan: baseline_before (B) and baseline_after (B_prime) must be the same engine")
	case b.StackDigest != p.IncumbentStackDigest || c.StackDigest != p.CandidateStackDigest:
		return errors.New("arm plan: arms must be bound to the incumbent and candidate stacks")
	case b.StackDigest == c.StackDigest:
		return errors.New("arm plan: the candidate stack equals the incumbent")
	case b.TreeDigest == c.TreeDigest:
		return errors.New("arm plan: the candidate tree equals the incumbent tree")
	case p.Transition.Replacement == nil:
		return errors.New("arm plan: no replacement")
	}
	return nil
}

// Digest is H(cacheon.stack.marginal-arm-plan, plan): the plan's JSON
// form, which has upstream's keys, is the payload.
func (p *MarginalArmPlan) Digest() (identity.Digest, error) {
	if err := p.Validate(); err != nil {
		return identity.Digest{}, err
	}
	d, err := identity.H(identity.DomainMarginalArmPlan, p)
	if err != nil {
		return identity.Digest{}, fmt.Errorf("arm plan: %w", err)
	}
	return d, nil
}
