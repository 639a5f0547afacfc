package weights

import (
	"fmt"
	"math/bits"

	"github.com/cacheon/engine/internal/identity"
)

// speedupUnit is speedup_ppm of a speedup of exactly 1 (no gain).
const speedupUnit = 1_000_000

// StandingClaim is one crown's standing reward: written when settlement
// crowns a contribution for (arena, target), replaced when the target is
// crowned again.
type StandingClaim struct {
	Arena        identity.Digest // the arena descriptor digest
	TargetID     string
	TargetSpec   identity.Digest // the crowned target's spec digest
	Contribution identity.Digest // the crowned contribution
	Hotkey       string          // the miner credited
	// SpeedupPPM is ⌊settled conservative speedup × 10⁶⌋; above 10⁶,
	// since only a speedup over 1 is crowned.
	SpeedupPPM uint64
	// CrownedBlock is the finalized block of the crowned proposal's
	// submission (not of the settlement), so the time a validator took to
	// qualify it does not age it.
	CrownedBlock     uint64
	RetainedEvidence identity.Digest // the settlement evidence kept for audit
}

var standingFields = []string{"arena_digest", "contribution_digest", "crowned_block", "hotkey", "retained_evidence_digest", "speedup_ppm", "target_id", "target_spec_digest"}

// Validate applies the field rules; where names the claim in errors.
func (c StandingClaim) Validate(where string) error {
	bad := func(field, format string, args ...any) error {
		return &FieldError{Class: ErrClaim, Where: join(where, field), Reason: fmt.Sprintf(format, args...)}
	}
	for _, d := range []struct {
		field string
		v     identity.Digest
	}{{"arena_digest", c.Arena}, {"target_spec_digest", c.TargetSpec}, {"contribution_digest", c.Contribution}, {"retained_evidence_digest", c.RetainedEvidence}} {
		if err := checkDigestValue(d.v); err != nil {
			return bad(d.field, "%v", err)
		}
	}
	if c.TargetID == "" {
		return bad("target_id", "empty")
	}
	if err := checkHotkey(c.Hotkey); err != nil {
		return bad("hotkey", "%v", err)
	}
	if c.SpeedupPPM <= speedupUnit || c.SpeedupPPM > MaxInt {
		return bad("speedup_ppm", "%d is outside [%d, %d]: a crown is a speedup over 1", c.SpeedupPPM, speedupUnit+1, uint64(MaxInt))
	}
	if c.CrownedBlock > MaxInt {
		return bad("crowned_block", "%d is above %d", c.CrownedBlock, uint64(MaxInt))
	}
	return nil
}

// Projection is the claim as its identity and its JSON carry it
// (upstream's field names).
func (c StandingClaim) Projection() map[string]any {
	return map[string]any{
		"arena_digest":             c.Arena,
		"target_id":                c.TargetID,
		"target_spec_digest":       c.TargetSpec,
		"contribution_digest":      c.Contribution,
		"hotkey":                   c.Hotkey,
		"speedup_ppm":              c.SpeedupPPM,
		"crowned_block":            c.CrownedBlock,
		"retained_evidence_digest": c.RetainedEvidence,
	}
}

// Digest is the claim's identity, H(cacheon.economics.standing-claim,
// projection).
func (c StandingClaim) Digest() (identity.Digest, error) {
	if err := c.Validate(""); err != nil {
		return identity.Digest{}, err
	}
	return c.digest()
}

// digest and family are Digest and Family for a claim already validated.
func (c StandingClaim) digest() (identity.Digest, error) {
	return identity.H(identity.DomainStandingClaim, c.Projection())
}

// Family is the identity of the reward family the claim belongs to,
// H(cacheon.economics.standing-family, {arena, target, target spec}):
// every crown of one target under one spec, whoever holds it.
func (c StandingClaim) Family() (identity.Digest, error) {
	if err := c.Validate(""); err != nil {
		return identity.Digest{}, err
	}
	return c.family()
}

func (c StandingClaim) family() (identity.Digest, error) {
	return identity.H(identity.DomainStandingFamily, map[string]any{
		"arena_digest":       c.Arena,
		"target_id":          c.TargetID,
		"target_spec_digest": c.TargetSpec,
	})
}

// CreditAt is the claim's credit at block b under p:
//
//	(speedup_ppm − 10⁶) · h // (h + (b − crowned_block))
//
// A crown newer than b is refused (ErrCrownNewerThanBlock).
//
// The product (speedup_ppm − 10⁶)·h needs up to 126 bits, so it is formed
// in 128 bits (bits.Mul64) and divided exactly (bits.Div64). The quotient
// fits 64 bits because h/(h + age) ≤ 1, so it is at most speedup_ppm −
// 10⁶; h + age cannot overflow because both are at most 2⁶³−1.
func (c StandingClaim) CreditAt(p Policy, b uint64) (uint64, error) {
	if err := p.Validate(); err != nil {
		return 0, err
	}
	if err := c.Validate(""); err != nil {
		return 0, err
	}
	if b > MaxInt {
		return 0, &FieldError{Class: ErrClaim, Where: "block", Reason: fmt.Sprintf("%d is above %d", b, uint64(MaxInt))}
	}
	return c.creditAt(p, b)
}

// creditAt is CreditAt for a validated claim, policy and block.
func (c StandingClaim) creditAt(p Policy, b uint64) (uint64, error) {
	if b < c.CrownedBlock {
		return 0, fmt.Errorf("%w: %s crowned at block %d, projecting block %d", ErrCrownNewerThanBlock, c.name(), c.CrownedBlock, b)
	}
	return credit(c.SpeedupPPM, p.HalfLifeBlocks, b-c.CrownedBlock), nil
}

// credit is the formula on validated values.
func credit(speedupPPM, h, age uint64) uint64 {
	hi, lo := bits.Mul64(speedupPPM-speedupUnit, h)
	q, _ := bits.Div64(hi, lo, h+age)
	return q
}

// name names the claim in projection errors by what it is (arena and
// target), not by its place in the input, so the error does not depend on
// the order of the claims.
func (c StandingClaim) name() string {
	return fmt.Sprintf("standing claim for target %q of arena %s", c.TargetID, c.Arena)
}

// DiscoveryClaim is one discovery bounty: a qualified discovery-lane
// proposal, paid from the discovery pool for a fixed number of blocks and
// never renewed.
type DiscoveryClaim struct {
	Proposal         identity.Digest
	RetainedEvidence identity.Digest
	Hotkey           string
	// BountyUnits is the claim's weight within the discovery pool,
	// BountyUnits(speedup_ppm) when settlement awards it.
	BountyUnits  uint64
	AwardedBlock uint64
}

var discoveryFields = []string{"awarded_block", "bounty_units", "hotkey", "proposal_digest", "retained_evidence_digest"}

// BountyUnits is the bounty a discovery of speedup speedupPPM earns:
// max(1, speedup_ppm − 10⁶), so even a discovery without a speedup gets
// one unit.
func BountyUnits(speedupPPM uint64) uint64 {
	if speedupPPM <= speedupUnit+1 {
		return 1
	}
	return speedupPPM - speedupUnit
}

// Validate applies the field rules; where names the claim in errors.
func (d DiscoveryClaim) Validate(where string) error {
	bad := func(field, format string, args ...any) error {
		return &FieldError{Class: ErrClaim, Where: join(where, field), Reason: fmt.Sprintf(format, args...)}
	}
	for _, f := range []struct {
		field string
		v     identity.Digest
	}{{"proposal_digest", d.Proposal}, {"retained_evidence_digest", d.RetainedEvidence}} {
		if err := checkDigestValue(f.v); err != nil {
			return bad(f.field, "%v", err)
		}
	}
	if err := checkHotkey(d.Hotkey); err != nil {
		return bad("hotkey", "%v", err)
	}
	if d.BountyUnits < 1 || d.BountyUnits > MaxInt {
		return bad("bounty_units", "%d is outside [1, %d]", d.BountyUnits, uint64(MaxInt))
	}
	if d.AwardedBlock > MaxInt {
		return bad("awarded_block", "%d is above %d", d.AwardedBlock, uint64(MaxInt))
	}
	return nil
}

// Projection is the claim as its identity and its JSON carry it.
func (d DiscoveryClaim) Projection() map[string]any {
	return map[string]any{
		"proposal_digest":          d.Proposal,
		"retained_evidence_digest": d.RetainedEvidence,
		"hotkey":                   d.Hotkey,
		"bounty_units":             d.BountyUnits,
		"awarded_block":            d.AwardedBlock,
	}
}

// Digest is the claim's identity, H(cacheon.economics.discovery-claim,
// projection).
func (d DiscoveryClaim) Digest() (identity.Digest, error) {
	if err := d.Validate(""); err != nil {
		return identity.Digest{}, err
	}
	return d.digest()
}

func (d DiscoveryClaim) digest() (identity.Digest, error) {
	return identity.H(identity.DomainDiscoveryClaim, d.Projection())
}

// LiveAt reports whether the claim is live at block b under p: b −
// awarded_block < discovery_lifetime_blocks. A claim awarded after b is
// refused (ErrDiscoveryNewerThanBlock).
func (d DiscoveryClaim) LiveAt(p Policy, b uint64) (bool, error) {
	if b < d.AwardedBlock {
		return false, fmt.Errorf("%w: discovery claim for proposal %s awarded at block %d, projecting block %d", ErrDiscoveryNewerThanBlock, d.Proposal, d.AwardedBlock, b)
	}
	return b-d.AwardedBlock < p.DiscoveryLifetimeBlocks, nil
}
