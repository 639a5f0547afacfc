package plan

import (
	"errors"
	"strings"
	"testing"

	"github.com/cacheon/engine/catalog"
	"github.com/cacheon/engine/internal/identity"
	"github.com/cacheon/engine/kernels/contribution"
	"github.com/cacheon/engine/stacks/stack"
)

func d64(c string) identity.Digest { return identity.MustParse(strings.Repeat(c, 64)) }

func defaultCatalog(t *testing.T) *catalog.Catalog {
	t.Helper()
	c, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// catalogWith parses the default catalog source with one edit applied.
func catalogWith(t *testing.T, old, new string) *catalog.Catalog {
	t.Helper()
	src := string(catalog.DefaultSource())
	if !strings.Contains(src, old) {
		t.Fatalf("default catalog has no %q", old)
	}
	c, diags := catalog.Parse([]byte(strings.Replace(src, old, new, 1)), "edited.hcl")
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	return c
}

// proposal is a proposal reference at target, told apart by payload.
func proposal(t *testing.T, cat *catalog.Catalog, target, payload string) *contribution.ProposalRef {
	t.Helper()
	spec, ok := cat.TargetSpecDigest(target)
	if !ok {
		spec = d64("e") // an unknown target has no spec; any digest will do
	}
	return &contribution.ProposalRef{
		Type: contribution.KindProposal, SchemaVersion: 1, TargetID: target, TargetSpecDigest: spec,
		ArtifactDigest: identity.MustH("test.artifact", payload), SelectedPayloadDigest: identity.MustH("test.payload", payload),
		AttributionDigest: d64("4"),
	}
}

func incumbentOf(t *testing.T, cat *catalog.Catalog, refs ...stack.Ref) *stack.EvaluationStackManifest {
	t.Helper()
	m, err := stack.NewEvaluationStackManifest(d64("1"), d64("2"), d64("3"), cat.Digest(), cat.Snapshot(), refs)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

const (
	silu      = "activation.silu_and_mul"
	rmsnorm   = "norm.rmsnorm"
	arNorm    = "collective.ar_residual_rmsnorm"
	finalize  = "collective.moe_finalize_ar_rmsnorm"
	epilogue  = "collective.moe_epilogue.v1"
	allReduce = "collective.all_reduce"
)

func TestPlanTransitions(t *testing.T) {
	cat := defaultCatalog(t)
	tests := []struct {
		name          string
		incumbent     []stack.Ref
		candidate     stack.Ref
		wantTargets   string
		wantPrior     bool
		wantDisplaced string
	}{
		{
			name:        "new target joins the stack",
			incumbent:   []stack.Ref{proposal(t, cat, rmsnorm, "r1")},
			candidate:   proposal(t, cat, silu, "s1"),
			wantTargets: "activation.silu_and_mul,norm.rmsnorm",
		},
		{
			name:        "same-target replacement",
			incumbent:   []stack.Ref{proposal(t, cat, silu, "s1"), proposal(t, cat, rmsnorm, "r1")},
			candidate:   proposal(t, cat, silu, "s2"),
			wantTargets: "activation.silu_and_mul,norm.rmsnorm",
			wantPrior:   true,
		},
		{
			name:          "atomic target displaces its active singletons",
			incumbent:     []stack.Ref{proposal(t, cat, arNorm, "a1"), proposal(t, cat, finalize, "f1"), proposal(t, cat, silu, "s1")},
			candidate:     proposal(t, cat, epilogue, "e1"),
			wantTargets:   "activation.silu_and_mul,collective.moe_epilogue.v1",
			wantDisplaced: "collective.ar_residual_rmsnorm,collective.moe_finalize_ar_rmsnorm",
		},
		{
			name:          "atomic target with one member active",
			incumbent:     []stack.Ref{proposal(t, cat, finalize, "f1")},
			candidate:     proposal(t, cat, epilogue, "e1"),
			wantTargets:   "collective.moe_epilogue.v1",
			wantDisplaced: "collective.moe_finalize_ar_rmsnorm",
		},
		{
			name:        "atomic replacing atomic",
			incumbent:   []stack.Ref{proposal(t, cat, epilogue, "e1")},
			candidate:   proposal(t, cat, epilogue, "e2"),
			wantTargets: "collective.moe_epilogue.v1",
			wantPrior:   true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := incumbentOf(t, cat, tt.incumbent...)
			c, err := Plan(cat, b, tt.candidate)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(c.Stack.TargetIDs(), ","); got != tt.wantTargets {
				t.Errorf("candidate targets %s, want %s", got, tt.wantTargets)
			}
			if got := strings.Join(c.Transition.Displaced, ","); got != tt.wantDisplaced {
				t.Errorf("displaced %q, want %q", got, tt.wantDisplaced)
			}
			if (c.Transition.Prior != nil) != tt.wantPrior {
				t.Errorf("prior = %v, want present=%v", c.Transition.Prior, tt.wantPrior)
			}
			id, _ := tt.candidate.RefTarget()
			if c.Transition.TargetID != id || c.Stack.Entries[id] != tt.candidate {
				t.Errorf("transition %+v does not install the candidate", c.Transition)
			}
			if len(b.Entries) != len(tt.incumbent) {
				t.Errorf("planning changed the incumbent")
			}
		})
	}
}

func TestPlanRejections(t *testing.T) {
	cat := defaultCatalog(t)
	stale := proposal(t, cat, silu, "s2")
	stale.TargetSpecDigest = d64("9")
	requiring := catalogWith(t, `contract         = "activation.silu_and_mul"`,
		`contract         = "activation.silu_and_mul"
  requires         = ["norm.rmsnorm"]`)
	sameBytesOtherArtifact := proposal(t, cat, silu, "s1")
	sameBytesOtherArtifact.ArtifactDigest = d64("7") // a README changed; the payload did not

	tests := []struct {
		name      string
		cat       *catalog.Catalog
		incumbent *stack.EvaluationStackManifest
		candidate stack.Ref
		reason    Reason
		detail    string
	}{
		{"unchanged payload is a no-op", cat, incumbentOf(t, cat, proposal(t, cat, silu, "s1")), sameBytesOtherArtifact, ReasonNoOp, "same payload"},
		{"stale target spec", cat, incumbentOf(t, cat), stale, ReasonStaleTargetSpec, "re-inspect the bundle"},
		{"unknown target", cat, incumbentOf(t, cat), proposal(t, cat, "activation.gelu", "g"), ReasonUnknownTarget, `"activation.gelu" is not in the catalog`},
		{"member cannot break an atomic incumbent", cat, incumbentOf(t, cat, proposal(t, cat, epilogue, "e1")), proposal(t, cat, arNorm, "a1"), ReasonBreaksAtomic, "active target collective.moe_epilogue.v1 displaces collective.ar_residual_rmsnorm"},
		{"requires edge unsatisfied", requiring, incumbentOf(t, requiring), proposal(t, requiring, silu, "s1"), ReasonInvalidActiveSet, "requires"},
		{"incumbent from another catalog", requiring, incumbentOf(t, cat), proposal(t, requiring, allReduce, "x"), ReasonCatalogMismatch, "rebuild the incumbent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Plan(tt.cat, tt.incumbent, tt.candidate)
			var r *Rejection
			if !errors.As(err, &r) || r.Reason != tt.reason || !strings.Contains(r.Detail, tt.detail) {
				t.Fatalf("Plan = %v, want rejection %s mentioning %q", err, tt.reason, tt.detail)
			}
			if !IsRejection(err) {
				t.Errorf("IsRejection = false")
			}
		})
	}
	t.Run("requires satisfied", func(t *testing.T) {
		if _, err := Plan(requiring, incumbentOf(t, requiring, proposal(t, requiring, rmsnorm, "r")), proposal(t, requiring, silu, "s1")); err != nil {
			t.Errorf("Plan with the requirement active = %v", err)
		}
	})
}

func TestArmPlan(t *testing.T) {
	cat := defaultCatalog(t)
	b := incumbentOf(t, cat, proposal(t, cat, rmsnorm, "r1"))
	c, err := Plan(cat, b, proposal(t, cat, silu, "s1"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.Arms(d64("a"), d64("b"))
	if err != nil {
		t.Fatal(err)
	}
	bd, _ := b.Digest()
	cd, _ := c.Stack.Digest()
	if p.BaselineBefore != (Arm{bd, d64("a")}) || p.Challenger != (Arm{cd, d64("b")}) || p.BaselineAfter != (Arm{bd, d64("a")}) {
		t.Errorf("arms = %+v", p.RoleArms())
	}
	if p.SchemaVersion != 1 || p.PolicyVersion != "stack-plan.v1" {
		t.Errorf("schema %d, policy %q", p.SchemaVersion, p.PolicyVersion)
	}
	d1, err := p.Digest()
	if err != nil {
		t.Fatal(err)
	}
	// The digest covers the trees: another candidate tree is another plan.
	q, _ := c.Arms(d64("a"), d64("c"))
	if d2, _ := q.Digest(); d2 == d1 {
		t.Errorf("plan digest ignores the candidate tree")
	}
	if _, err := c.Arms(d64("a"), d64("a")); !IsRejection(err) {
		t.Errorf("C tree equal to B tree = %v, want a no-op rejection", err)
	}
	// A plan that breaks an invariant has no digest.
	broken := []struct {
		name, want string
		edit       func(*MarginalArmPlan)
	}{
		{"B != B'", "must be the same engine", func(q *MarginalArmPlan) { q.BaselineAfter.TreeDigest = d64("c") }},
		{"other policy", "policy version", func(q *MarginalArmPlan) { q.PolicyVersion = "stack-plan.v2" }},
		{"other schema", "schema version", func(q *MarginalArmPlan) { q.SchemaVersion = 2 }},
		{"C is B", "candidate stack equals", func(q *MarginalArmPlan) {
			q.Challenger, q.CandidateStackDigest = q.BaselineBefore, q.IncumbentStackDigest
		}},
		{"unbound arms", "bound to the incumbent", func(q *MarginalArmPlan) { q.CandidateStackDigest = d64("d") }},
	}
	for _, tt := range broken {
		q := *p
		tt.edit(&q)
		if _, err := q.Digest(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Digest = %v, want an error mentioning %q", tt.name, err, tt.want)
		}
	}
}
