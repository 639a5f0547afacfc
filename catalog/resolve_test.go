package catalog

import (
	"errors"
	"strings"
	"testing"
)

func TestResolve(t *testing.T) {
	c := loadDefault(t)
	epilogue := []string{"collective.ar_residual_rmsnorm", "collective.moe_finalize_ar_rmsnorm"}
	epilogueDeclared := []string{"entry", "cuda_sources", "dep_patch:flashinfer"}
	tests := []struct {
		name         string
		req          Request
		target       string         // registered target wanted
		unregistered bool           // unregistered result wanted
		rule         ResolutionRule // error wanted
	}{
		{name: "implicit singleton from one silu op",
			req:    Request{Slots: []string{"activation.silu_and_mul"}, Declared: []string{"entry"}},
			target: "activation.silu_and_mul"},
		{name: "variants of one slot count once",
			req:    Request{Slots: []string{"norm.rmsnorm", "norm.rmsnorm"}, Declared: []string{"entry", "variants"}},
			target: "norm.rmsnorm"},
		{name: "explicit slot target",
			req:    Request{Competition: &Competition{Target: "attention.decode", Mode: "slot"}, Slots: []string{"attention.decode"}, Declared: []string{"entry"}},
			target: "attention.decode"},
		{name: "implicit atomic from both epilogue slots",
			req:    Request{Slots: epilogue, Declared: []string{"entry"}},
			target: "collective.moe_epilogue.v1"},
		{name: "system mode is unregistered",
			req:          Request{Competition: &Competition{Target: "activation.silu_and_mul", Mode: "system"}, Slots: []string{"activation.silu_and_mul"}, Declared: []string{"entry"}},
			unregistered: true},
		{name: "member set of no target is unregistered",
			req:          Request{Slots: []string{"activation.silu_and_mul", "norm.rmsnorm"}, Declared: []string{"entry"}},
			unregistered: true},
		{name: "unknown mode",
			req:  Request{Competition: &Competition{Target: "activation.silu_and_mul", Mode: "whole"}, Slots: []string{"activation.silu_and_mul"}},
			rule: ResolveCompetitionMode},
		{name: "slot target requested as atomic",
			req:  Request{Competition: &Competition{Target: "activation.silu_and_mul", Mode: "atomic"}, Slots: []string{"activation.silu_and_mul"}, Declared: []string{"entry"}},
			rule: ResolveKindMismatch},
		{name: "unknown target",
			req:  Request{Competition: &Competition{Target: "activation.silu", Mode: "slot"}, Slots: []string{"activation.silu_and_mul"}},
			rule: ResolveUnknownTarget},
		{name: "ops outside the requested target",
			req:  Request{Competition: &Competition{Target: "activation.silu_and_mul", Mode: "slot"}, Slots: []string{"activation.silu_and_mul", "norm.rmsnorm"}, Declared: []string{"entry"}},
			rule: ResolveMemberSet},
		{name: "atomic with only one member op",
			req:  Request{Competition: &Competition{Target: "collective.moe_epilogue.v1", Mode: "atomic"}, Slots: epilogue[:1], Declared: []string{"entry"}},
			rule: ResolveMemberSet},
		{name: "no ops",
			req:  Request{Declared: []string{"entry"}},
			rule: ResolveMemberSet},
		{name: "setup goes to the discovery lane",
			req:  Request{Slots: []string{"activation.silu_and_mul"}, Declared: []string{"entry", "setup"}},
			rule: ResolveDiscoveryLane},
		{name: "dependency patch on a target that does not admit it",
			req:  Request{Slots: []string{"activation.silu_and_mul"}, Declared: []string{"entry", "dep_patch:flashinfer"}},
			rule: ResolveFeature},
		{name: "unknown op key",
			req:  Request{Slots: []string{"activation.silu_and_mul"}, Declared: []string{"entry", OpExtraFeature("tile")}},
			rule: ResolveFeature},
		{name: "atomic with applier and extension build",
			req: Request{Slots: epilogue, Declared: epilogueDeclared, EvidenceComplete: true, CUDATranslationUnits: 1,
				Observed: []string{"rebuild:apply_dep_patch", "rebuild:build_cuda_ext"}},
			target: "collective.moe_epilogue.v1"},
		{name: "atomic patch without applier",
			req: Request{Slots: epilogue, Declared: epilogueDeclared, EvidenceComplete: true, CUDATranslationUnits: 1,
				Observed: []string{"rebuild:build_cuda_ext"}},
			rule: ResolveDepPatch},
		{name: "incomplete evidence skips the evidence rules",
			req:    Request{Slots: epilogue, Declared: epilogueDeclared, Observed: []string{"rebuild:build_cuda_ext"}},
			target: "collective.moe_epilogue.v1"},
		{name: "applier without declared patch",
			req: Request{Slots: []string{"collective.moe_finalize_ar_rmsnorm"}, Declared: []string{"entry"}, EvidenceComplete: true,
				Observed: []string{"rebuild:apply_dep_patch"}},
			rule: ResolveDepPatch},
		{name: "cuda sources without a translation unit",
			req: Request{Slots: []string{"activation.silu_and_mul"}, Declared: []string{"entry", "cuda_sources"}, EvidenceComplete: true,
				Observed: []string{"rebuild:build_cuda_ext"}},
			rule: ResolveCUDA},
		{name: "cuda sources the rebuild did not build",
			req: Request{Slots: []string{"activation.silu_and_mul"}, Declared: []string{"entry", "cuda_sources"}, EvidenceComplete: true,
				CUDATranslationUnits: 2},
			rule: ResolveCUDA},
		{name: "extension built from undeclared sources",
			req: Request{Slots: []string{"activation.silu_and_mul"}, Declared: []string{"entry"}, EvidenceComplete: true,
				Observed: []string{"rebuild:build_cuda_ext"}},
			rule: ResolveCUDA},
		{name: "aot export with its rebuild",
			req: Request{Slots: []string{"norm.rmsnorm"}, Declared: []string{"entry", "aot:cutlass.cute.cubin.v1"}, EvidenceComplete: true,
				Observed: []string{"rebuild:build_cute_cubin"}},
			target: "norm.rmsnorm"},
		{name: "aot export without its rebuild",
			req:  Request{Slots: []string{"norm.rmsnorm"}, Declared: []string{"entry", "aot:cutlass.cute.cubin.v1"}, EvidenceComplete: true},
			rule: ResolveAOT},
		{name: "cubin rebuild without an export",
			req: Request{Slots: []string{"norm.rmsnorm"}, Declared: []string{"entry"}, EvidenceComplete: true,
				Observed: []string{"rebuild:build_cute_cubin"}},
			rule: ResolveAOTRebuild},
		{name: "aot export of an unregistered provider",
			req:  Request{Slots: []string{"norm.rmsnorm"}, Declared: []string{"entry", AOTFeature("triton.aot.v1")}},
			rule: ResolveFeature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := c.Resolve(tt.req)
			switch {
			case tt.rule != "":
				var re *ResolutionError
				if !errors.As(err, &re) || re.Rule != tt.rule {
					t.Fatalf("Resolve = %+v, %v; want rule %s", res, err, tt.rule)
				}
			case err != nil:
				t.Fatalf("Resolve: %v", err)
			case tt.unregistered:
				if res.Registered || res.Unregistered == "" {
					t.Fatalf("Resolve = %+v, want unregistered with a reason", res)
				}
			default:
				if !res.Registered || res.Target.ID != tt.target {
					t.Fatalf("Resolve = %+v, want target %s", res, tt.target)
				}
				if want, _ := c.TargetSpecDigest(tt.target); res.TargetSpecDigest != want {
					t.Errorf("TargetSpecDigest = %s, want %s", res.TargetSpecDigest, want)
				}
			}
		})
	}
}

func TestResolveDiscoveryMessage(t *testing.T) {
	_, err := loadDefault(t).Resolve(Request{Slots: []string{"activation.silu_and_mul"}, Declared: []string{"entry", "setup"}})
	if err == nil || !strings.Contains(err.Error(), "discovery lane") {
		t.Fatalf("error %v does not mention the discovery lane", err)
	}
}

func TestResolveIntake(t *testing.T) {
	c := loadDefault(t)
	silu := []string{"activation.silu_and_mul"}
	tests := []struct {
		name string
		req  Request
		rule ResolutionRule
	}{
		{"registered with evidence", Request{Slots: silu, Declared: []string{"entry"}, EvidenceComplete: true}, ""},
		{"without evidence", Request{Slots: silu, Declared: []string{"entry"}}, ResolveIncomplete},
		{"system mode", Request{Competition: &Competition{Mode: "system"}, Slots: silu, Declared: []string{"entry"}, EvidenceComplete: true}, ResolveUnregistered},
		{"setup", Request{Slots: silu, Declared: []string{"entry", "setup"}, EvidenceComplete: true}, ResolveDiscoveryLane},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := c.ResolveIntake(tt.req)
			if tt.rule == "" {
				if err != nil || !res.Registered {
					t.Fatalf("ResolveIntake = %+v, %v", res, err)
				}
				return
			}
			var re *ResolutionError
			if !errors.As(err, &re) || re.Rule != tt.rule {
				t.Fatalf("ResolveIntake = %v, want rule %s", err, tt.rule)
			}
		})
	}
}
