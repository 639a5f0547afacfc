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

// Arm is one measured engine: a stack and the tree it materializes to.
type Arm struct {
	Role        string          `json:"role"`
	StackDigest identity.Digest `json:"stack_digest"`
	TreeDigest  identity.Digest `json:"tree_digest"`
}

// MarginalArmPlan binds one marginal qualification: the incumbent and
// candidate stacks, the transition between them and the three arms.
type MarginalArmPlan struct {
	IncumbentStackDigest identity.Digest `json:"incumbent_stack_digest"`
	CandidateStackDigest identity.Digest `json:"candidate_stack_digest"`
	Transition           Transition      `json:"transition"`
	Arms                 []Arm           `json:"arms"`
	SchemaVersion        int             `json:"schema_version"`
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
	p := &MarginalArmPlan{
		IncumbentStackDigest: b,
		CandidateStackDigest: cs,
		Transition:           c.Transition,
		Arms: []Arm{
			{Role: RoleBaseline, StackDigest: b, TreeDigest: incumbentTreeDigest},
			{Role: RoleCandidate, StackDigest: cs, TreeDigest: candidateTreeDigest},
			{Role: RoleBaselineRepeat, StackDigest: b, TreeDigest: incumbentTreeDigest},
		},
		SchemaVersion: 1,
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return p, nil
}

// Validate checks the plan's invariants: arms in order B, C, B′; B and B′
// identical and bound to the incumbent; C bound to the candidate with a
// tree other than B's.
func (p *MarginalArmPlan) Validate() error {
	if len(p.Arms) != 3 || p.Arms[0].Role != RoleBaseline || p.Arms[1].Role != RoleCandidate || p.Arms[2].Role != RoleBaselineRepeat {
		return errors.New("arm plan: arms must be B, C, B_prime in that order")
	}
	b, c, b2 := p.Arms[0], p.Arms[1], p.Arms[2]
	switch {
	case b.StackDigest != b2.StackDigest || b.TreeDigest != b2.TreeDigest:
		return errors.New("arm plan: B and B_prime must be the same engine")
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

// Digest is H(cacheon.stack.marginal-arm-plan, plan).
func (p *MarginalArmPlan) Digest() (identity.Digest, error) {
	if err := p.Validate(); err != nil {
		return identity.Digest{}, err
	}
	return identity.H(identity.DomainMarginalArmPlan, p)
}
