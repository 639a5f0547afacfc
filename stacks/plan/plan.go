// Package plan derives a candidate stack from the incumbent and one
// proposed contribution, and binds the arms a qualification measures.
//
// A candidate is always the incumbent with exactly one target transition:
// the validator supplies every other entry, so attribution covers only
// that delta. If the target is already active the contribution replaces
// the incumbent's entry there (and must change what that target
// executes). Otherwise the contribution enters the stack and displaces
// every active target in its displacement closure (an atomic target
// displaces its singleton members), but it may never break up an active
// target whose own closure contains it: a member proposal cannot
// decompose an atomic incumbent. The resulting set must pass the
// catalog's active-set rules.
package plan

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/cacheon/engine/catalog"
	"github.com/cacheon/engine/internal/identity"
	rejectroot "github.com/cacheon/engine/internal/reject"
	"github.com/cacheon/engine/stacks/stack"
)

// Reason says why a transition was refused.
type Reason string

// Reasons a plan is refused. The set is closed; reports branch on it.
const (
	ReasonCatalogMismatch  Reason = "catalog_mismatch"
	ReasonUnknownTarget    Reason = "unknown_target"
	ReasonStaleTargetSpec  Reason = "stale_target_spec"
	ReasonNoOp             Reason = "no_op"
	ReasonBreaksAtomic     Reason = "breaks_atomic_incumbent"
	ReasonInvalidActiveSet Reason = "invalid_active_set"
	ReasonNotProposal      Reason = "not_a_proposal"
	// ReasonIncumbentTree: the incumbent tree given to reuse is not a
	// published tree of the incumbent stack.
	ReasonIncumbentTree Reason = "incumbent_tree_mismatch"
)

// Rejection is a refused transition: the input was read and is not a
// valid marginal candidate.
type Rejection struct {
	Reason Reason
	Detail string
}

func (r *Rejection) Error() string {
	return fmt.Sprintf("candidate rejected (%s): %s", r.Reason, r.Detail)
}

// Is makes a refused transition a rejection (rejectroot.ErrRejected).
func (r *Rejection) Is(target error) bool { return target == rejectroot.ErrRejected }

func reject(reason Reason, format string, args ...any) error {
	return &Rejection{Reason: reason, Detail: fmt.Sprintf(format, args...)}
}

// IsRejection reports whether err is a refused transition (as opposed to
// an I/O or programming error).
func IsRejection(err error) bool {
	var r *Rejection
	return errors.As(err, &r)
}

// Transition is the one change from the incumbent to the candidate.
type Transition struct {
	TargetID         string          `json:"target_id"`
	TargetSpecDigest identity.Digest `json:"target_spec_digest"`
	Replacement      stack.Ref       `json:"replacement"`
	// Prior is the incumbent's entry at the target, nil when the target
	// was not active.
	Prior stack.Ref `json:"prior"`
	// Displaced are the active targets the replacement removes, sorted.
	Displaced []string `json:"displaced"`
}

// Candidate is a planned candidate stack with the transition that makes
// it from the incumbent.
type Candidate struct {
	Incumbent  *stack.EvaluationStackManifest
	Stack      *stack.EvaluationStackManifest
	Transition Transition
}

// selectedDeltaRef is a reference that can name its selected delta; both
// contribution reference kinds are.
type selectedDeltaRef interface {
	stack.Ref
	SelectedDelta() (identity.Digest, error)
}

// Plan derives the candidate stack of incumbent plus ref under cat. ref
// must be a proposal: an evaluation candidate is a proposed bundle.
func Plan(cat *catalog.Catalog, incumbent *stack.EvaluationStackManifest, ref stack.Ref) (*Candidate, error) {
	if ref == nil {
		return nil, errors.New("plan: no candidate contribution")
	}
	if ref.RefKind() != stack.ProposalKind {
		return nil, reject(ReasonNotProposal, "a candidate is a proposal; got a %s reference", ref.RefKind())
	}
	if err := ref.Validate(); err != nil {
		return nil, fmt.Errorf("plan: candidate reference: %w", err)
	}
	if incumbent.CatalogDigest != cat.Digest() {
		return nil, reject(ReasonCatalogMismatch, "the incumbent was built against catalog %s, the catalog in force is %s; rebuild the incumbent manifest first", incumbent.CatalogDigest, cat.Digest())
	}
	target, spec := ref.RefTarget()
	want, ok := cat.TargetSpecDigest(target)
	if !ok {
		return nil, reject(ReasonUnknownTarget, "target %q is not in the catalog (known: %s)", target, strings.Join(cat.TargetIDs(), ", "))
	}
	if spec != want {
		return nil, reject(ReasonStaleTargetSpec, "the candidate was resolved against target-spec %s of %s, the catalog's is %s; re-inspect the bundle against the current catalog", spec, target, want)
	}

	t := Transition{TargetID: target, TargetSpecDigest: spec, Replacement: ref, Displaced: []string{}}
	if prior, active := incumbent.Entries[target]; active {
		// Same-target replacement: nothing is displaced, and the
		// candidate must change what the target executes.
		t.Prior = prior
		same, err := sameDelta(prior, ref)
		if err != nil {
			return nil, fmt.Errorf("plan: %w", err)
		}
		if same {
			return nil, reject(ReasonNoOp, "the candidate selects the same payload at %s as the incumbent; a transition must change the selected delta", target)
		}
	} else {
		for _, id := range incumbent.TargetIDs() {
			for _, d := range cat.DisplacementClosure(id) {
				if d == target {
					return nil, reject(ReasonBreaksAtomic, "active target %s displaces %s; a proposal at %s cannot break it up (propose a replacement for %s instead)", id, target, target, id)
				}
			}
		}
		closure := map[string]bool{}
		for _, d := range cat.DisplacementClosure(target) {
			closure[d] = true
		}
		for _, id := range incumbent.TargetIDs() {
			if closure[id] {
				t.Displaced = append(t.Displaced, id)
			}
		}
		sort.Strings(t.Displaced)
	}

	next, err := incumbent.WithContribution(ref, t.Displaced)
	if err != nil {
		return nil, fmt.Errorf("plan: candidate stack: %w", err)
	}
	if err := cat.ValidateActive(next.TargetIDs()); err != nil {
		return nil, reject(ReasonInvalidActiveSet, "the candidate's active targets (%s) break the catalog's rules: %v", strings.Join(next.TargetIDs(), ", "), err)
	}
	if err := checkOneTransition(incumbent, next, t); err != nil {
		return nil, err
	}
	return &Candidate{Incumbent: incumbent, Stack: next, Transition: t}, nil
}

func sameDelta(a, b stack.Ref) (bool, error) {
	da, ok := a.(selectedDeltaRef)
	if !ok {
		return false, fmt.Errorf("incumbent entry %T cannot name its selected delta", a)
	}
	db, ok := b.(selectedDeltaRef)
	if !ok {
		return false, fmt.Errorf("candidate %T cannot name its selected delta", b)
	}
	x, err := da.SelectedDelta()
	if err != nil {
		return false, err
	}
	y, err := db.SelectedDelta()
	if err != nil {
		return false, err
	}
	return x == y, nil
}

// checkOneTransition re-derives, from the two manifests alone, that they
// differ by exactly the planned transition and nothing else.
func checkOneTransition(b, c *stack.EvaluationStackManifest, t Transition) error {
	if b.RuntimeDigest != c.RuntimeDigest || b.BaseEngineDigest != c.BaseEngineDigest || b.ArenaDigest != c.ArenaDigest || b.CatalogDigest != c.CatalogDigest {
		return errors.New("plan: candidate changed the substrate, arena or catalog")
	}
	displaced := map[string]bool{}
	for _, id := range t.Displaced {
		displaced[id] = true
	}
	for id, r := range b.Entries {
		if id == t.TargetID || displaced[id] {
			continue
		}
		if c.Entries[id] != r {
			return fmt.Errorf("plan: candidate changed the entry at %s, which is not part of the transition", id)
		}
	}
	for id := range c.Entries {
		if _, ok := b.Entries[id]; !ok && id != t.TargetID {
			return fmt.Errorf("plan: candidate added %s, which is not part of the transition", id)
		}
	}
	bd, err := b.Digest()
	if err != nil {
		return err
	}
	cd, err := c.Digest()
	if err != nil {
		return err
	}
	if bd == cd {
		return reject(ReasonNoOp, "the candidate stack equals the incumbent")
	}
	return nil
}
