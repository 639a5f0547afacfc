package weights

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/cacheon/engine/internal/reject"
)

func TestCreditAt(t *testing.T) {
	tests := []struct {
		name       string
		h          uint64
		speedupPPM uint64
		crowned    uint64
		block      uint64
		want       uint64
	}{
		// (1.2e6 − 1e6)·100 // (100 + 0) = 200000
		{"at the crown block the credit is the whole gain", 100, 1_200_000, 1000, 1000, 200_000},
		// 200000·100 // 200 = 100000
		{"one half-life halves it", 100, 1_200_000, 1000, 1100, 100_000},
		// 200000·100 // 300 = 66666 (floor)
		{"two half-lives leave a third, floored", 100, 1_200_000, 1000, 1200, 66_666},
		// 50000·100 // 150 = 33333
		{"floor of a repeating fraction", 100, 1_050_000, 1050, 1100, 33_333},
		// 1·1 // (1 + 1) = 0
		{"the smallest gain decays to zero after one block", 1, 1_000_001, 0, 1, 0},
		// (2⁶³−1 − 1e6)·(2⁶³−1) // (2⁶³−1 + 0): the product needs 126 bits
		{"no overflow at the largest values", MaxInt, MaxInt, 5, 5, MaxInt - 1_000_000},
		// (2⁶³−1 − 1e6)·(2⁶³−1) // (2·(2⁶³−1)) = (2⁶³−1 − 1e6)//2
		{"no overflow in h plus age", MaxInt, MaxInt, 0, MaxInt, (MaxInt - 1_000_000) / 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Policy{HalfLifeBlocks: tt.h, DiscoveryLifetimeBlocks: 1}
			c := crown("t", "alice", tt.speedupPPM, tt.crowned)
			got, err := c.CreditAt(p, tt.block)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("credit %d, want %d", got, tt.want)
			}
		})
	}
}

func TestCreditAtRefusesACrownNewerThanTheBlock(t *testing.T) {
	_, err := crown("t", "alice", 1_200_000, 1001).CreditAt(testPolicy, 1000)
	if !errors.Is(err, ErrCrownNewerThanBlock) || !reject.Is(err) {
		t.Fatalf("err %v, want ErrCrownNewerThanBlock", err)
	}
}

func TestBountyUnits(t *testing.T) {
	for _, tt := range []struct{ speedup, want uint64 }{
		{0, 1}, {999_999, 1}, {1_000_000, 1}, {1_000_001, 1}, {1_000_002, 2}, {1_250_000, 250_000},
	} {
		if got := BountyUnits(tt.speedup); got != tt.want {
			t.Errorf("BountyUnits(%d) = %d, want %d", tt.speedup, got, tt.want)
		}
	}
}

func TestProject(t *testing.T) {
	members := []string{"alice", "bob", "carol", "val"}
	// Block 1100 under testPolicy (h = 100): alice's crown is 100 blocks
	// old, credit 200000·100//200 = 100000; bob's 50, 50000·100//150 =
	// 33333. Total 133333.
	alice := crown("t1", "alice", 1_200_000, 1000)
	bob := crown("t2", "bob", 1_050_000, 1050)
	tests := []struct {
		name      string
		standing  []StandingClaim
		discovery []DiscoveryClaim
		members   []string
		want      map[string]uint64
		wantPools [2]uint64
	}{
		{
			// 10¹¹/133333 = 750001 r 116667; 33333·10⁶/133333 = 249998 r
			// 16666; one part left, to the larger remainder (alice).
			name:      "largest remainder over the standing pool",
			standing:  []StandingClaim{alice, bob},
			members:   members,
			want:      map[string]uint64{"alice": 750_002, "bob": 249_998},
			wantPools: [2]uint64{1_000_000, 0},
		},
		{
			// Standing pool 900000: 675001 r 91667 and 224998 r 41666, one
			// part left to alice; carol's live claim takes the whole
			// discovery pool.
			name:      "a live discovery claim takes the discovery pool",
			standing:  []StandingClaim{alice, bob},
			discovery: []DiscoveryClaim{bounty("p1", "carol", 500, 1080)},
			members:   members,
			want:      map[string]uint64{"alice": 675_002, "bob": 224_998, "carol": 100_000},
			wantPools: [2]uint64{900_000, 100_000},
		},
		{
			// Awarded at 1050, lifetime 50: 1100 − 1050 = 50 is not < 50.
			name:      "an expired discovery claim returns the pool to standing",
			standing:  []StandingClaim{alice, bob},
			discovery: []DiscoveryClaim{bounty("p1", "carol", 500, 1050)},
			members:   members,
			want:      map[string]uint64{"alice": 750_002, "bob": 249_998},
			wantPools: [2]uint64{1_000_000, 0},
		},
		{
			// Units 1:3 of 100000 = 25000 and 75000 exactly.
			name:      "live discovery claims split the pool by bounty units",
			standing:  []StandingClaim{alice},
			discovery: []DiscoveryClaim{bounty("p1", "carol", 1, 1099), bounty("p2", "bob", 3, 1100)},
			members:   members,
			want:      map[string]uint64{"alice": 900_000, "bob": 75_000, "carol": 25_000},
			wantPools: [2]uint64{900_000, 100_000},
		},
		{
			name:      "a departed hotkey's credit goes to the validator",
			standing:  []StandingClaim{alice, bob},
			members:   []string{"alice", "val"},
			want:      map[string]uint64{"alice": 750_002, "val": 249_998},
			wantPools: [2]uint64{1_000_000, 0},
		},
		{
			name:      "a departed discovery holder's bounty goes to the validator",
			standing:  []StandingClaim{alice},
			discovery: []DiscoveryClaim{bounty("p1", "dave", 7, 1100)},
			members:   members,
			want:      map[string]uint64{"alice": 900_000, "val": 100_000},
			wantPools: [2]uint64{900_000, 100_000},
		},
		{
			// Credit 1:1:1: 333333 each, remainder 1 each; the one part
			// left goes to the smallest hotkey.
			name:      "equal remainders go to the smaller hotkey",
			standing:  []StandingClaim{crown("t1", "carol", 1_300_000, 1100), crown("t2", "alice", 1_300_000, 1100), crown("t3", "bob", 1_300_000, 1100)},
			members:   members,
			want:      map[string]uint64{"alice": 333_334, "bob": 333_333, "carol": 333_333},
			wantPools: [2]uint64{1_000_000, 0},
		},
		{
			// alice: 100000 + 33333 over two targets in two arenas is all
			// the credit.
			name:      "credits are summed per hotkey across targets and arenas",
			standing:  []StandingClaim{alice, crownIn("a2", "t2", "alice", 1_050_000, 1050)},
			members:   members,
			want:      map[string]uint64{"alice": 1_000_000},
			wantPools: [2]uint64{1_000_000, 0},
		},
		{
			// bob's 1_000_001 crown of block 0 has credit 1·100//1200 = 0.
			name:      "a claim decayed to zero is left out",
			standing:  []StandingClaim{alice, crown("t2", "bob", 1_000_001, 0)},
			members:   members,
			want:      map[string]uint64{"alice": 1_000_000},
			wantPools: [2]uint64{1_000_000, 0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Project(Input{Policy: testPolicy, Standing: tt.standing, Discovery: tt.discovery, Block: 1100, Metagraph: tt.members, Validator: "val"})
			if err != nil {
				t.Fatal(err)
			}
			if got := vector(p); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("weights %v, want %v", got, tt.want)
			}
			if got := sumPPM(t, p); got != WeightPPM {
				t.Fatalf("weights sum to %d", got)
			}
			if got := [2]uint64{p.StandingPoolPPM, p.DiscoveryPoolPPM}; got != tt.wantPools {
				t.Fatalf("pools %v, want %v", got, tt.wantPools)
			}
			want, _ := testPolicy.Digest()
			if p.PolicyDigest != want {
				t.Fatalf("policy digest %s, want %s", p.PolicyDigest, want)
			}
		})
	}
}

// A share that rounds to zero keeps its hotkey in the vector at 0 ppm.
func TestProjectKeepsAHotkeyWhoseShareRoundsAway(t *testing.T) {
	big := crown("t1", "alice", MaxInt, 1100)
	small := crown("t2", "bob", 1_000_001, 1100)
	p, err := Project(Input{Policy: testPolicy, Standing: []StandingClaim{big, small}, Block: 1100, Metagraph: []string{"alice", "bob"}, Validator: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := vector(p), map[string]uint64{"alice": 1_000_000, "bob": 0}; !reflect.DeepEqual(got, want) {
		t.Fatalf("weights %v, want %v", got, want)
	}
}

func TestProjectWithArenas(t *testing.T) {
	a1 := crown("t1", "alice", 1_200_000, 1000)
	a2 := crown("t2", "bob", 1_050_000, 1050)
	entry := func(c StandingClaim) ActiveTarget {
		return ActiveTarget{TargetID: c.TargetID, TargetSpec: c.TargetSpec, Contribution: c.Contribution}
	}
	arenas := &Arenas{List: []Arena{{Arena: a1.Arena, Targets: []ActiveTarget{entry(a2), entry(a1)}}}}
	p, err := Project(Input{Policy: testPolicy, Standing: []StandingClaim{a1, a2}, Arenas: arenas, Block: 1100, Metagraph: []string{"alice", "bob"}, Validator: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := vector(p), map[string]uint64{"alice": 750_002, "bob": 249_998}; !reflect.DeepEqual(got, want) {
		t.Fatalf("weights %v, want %v", got, want)
	}
}

func TestProjectRefusals(t *testing.T) {
	alice := crown("t1", "alice", 1_200_000, 1000)
	bob := crown("t2", "bob", 1_050_000, 1050)
	entry := func(c StandingClaim) ActiveTarget {
		return ActiveTarget{TargetID: c.TargetID, TargetSpec: c.TargetSpec, Contribution: c.Contribution}
	}
	arena := func(targets ...ActiveTarget) *Arenas {
		return &Arenas{List: []Arena{{Arena: alice.Arena, Targets: targets}}}
	}
	respec := entry(bob)
	respec.TargetSpec = dg("spec t2 v2")
	recrowned := entry(bob)
	recrowned.Contribution = dg("another contribution")
	secondForT1 := crown("t1", "bob", 1_100_000, 1000)
	members := []string{"alice", "bob", "val"}
	tests := []struct {
		name      string
		policy    Policy
		standing  []StandingClaim
		discovery []DiscoveryClaim
		arenas    *Arenas
		members   []string
		validator string
		want      error
	}{
		{name: "a crown newer than the block", standing: []StandingClaim{alice, crown("t3", "bob", 1_100_000, 1101)}, want: ErrCrownNewerThanBlock},
		{name: "all credit decayed to zero", policy: Policy{HalfLifeBlocks: 1, DiscoveryLifetimeBlocks: 1}, standing: []StandingClaim{crown("t1", "alice", 1_000_001, 0), crown("t2", "bob", 1_000_100, 0)}, want: ErrCreditDecayed},
		{name: "live discovery claims with the pool disabled", policy: Policy{HalfLifeBlocks: 100, DiscoveryLifetimeBlocks: 50}, standing: []StandingClaim{alice}, discovery: []DiscoveryClaim{bounty("p1", "bob", 1, 1090)}, want: ErrDiscoveryDisabled},
		{name: "two claims for one target", standing: []StandingClaim{alice, bob, secondForT1}, want: ErrDuplicateClaim},
		{name: "two claims for one target with an arena list", standing: []StandingClaim{alice, bob, secondForT1}, arenas: arena(entry(alice), entry(bob)), want: ErrDuplicateClaim},
		{name: "no standing claim at all", standing: nil, want: ErrNoActiveCrown},
		{name: "an arena without an active crown", standing: []StandingClaim{alice}, arenas: &Arenas{List: []Arena{{Arena: alice.Arena, Targets: []ActiveTarget{entry(alice)}}, {Arena: dg("arena a2")}}}, want: ErrNoActiveCrown},
		{name: "an empty arena list", standing: []StandingClaim{alice}, arenas: &Arenas{}, want: ErrNoActiveCrown},
		{name: "an active target without a claim", standing: []StandingClaim{alice}, arenas: arena(entry(alice), entry(bob)), want: ErrMissingClaim},
		{name: "a claim under a superseded target spec", standing: []StandingClaim{alice, bob}, arenas: arena(entry(alice), respec), want: ErrStaleClaim},
		{name: "a claim for a displaced contribution", standing: []StandingClaim{alice, bob}, arenas: arena(entry(alice), recrowned), want: ErrStaleClaim},
		{name: "a claim for an inactive target", standing: []StandingClaim{alice, bob}, arenas: arena(entry(alice)), want: ErrStaleClaim},
		{name: "a claim for an unregistered arena", standing: []StandingClaim{alice, crownIn("a9", "t1", "bob", 1_100_000, 1000)}, arenas: arena(entry(alice)), want: ErrStaleClaim},
		{name: "a discovery claim newer than the block", standing: []StandingClaim{alice}, discovery: []DiscoveryClaim{bounty("p1", "bob", 1, 1101)}, want: ErrDiscoveryNewerThanBlock},
		{name: "a renewed discovery claim", standing: []StandingClaim{alice}, discovery: []DiscoveryClaim{bounty("p1", "bob", 1, 1090), func() DiscoveryClaim { d := bounty("p1", "bob", 2, 1095); d.RetainedEvidence = dg("other"); return d }()}, want: ErrDuplicateDiscovery},
		{name: "one evidence backing two discovery claims", standing: []StandingClaim{alice}, discovery: []DiscoveryClaim{bounty("p1", "bob", 1, 1090), func() DiscoveryClaim {
			d := bounty("p2", "bob", 1, 1090)
			d.RetainedEvidence = bounty("p1", "", 0, 0).RetainedEvidence
			return d
		}()}, want: ErrDuplicateDiscovery},
		{name: "a validator outside the metagraph", standing: []StandingClaim{alice}, validator: "nobody", want: ErrValidatorAbsent},
		{name: "an empty metagraph", standing: []StandingClaim{alice}, members: []string{}, want: ErrClaim},
		{name: "a metagraph listing a hotkey twice", standing: []StandingClaim{alice}, members: []string{"alice", "val", "alice"}, want: ErrClaim},
		{name: "a claim with a speedup of 1", standing: []StandingClaim{crown("t1", "alice", 1_000_000, 1000)}, want: ErrClaim},
		{name: "a bad policy field", policy: Policy{HalfLifeBlocks: 0, DiscoveryLifetimeBlocks: 1}, standing: []StandingClaim{alice}, want: ErrPolicy},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := Input{Policy: tt.policy, Standing: tt.standing, Discovery: tt.discovery, Arenas: tt.arenas, Block: 1100, Metagraph: tt.members, Validator: tt.validator}
			if in.Policy == (Policy{}) {
				in.Policy = testPolicy
			}
			if in.Metagraph == nil {
				in.Metagraph = members
			}
			if in.Validator == "" {
				in.Validator = "val"
			}
			p, err := Project(in)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err %v, want %v", err, tt.want)
			}
			if !reject.Is(err) {
				t.Fatalf("err %v is not a rejection", err)
			}
			if p.Weights != nil {
				t.Fatalf("a refusal returned a partial vector %v", p.Weights)
			}
		})
	}
}

// Each refusal names what it refused, not only its class.
func TestProjectRefusalNamesTheClaim(t *testing.T) {
	_, err := Project(Input{Policy: testPolicy, Standing: []StandingClaim{crown("t1", "alice", 1_200_000, 1000), crown("t1", "bob", 1_100_000, 1000)}, Block: 1100, Metagraph: []string{"val"}, Validator: "val"})
	want := fmt.Sprintf("%v: target %q of arena %s", ErrDuplicateClaim, "t1", dg("arena a1"))
	if err == nil || err.Error() != want {
		t.Fatalf("err %v, want %s", err, want)
	}
}
