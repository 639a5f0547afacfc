package catalog

import (
	"errors"
	"slices"
	"testing"
)

func TestValidateActive(t *testing.T) {
	c := loadDefault(t)
	tests := []struct {
		name   string
		active []string
		rule   ActiveRule // "" means valid
	}{
		{"every singleton but the epilogue members", []string{
			"activation.silu_and_mul", "norm.rmsnorm", "attention.sdpa", "attention.decode",
			"attention.msa_block_score", "attention.msa_prefill_block_score", "moe.fused_experts",
			"moe.fused_experts_reduce", "collective.all_reduce", "collective.moe_epilogue.v1"}, ""},
		{"empty set", nil, ""},
		{"compatible pair", []string{"moe.fused_experts", "moe.fused_experts_reduce"}, ""},
		{"atomic with a displaced member", []string{"collective.ar_residual_rmsnorm", "collective.moe_epilogue.v1"}, ActiveDisplacement},
		{"unknown target", []string{"activation.silu"}, ActiveKnown},
		{"listed twice", []string{"norm.rmsnorm", "norm.rmsnorm"}, ActiveUnique},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := c.ValidateActive(tt.active)
			if tt.rule == "" {
				if err != nil {
					t.Fatalf("ValidateActive: %v", err)
				}
				return
			}
			var ae *ActiveSetError
			if !errors.As(err, &ae) || ae.Rule != tt.rule {
				t.Fatalf("ValidateActive = %v, want rule %s", err, tt.rule)
			}
		})
	}
}

const requiresCatalog = `
target "a.one" {
  kind             = "slot"
  members          = ["a.one"]
  contract         = "a.one"
  requires         = ["a.two"]
  allowed_features = ["entry"]
}
target "a.two" {
  kind             = "slot"
  members          = ["a.two"]
  contract         = "a.two"
  requires         = ["a.three"]
  allowed_features = ["entry"]
}
target "a.three" {
  kind             = "slot"
  members          = ["a.three"]
  contract         = "a.three"
  allowed_features = ["entry"]
}
`

func TestValidateActiveNeedsTransitiveRequirements(t *testing.T) {
	c, diags := Parse([]byte(ruleBase+requiresCatalog), "requires.hcl")
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	err := c.ValidateActive([]string{"a.one", "a.two"})
	var ae *ActiveSetError
	if !errors.As(err, &ae) || ae.Rule != ActiveRequires || !slices.Equal(ae.Targets, []string{"a.one", "a.three"}) {
		t.Fatalf("ValidateActive = %v, want a.one missing its transitive requirement a.three", err)
	}
	if err := c.ValidateActive([]string{"a.three", "a.one", "a.two"}); err != nil {
		t.Fatalf("ValidateActive with the closure active: %v", err)
	}
}

const precedenceCatalog = `
target "a.one" {
  kind             = "slot"
  members          = ["a.one"]
  contract         = "a.one"
  compatible_with  = ["a.two", "a.three"]
  allowed_features = ["entry"]
}
target "a.two" {
  kind             = "slot"
  members          = ["a.two"]
  contract         = "a.two"
  compatible_with  = ["a.one", "a.three"]
  allowed_features = ["entry"]
}
target "a.three" {
  kind             = "slot"
  members          = ["a.three"]
  contract         = "a.three"
  compatible_with  = ["a.one", "a.two"]
  allowed_features = ["entry"]
}
composition_rule "r.three-first" {
  precedence        = ["a.three", "a.one"]
  mode              = "first_applicable"
  binding_family_id = "fam.shared"
}
composition_rule "r.two-before-three" {
  precedence        = ["a.two", "a.three"]
  mode              = "first_applicable"
  binding_family_id = "fam.shared"
}
composition_rule "r.two-before-one" {
  precedence        = ["a.two", "a.one"]
  mode              = "first_applicable"
  binding_family_id = "fam.shared"
}
`

func TestOrderedActiveTargetsFollowsPrecedenceNotInputOrder(t *testing.T) {
	c, diags := Parse([]byte(ruleBase+precedenceCatalog), "precedence.hcl")
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	tests := []struct {
		active, want []string
	}{
		{[]string{"a.one", "a.two", "a.three", "a.four"}, []string{"a.four", "a.two", "a.three", "a.one"}},
		{[]string{"a.four", "a.three", "a.two", "a.one"}, []string{"a.four", "a.two", "a.three", "a.one"}},
		// Restricted to {a.one, a.three}: only r.three-first applies.
		{[]string{"a.one", "a.three"}, []string{"a.three", "a.one"}},
		// No rule between a.four and a.one: lexicographic.
		{[]string{"a.one", "a.four"}, []string{"a.four", "a.one"}},
	}
	for _, tt := range tests {
		got, err := c.OrderedActiveTargets(tt.active)
		if err != nil {
			t.Fatalf("OrderedActiveTargets(%v): %v", tt.active, err)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("OrderedActiveTargets(%v) = %v, want %v", tt.active, got, tt.want)
		}
	}
}

func TestOrderedActiveTargetsDefaultCatalog(t *testing.T) {
	c := loadDefault(t)
	got, err := c.OrderedActiveTargets([]string{"moe.fused_experts", "norm.rmsnorm", "moe.fused_experts_reduce"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"moe.fused_experts_reduce", "moe.fused_experts", "norm.rmsnorm"}
	if !slices.Equal(got, want) {
		t.Errorf("order = %v, want %v (reduce-first, then lexicographic)", got, want)
	}
	if _, err := c.OrderedActiveTargets([]string{"collective.moe_epilogue.v1", "collective.moe_finalize_ar_rmsnorm"}); err == nil {
		t.Error("ordering accepted an invalid active set")
	}
}
