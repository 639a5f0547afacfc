package weights

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/cacheon/engine/internal/identity"
)

// dg is a distinct, valid digest for a name.
func dg(name string) identity.Digest {
	sum := sha256.Sum256([]byte(name))
	return identity.MustParse(hex.EncodeToString(sum[:]))
}

var testPolicy = Policy{HalfLifeBlocks: 100, DiscoveryLifetimeBlocks: 50, DiscoveryPoolPPM: 100_000}

// crown is a standing claim in arena "a1" for target, held by hotkey.
func crown(target, hotkey string, speedupPPM, block uint64) StandingClaim {
	return crownIn("a1", target, hotkey, speedupPPM, block)
}

func crownIn(arena, target, hotkey string, speedupPPM, block uint64) StandingClaim {
	return StandingClaim{
		Arena:            dg("arena " + arena),
		TargetID:         target,
		TargetSpec:       dg("spec " + target),
		Contribution:     dg("contribution " + arena + " " + target + " " + hotkey),
		Hotkey:           hotkey,
		SpeedupPPM:       speedupPPM,
		CrownedBlock:     block,
		RetainedEvidence: dg("evidence " + arena + " " + target + " " + hotkey),
	}
}

func bounty(proposal, hotkey string, units, block uint64) DiscoveryClaim {
	return DiscoveryClaim{
		Proposal:         dg("proposal " + proposal),
		RetainedEvidence: dg("discovery evidence " + proposal),
		Hotkey:           hotkey,
		BountyUnits:      units,
		AwardedBlock:     block,
	}
}

// vector is a projection's weights as a map, for comparisons.
func vector(p Projection) map[string]uint64 {
	m := map[string]uint64{}
	for _, w := range p.Weights {
		m[w.Hotkey] = w.PPM
	}
	return m
}

func sumPPM(t *testing.T, p Projection) uint64 {
	t.Helper()
	var s uint64
	for i, w := range p.Weights {
		if i > 0 && p.Weights[i-1].Hotkey >= w.Hotkey {
			t.Fatalf("weights not sorted by hotkey with no repeats: %q then %q", p.Weights[i-1].Hotkey, w.Hotkey)
		}
		s += w.PPM
	}
	return s
}

func errorsIs(err, target error) bool { return errors.Is(err, target) }
