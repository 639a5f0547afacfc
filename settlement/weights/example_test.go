package weights_test

import (
	"fmt"

	"github.com/cacheon/engine/internal/identity"
	"github.com/cacheon/engine/settlement/weights"
)

func ExampleProject() {
	// Distinct stand-in digests for the example's identities.
	digest := func(s string) identity.Digest { return identity.MustH(identity.DomainArenaDescriptor, s) }
	crown := func(target, hotkey string, speedupPPM, block uint64) weights.StandingClaim {
		return weights.StandingClaim{
			Arena: digest("arena"), TargetID: target, TargetSpec: digest("spec " + target),
			Contribution: digest("contribution " + target), Hotkey: hotkey,
			SpeedupPPM: speedupPPM, CrownedBlock: block, RetainedEvidence: digest("evidence " + target),
		}
	}
	p, err := weights.Project(weights.Input{
		Policy: weights.Policy{HalfLifeBlocks: 100, DiscoveryLifetimeBlocks: 50, DiscoveryPoolPPM: 100_000},
		Standing: []weights.StandingClaim{
			crown("silu_and_mul", "alice", 1_200_000, 1000), // credit 200000·100 // 200 = 100000
			crown("rms_norm", "bob", 1_050_000, 1050),       // credit 50000·100 // 150 = 33333
		},
		Block:     1100,
		Metagraph: []string{"alice", "bob", "validator"},
		Validator: "validator",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, w := range p.Weights {
		fmt.Println(w.Hotkey, w.PPM)
	}
	// Output:
	// alice 750002
	// bob 249998
}
