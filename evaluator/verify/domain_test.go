package verify

import (
	"encoding/json"
	"math/big"
	"strings"
	"testing"

	"github.com/cacheon/engine/kernels/bundle"
)

func TestAdmits(t *testing.T) {
	live := map[string]any{
		"num_tokens": json.Number("128"), "last_dim": 8192.0, "head_dim": 128, "dtype": "bfloat16",
		"architecture": "sm90", "quant": "dense", "phase": "decode",
	}
	n := big.NewInt
	cases := []struct {
		name string
		e    bundle.Eligibility
		ok   bool
		why  string
	}{
		{"unrestricted", bundle.Eligibility{}, true, ""},
		{"dtype in", bundle.Eligibility{Dtypes: []string{"bfloat16", "float16"}}, true, ""},
		{"dtype out", bundle.Eligibility{Dtypes: []string{"float32"}}, false, "dtype bfloat16 not in float32"},
		{"architecture out", bundle.Eligibility{Architectures: []string{"sm100"}}, false, "architecture sm90"},
		{"quantized only", bundle.Eligibility{Quant: []string{"nvfp4"}}, false, "quant dense not in nvfp4"},
		{"max last dim", bundle.Eligibility{MaxLastDim: n(4096)}, false, "last_dim=8192 above the declared maximum 4096"},
		{"token range in", bundle.Eligibility{MinNumTokens: n(1), MaxNumTokens: n(128)}, true, ""},
		{"token range out", bundle.Eligibility{MinNumTokens: n(129)}, false, "num_tokens=128 below the declared minimum 129"},
		{"capability one_of", bundle.Eligibility{Capabilities: bundle.Domain{{Field: "head_dim", Allowed: []any{n(64), n(128)}}}}, true, ""},
		{"capability one_of out", bundle.Eligibility{Capabilities: bundle.Domain{{Field: "head_dim", Allowed: []any{n(64)}}}}, false, "head_dim=128 not in"},
		{"capability context", bundle.Eligibility{Capabilities: bundle.Domain{{Field: "phase", Allowed: []any{"prefill"}}}}, false, "phase=decode"},
		{"capability range", bundle.Eligibility{Capabilities: bundle.Domain{{Field: "last_dim", Min: n(1024), Max: n(8192)}}}, true, ""},
		// A field the call does not have is a mismatch, never a wildcard.
		{"missing live field", bundle.Eligibility{Capabilities: bundle.Domain{{Field: "num_experts", Min: n(1)}}}, false, "num_experts is not a field"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ok, why := admits(&tc.e, live)
			if ok != tc.ok || !strings.Contains(why, tc.why) {
				t.Fatalf("admits = %v %q, want %v %q", ok, why, tc.ok, tc.why)
			}
		})
	}
}
