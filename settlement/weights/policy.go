package weights

import (
	"fmt"

	"github.com/cacheon/engine/internal/identity"
)

// The policy this package projects, and its projection's fixed fields.
const (
	PolicySchemaVersion = 1
	PolicyVersion       = "cacheon.emissions.v1"
	// WeightPPM is the whole weight vector: every projection sums to
	// exactly one million parts.
	WeightPPM = 1_000_000
)

// Policy is the emissions policy V1: the validator-consensus parameters of
// one deterministic projection. Its schema and policy versions are
// constants, so a Policy value is always V1.
type Policy struct {
	// HalfLifeBlocks is h in the credit formula: a crown's credit halves
	// when it is h blocks old, a third at 2h, and so on (hyperbolically).
	HalfLifeBlocks uint64
	// DiscoveryLifetimeBlocks is how many blocks a discovery claim stays
	// live after it is awarded.
	DiscoveryLifetimeBlocks uint64
	// DiscoveryPoolPPM is the share of the vector live discovery claims
	// split; with no live claim it returns to the standing pool.
	DiscoveryPoolPPM uint64
}

var policyFields = []string{"discovery_lifetime_blocks", "discovery_pool_ppm", "half_life_blocks", "policy_version", "schema_version"}

// Validate applies the V1 field rules, naming the first field that breaks
// one.
func (p Policy) Validate() error {
	bad := func(field, format string, args ...any) error {
		return &FieldError{Class: ErrPolicy, Where: field, Reason: fmt.Sprintf(format, args...)}
	}
	switch {
	case p.HalfLifeBlocks < 1 || p.HalfLifeBlocks > MaxInt:
		return bad("half_life_blocks", "%d is outside [1, %d]", p.HalfLifeBlocks, uint64(MaxInt))
	case p.DiscoveryLifetimeBlocks < 1 || p.DiscoveryLifetimeBlocks > MaxInt:
		return bad("discovery_lifetime_blocks", "%d is outside [1, %d]", p.DiscoveryLifetimeBlocks, uint64(MaxInt))
	case p.DiscoveryPoolPPM >= WeightPPM:
		return bad("discovery_pool_ppm", "%d leaves no standing reward: it must be below %d", p.DiscoveryPoolPPM, WeightPPM)
	}
	return nil
}

// Projection is the policy as its identity and its JSON file carry it
// (upstream's field names).
func (p Policy) Projection() map[string]any {
	return map[string]any{
		"half_life_blocks":          p.HalfLifeBlocks,
		"discovery_lifetime_blocks": p.DiscoveryLifetimeBlocks,
		"discovery_pool_ppm":        p.DiscoveryPoolPPM,
		"policy_version":            PolicyVersion,
		"schema_version":            PolicySchemaVersion,
	}
}

// Digest is the policy's identity, H(cacheon.economics.policy, projection).
func (p Policy) Digest() (identity.Digest, error) {
	if err := p.Validate(); err != nil {
		return identity.Digest{}, err
	}
	return identity.H(identity.DomainEconomicsPolicy, p.Projection())
}

// ParsePolicy reads a policy projection: exactly the five fields, integers
// as JSON integers, schema_version 1 and policy_version
// "cacheon.emissions.v1".
func ParsePolicy(data []byte) (Policy, error) {
	r := reader{class: ErrPolicy}
	v, err := r.parse(data)
	if err != nil {
		return Policy{}, err
	}
	m, err := r.object(v, "", policyFields)
	if err != nil {
		return Policy{}, err
	}
	schema, err := r.uint(m, "", "schema_version", 0)
	if err != nil {
		return Policy{}, err
	}
	if schema != PolicySchemaVersion {
		return Policy{}, r.fail("schema_version", "%d is unsupported (want %d)", schema, PolicySchemaVersion)
	}
	version, err := r.string(m, "", "policy_version")
	if err != nil {
		return Policy{}, err
	}
	if version != PolicyVersion {
		return Policy{}, r.fail("policy_version", "%q is unsupported (want %q)", version, PolicyVersion)
	}
	var p Policy
	for _, f := range []struct {
		name string
		dst  *uint64
	}{
		{"half_life_blocks", &p.HalfLifeBlocks},
		{"discovery_lifetime_blocks", &p.DiscoveryLifetimeBlocks},
		{"discovery_pool_ppm", &p.DiscoveryPoolPPM},
	} {
		if *f.dst, err = r.uint(m, "", f.name, 0); err != nil {
			return Policy{}, err
		}
	}
	if err := p.Validate(); err != nil {
		return Policy{}, err
	}
	return p, nil
}
