package catalog

import (
	"slices"
	"testing"
)

func TestDefaultCatalogShape(t *testing.T) {
	c := loadDefault(t)
	var slotTargets, atomic int
	for _, tg := range c.Targets() {
		switch tg.Kind {
		case TargetSlot:
			slotTargets++
		case TargetAtomic:
			atomic++
		}
	}
	if slotTargets != 11 || atomic != 1 || len(c.Slots()) != 11 || len(c.CompositionRules()) != 1 {
		t.Errorf("default catalog: %d slot targets, %d atomic, %d slots, %d rules; want 11, 1, 11, 1",
			slotTargets, atomic, len(c.Slots()), len(c.CompositionRules()))
	}
	if got := c.DisplacementClosure("collective.moe_epilogue.v1"); !slices.Equal(got, []string{"collective.ar_residual_rmsnorm", "collective.moe_finalize_ar_rmsnorm"}) {
		t.Errorf("epilogue displaces %v", got)
	}
}

func TestSlotLookup(t *testing.T) {
	c := loadDefault(t)
	tests := []struct {
		id, entry, prepare string
		kind               SlotKind
		mode               CorrectnessMode
		threshold          string // the mode's main threshold
		dynamic            []string
		family             string
		shapes             int
		kl                 string // "" for none
	}{
		{"activation.silu_and_mul", "silu_and_mul", "", SlotOp, Allclose, "", []string{"x"}, "sglang.activation.silu_and_mul.v1", 5, ""},
		{"moe.fused_experts", "fused_experts", "prepare", SlotBlock, MatchedRatio, "0.97", []string{"x", "topk_ids", "topk_weights"}, "sglang.moe.fused-experts.dispatch.v1", 4, ""},
		{"moe.fused_experts_reduce", "fused_experts_reduce", "prepare", SlotCollective, MatchedRatio, "0.97", []string{"x", "topk_ids", "topk_weights"}, "sglang.moe.fused-experts.dispatch.v1", 3, ""},
		{"attention.msa_prefill_block_score", "msa_prefill_block_score", "", SlotBlock, TopKOverlap, "0.9", []string{"q", "index_k"}, "sglang.attention.msa.prefill-score.v1", 11, "0.03"},
		{"collective.moe_finalize_ar_rmsnorm", "moe_finalize_ar_rmsnorm", "", SlotCollective, MatchedRatio, "0.99", []string{"gemm_out", "row_map", "scales", "residual"}, "sglang.collective.moe-finalize.v1", 3, ""},
	}
	for _, tt := range tests {
		s, ok := c.Slot(tt.id)
		if !ok {
			t.Fatalf("no slot %s", tt.id)
		}
		if s.Entry != tt.entry || s.Prepare != tt.prepare || s.Kind != tt.kind || s.BindingFamilyID != tt.family {
			t.Errorf("%s: entry %q prepare %q kind %s family %s", tt.id, s.Entry, s.Prepare, s.Kind, s.BindingFamilyID)
		}
		if !slices.Equal(s.GraphDynamicInputs, tt.dynamic) || len(s.Shapes) != tt.shapes {
			t.Errorf("%s: dynamic %v, %d shapes", tt.id, s.GraphDynamicInputs, len(s.Shapes))
		}
		var th Decimal
		switch s.Correctness.Mode {
		case MatchedRatio:
			th = s.Correctness.MinRatio
		case TopKOverlap:
			th = s.Correctness.MinOverlap
		}
		if s.Correctness.Mode != tt.mode || tt.threshold != "" && th.String() != tt.threshold {
			t.Errorf("%s: correctness %+v", tt.id, s.Correctness)
		}
		if got := ""; s.KLThreshold != nil {
			got = s.KLThreshold.String()
			if got != tt.kl {
				t.Errorf("%s: kl %s, want %q", tt.id, got, tt.kl)
			}
		} else if tt.kl != "" {
			t.Errorf("%s: no kl, want %s", tt.id, tt.kl)
		}
		if !slices.Equal(s.DTypes(), []string{"bfloat16", "float16", "float32"}) {
			t.Errorf("%s: dtypes %v", tt.id, s.DTypes())
		}
	}
	prefill, _ := c.Slot("attention.msa_prefill_block_score")
	var probes int
	for _, sh := range prefill.Shapes {
		if sh[4] == 1 {
			probes++
		}
	}
	if !slices.Equal(prefill.ShapeFlags, []string{"causal_probe"}) || prefill.ShapeParams[4] != "causal_probe" {
		t.Errorf("msa prefill shape params %v, flags %v", prefill.ShapeParams, prefill.ShapeFlags)
	}
	if probes != 4 {
		t.Errorf("msa prefill has %d causal_probe shapes, want 4", probes)
	}
}

func TestToleranceFallback(t *testing.T) {
	s, _ := loadDefault(t).Slot("norm.rmsnorm")
	tests := []struct {
		dtype, atol string
		listed      bool
	}{
		{"float32", "0.00001", true},
		{"bfloat16", "0.02", true},
		{"float8_e4m3fn", "0.0001", false},
	}
	for _, tt := range tests {
		tol, listed := s.Tolerance(tt.dtype)
		if tol.ATol.String() != tt.atol || tol.RTol.String() != tt.atol || listed != tt.listed {
			t.Errorf("Tolerance(%s) = %+v, %v; want %s, %v", tt.dtype, tol, listed, tt.atol, tt.listed)
		}
	}
}

// Accessors hand out copies: a caller cannot change the catalog.
func TestAccessorsReturnCopies(t *testing.T) {
	c := loadDefault(t)
	s, _ := c.Slot("activation.silu_and_mul")
	s.GraphDynamicInputs[0] = "changed"
	s.Shapes[0][0] = 999
	tg, _ := c.Target("moe.fused_experts")
	tg.CompatibleWith[0] = "changed"
	snap := c.Snapshot()
	snap[0] = 'X'
	again, _ := c.Slot("activation.silu_and_mul")
	tg2, _ := c.Target("moe.fused_experts")
	if again.GraphDynamicInputs[0] != "x" || again.Shapes[0][0] != 1 || tg2.CompatibleWith[0] != "moe.fused_experts_reduce" || c.Snapshot()[0] != '{' {
		t.Error("mutating a returned value changed the catalog")
	}
}

func TestTargetForMembersIgnoresOrderAndRepeats(t *testing.T) {
	c := loadDefault(t)
	tg, ok := c.TargetForMembers([]string{"collective.moe_finalize_ar_rmsnorm", "collective.ar_residual_rmsnorm", "collective.moe_finalize_ar_rmsnorm"})
	if !ok || tg.ID != "collective.moe_epilogue.v1" {
		t.Errorf("TargetForMembers = %v, %v", tg.ID, ok)
	}
	if _, ok := c.TargetForMembers([]string{"nope"}); ok {
		t.Error("TargetForMembers found a target for an unknown slot")
	}
}

func BenchmarkLoadDefault(b *testing.B) {
	src := DefaultSource()
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		c, diags := Parse(src, DefaultFile)
		if diags.HasErrors() || c.Digest().String() != goldenCatalogDigest {
			b.Fatal("default catalog did not load")
		}
	}
}
