package weights

import (
	"errors"
	"strings"
	"testing"

	"github.com/cacheon/engine/internal/canonjson"
	"github.com/cacheon/engine/internal/identity"
	"github.com/cacheon/engine/internal/reject"
)

const goodPolicy = `{"half_life_blocks": 7200, "discovery_lifetime_blocks": 3600, "discovery_pool_ppm": 100000, "schema_version": 1, "policy_version": "cacheon.emissions.v1"}`

func TestParsePolicy(t *testing.T) {
	p, err := ParsePolicy([]byte(goodPolicy))
	if err != nil {
		t.Fatal(err)
	}
	want := Policy{HalfLifeBlocks: 7200, DiscoveryLifetimeBlocks: 3600, DiscoveryPoolPPM: 100_000}
	if p != want {
		t.Fatalf("policy %+v, want %+v", p, want)
	}
	// The digest is H over the canonical projection, whatever the
	// document's key order and spacing.
	b, err := canonjson.Marshal(p.Projection())
	if err != nil {
		t.Fatal(err)
	}
	const canonical = `{"discovery_lifetime_blocks":3600,"discovery_pool_ppm":100000,"half_life_blocks":7200,"policy_version":"cacheon.emissions.v1","schema_version":1}`
	if string(b) != canonical {
		t.Fatalf("projection %s, want %s", b, canonical)
	}
	d, err := p.Digest()
	if err != nil {
		t.Fatal(err)
	}
	v, _ := canonjson.Parse([]byte(canonical))
	if want := identity.MustH(identity.DomainEconomicsPolicy, v); d != want {
		t.Fatalf("digest %s, want %s", d, want)
	}
	again, err := ParsePolicy(b)
	if err != nil || again != p {
		t.Fatalf("the projection does not parse back: %+v, %v", again, err)
	}
}

func TestParsePolicyRefusals(t *testing.T) {
	edit := func(old, new string) string { return strings.Replace(goodPolicy, old, new, 1) }
	tests := []struct {
		name  string
		doc   string
		field string
	}{
		{"half-life zero", edit(`"half_life_blocks": 7200`, `"half_life_blocks": 0`), "half_life_blocks"},
		{"half-life negative", edit(`"half_life_blocks": 7200`, `"half_life_blocks": -1`), "half_life_blocks"},
		{"half-life above 2^63-1", edit(`"half_life_blocks": 7200`, `"half_life_blocks": 9223372036854775808`), "half_life_blocks"},
		{"half-life a float", edit(`"half_life_blocks": 7200`, `"half_life_blocks": 7200.0`), "(document)"},
		{"half-life a string", edit(`"half_life_blocks": 7200`, `"half_life_blocks": "7200"`), "half_life_blocks"},
		{"lifetime zero", edit(`"discovery_lifetime_blocks": 3600`, `"discovery_lifetime_blocks": 0`), "discovery_lifetime_blocks"},
		{"pool the whole vector", edit(`"discovery_pool_ppm": 100000`, `"discovery_pool_ppm": 1000000`), "discovery_pool_ppm"},
		{"pool a boolean", edit(`"discovery_pool_ppm": 100000`, `"discovery_pool_ppm": true`), "discovery_pool_ppm"},
		{"schema 2", edit(`"schema_version": 1`, `"schema_version": 2`), "schema_version"},
		{"another policy", edit(`"cacheon.emissions.v1"`, `"cacheon.emissions.v1.3"`), "policy_version"},
		{"a missing field", edit(`"discovery_pool_ppm": 100000, `, ``), "discovery_pool_ppm"},
		{"an unknown field", edit(`"schema_version": 1`, `"schema_version": 1, "stall_scale_blocks": 1800`), "stall_scale_blocks"},
		{"a duplicate key", edit(`"schema_version": 1`, `"schema_version": 1, "schema_version": 1`), "(document)"},
		{"not an object", `[1]`, ""},
		{"trailing data", goodPolicy + ` {}`, "(document)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParsePolicy([]byte(tt.doc))
			var fe *FieldError
			if !errors.As(err, &fe) || !errors.Is(err, ErrPolicy) || !reject.Is(err) {
				t.Fatalf("err %v, want a policy FieldError", err)
			}
			if fe.Where != tt.field {
				t.Fatalf("err names %q, want %q: %v", fe.Where, tt.field, err)
			}
		})
	}
}

func TestPolicyValidateNamesTheField(t *testing.T) {
	for _, tt := range []struct {
		p     Policy
		field string
	}{
		{Policy{HalfLifeBlocks: 0, DiscoveryLifetimeBlocks: 1}, "half_life_blocks"},
		{Policy{HalfLifeBlocks: MaxInt + 1, DiscoveryLifetimeBlocks: 1}, "half_life_blocks"},
		{Policy{HalfLifeBlocks: 1, DiscoveryLifetimeBlocks: 0}, "discovery_lifetime_blocks"},
		{Policy{HalfLifeBlocks: 1, DiscoveryLifetimeBlocks: 1, DiscoveryPoolPPM: 1_000_000}, "discovery_pool_ppm"},
	} {
		var fe *FieldError
		if err := tt.p.Validate(); !errors.As(err, &fe) || fe.Where != tt.field {
			t.Errorf("%+v: err %v, want field %s", tt.p, err, tt.field)
		}
		if _, err := tt.p.Digest(); err == nil {
			t.Errorf("%+v has a digest", tt.p)
		}
	}
	if err := (Policy{HalfLifeBlocks: 1, DiscoveryLifetimeBlocks: 1, DiscoveryPoolPPM: 999_999}).Validate(); err != nil {
		t.Errorf("the largest discovery pool is refused: %v", err)
	}
}
