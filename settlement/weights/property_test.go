package weights

import (
	"fmt"
	"math/big"
	"math/rand"
	"reflect"
	"sort"
	"testing"
)

// scenario is a random, valid projection input. Hotkeys are drawn from a
// small set so that hotkeys hold several claims, some leave the
// metagraph, and equal credits (ties) are common.
func scenario(rng *rand.Rand) Input {
	hotkeys := make([]string, 1+rng.Intn(12))
	for i := range hotkeys {
		hotkeys[i] = fmt.Sprintf("hk%02d", i)
	}
	pick := func() string { return hotkeys[rng.Intn(len(hotkeys))] }
	block := uint64(10_000 + rng.Intn(10_000))
	policy := Policy{
		HalfLifeBlocks:          uint64(1 + rng.Intn(5_000)),
		DiscoveryLifetimeBlocks: uint64(1 + rng.Intn(5_000)),
		DiscoveryPoolPPM:        uint64(1 + rng.Intn(WeightPPM-1)),
	}
	// Few distinct speedups and ages, so equal credits occur.
	speedups := []uint64{1_000_001, 1_010_000, 1_200_000, 2_000_000, MaxInt}
	in := Input{Policy: policy, Block: block, Validator: "validator"}
	arenas := 1 + rng.Intn(3)
	for a := 0; a < arenas; a++ {
		targets := 1 + rng.Intn(8)
		for t := 0; t < targets; t++ {
			c := crownIn(fmt.Sprint(a), fmt.Sprintf("target%d", t), pick(), speedups[rng.Intn(len(speedups))], block-age(rng, block))
			in.Standing = append(in.Standing, c)
		}
	}
	for d := rng.Intn(5); d > 0; d-- {
		in.Discovery = append(in.Discovery, bounty(fmt.Sprint(rng.Int63()), pick(), uint64(1+rng.Intn(3)), block-uint64(rng.Intn(2*int(policy.DiscoveryLifetimeBlocks)))))
	}
	if rng.Intn(2) == 0 {
		// The same authority, given explicitly as an arena list.
		in.Arenas = &Arenas{}
		index := map[string]int{}
		for _, c := range in.Standing {
			i, ok := index[c.Arena.Hex]
			if !ok {
				i = len(in.Arenas.List)
				index[c.Arena.Hex] = i
				in.Arenas.List = append(in.Arenas.List, Arena{Arena: c.Arena})
			}
			in.Arenas.List[i].Targets = append(in.Arenas.List[i].Targets, ActiveTarget{TargetID: c.TargetID, TargetSpec: c.TargetSpec, Contribution: c.Contribution})
		}
	}
	in.Metagraph = []string{"validator"}
	for _, h := range hotkeys {
		if rng.Intn(4) > 0 {
			in.Metagraph = append(in.Metagraph, h)
		}
	}
	return in
}

// age is a crown's age at block: often 0 or a few blocks (equal credits),
// sometimes anything up to the block itself.
func age(rng *rand.Rand, block uint64) uint64 {
	switch rng.Intn(3) {
	case 0:
		return 0
	case 1:
		return uint64(rng.Intn(10))
	}
	return uint64(rng.Int63n(int64(block) + 1))
}

func shuffled(rng *rand.Rand, in Input) Input {
	out := in
	out.Standing = append([]StandingClaim(nil), in.Standing...)
	out.Discovery = append([]DiscoveryClaim(nil), in.Discovery...)
	out.Metagraph = append([]string(nil), in.Metagraph...)
	rng.Shuffle(len(out.Standing), func(i, j int) { out.Standing[i], out.Standing[j] = out.Standing[j], out.Standing[i] })
	rng.Shuffle(len(out.Discovery), func(i, j int) { out.Discovery[i], out.Discovery[j] = out.Discovery[j], out.Discovery[i] })
	rng.Shuffle(len(out.Metagraph), func(i, j int) { out.Metagraph[i], out.Metagraph[j] = out.Metagraph[j], out.Metagraph[i] })
	if in.Arenas != nil {
		out.Arenas = &Arenas{List: make([]Arena, len(in.Arenas.List))}
		for i, a := range in.Arenas.List {
			targets := append([]ActiveTarget(nil), a.Targets...)
			rng.Shuffle(len(targets), func(i, j int) { targets[i], targets[j] = targets[j], targets[i] })
			out.Arenas.List[i] = Arena{Arena: a.Arena, Targets: targets}
		}
		rng.Shuffle(len(out.Arenas.List), func(i, j int) { out.Arenas.List[i], out.Arenas.List[j] = out.Arenas.List[j], out.Arenas.List[i] })
	}
	return out
}

// Every projection sums to exactly 10⁶, pays only registered hotkeys, and
// is the same whatever the order of the claims, the arena list and the
// metagraph.
func TestProjectionProperties(t *testing.T) {
	rng := rand.New(rand.NewSource(20261201))
	projected := 0
	for i := 0; i < 500; i++ {
		in := scenario(rng)
		p, err := Project(in)
		if err != nil {
			// Only the all-decayed refusal is possible for these inputs.
			if errorsIs(err, ErrCreditDecayed) {
				continue
			}
			t.Fatalf("scenario %d: %v", i, err)
		}
		projected++
		if got := sumPPM(t, p); got != WeightPPM {
			t.Fatalf("scenario %d: weights sum to %d", i, got)
		}
		for j := 0; j < 3; j++ {
			q, err := Project(shuffled(rng, in))
			if err != nil {
				t.Fatalf("scenario %d shuffled: %v", i, err)
			}
			if !reflect.DeepEqual(p, q) {
				t.Fatalf("scenario %d: reordering the input changed the projection:\n%+v\n%+v", i, p.Weights, q.Weights)
			}
		}
		for _, w := range p.Weights {
			if !contains(in.Metagraph, w.Hotkey) {
				t.Fatalf("scenario %d: %q is paid but not in the metagraph", i, w.Hotkey)
			}
		}
	}
	if projected < 400 {
		t.Fatalf("only %d of 500 scenarios projected: the generator is too narrow", projected)
	}
}

// With an arena list, any one claim re-crowned in the list, or missing
// from the claims, holds the whole vector.
func TestOneStaleOrMissingClaimHoldsTheVector(t *testing.T) {
	rng := rand.New(rand.NewSource(99))
	checked := 0
	for i := 0; i < 300; i++ {
		in := scenario(rng)
		if in.Arenas == nil {
			continue
		}
		if _, err := Project(in); err != nil {
			continue
		}
		checked++
		stale := shuffled(rng, in)
		a := &stale.Arenas.List[rng.Intn(len(stale.Arenas.List))]
		a.Targets[rng.Intn(len(a.Targets))].Contribution = dg(fmt.Sprint("recrowned ", i))
		if _, err := Project(stale); !errorsIs(err, ErrStaleClaim) {
			t.Fatalf("scenario %d: a re-crowned target: %v", i, err)
		}
		missing := shuffled(rng, in)
		missing.Standing = missing.Standing[1:]
		if _, err := Project(missing); !errorsIs(err, ErrMissingClaim) {
			t.Fatalf("scenario %d: a target without its claim: %v", i, err)
		}
	}
	if checked < 50 {
		t.Fatalf("only %d scenarios had an arena list", checked)
	}
}

// allocate is the largest-remainder method: every share is the floor of
// its exact share or one more, the extra parts go to the largest
// remainders, and equal remainders are broken by hotkey, ascending.
func TestAllocateIsLargestRemainder(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	for i := 0; i < 5000; i++ {
		credits := map[string]*big.Int{}
		for n := 1 + rng.Intn(20); n > 0; n-- {
			// Small values, so equal remainders are frequent.
			credits[fmt.Sprintf("h%03d", rng.Intn(1000))] = big.NewInt(int64(rng.Intn(6)))
		}
		credits["anchor"] = big.NewInt(int64(1 + rng.Intn(6)))
		pool := uint64(1 + rng.Intn(WeightPPM))
		if rng.Intn(2) == 0 {
			pool = WeightPPM
		}
		got := allocate(credits, pool)
		total := new(big.Int)
		for _, c := range credits {
			total.Add(total, c)
		}
		type row struct {
			hotkey string
			rem    *big.Int
			extra  bool
		}
		var rows []row
		var sum uint64
		for h, c := range credits {
			v, ok := got[h]
			if c.Sign() == 0 {
				if ok {
					t.Fatalf("case %d: zero-credit %s got a share", i, h)
				}
				continue
			}
			q, r := new(big.Int).QuoRem(new(big.Int).Mul(c, new(big.Int).SetUint64(pool)), total, new(big.Int))
			switch v {
			case q.Uint64():
				rows = append(rows, row{h, r, false})
			case q.Uint64() + 1:
				rows = append(rows, row{h, r, true})
			default:
				t.Fatalf("case %d: %s got %d, floor %d", i, h, v, q)
			}
			sum += v
		}
		if sum != pool {
			t.Fatalf("case %d: shares sum to %d, want %d", i, sum, pool)
		}
		sort.Slice(rows, func(a, b int) bool {
			if c := rows[a].rem.Cmp(rows[b].rem); c != 0 {
				return c > 0
			}
			return rows[a].hotkey < rows[b].hotkey
		})
		// In (remainder desc, hotkey asc) order, the extras are a prefix.
		seenPlain := false
		for _, r := range rows {
			if r.extra && seenPlain {
				t.Fatalf("case %d: %s got an extra part after a larger-or-tied, smaller hotkey did not: %+v", i, r.hotkey, rows)
			}
			seenPlain = seenPlain || !r.extra
		}
	}
}

// A tie broken by hotkey does not depend on the order hotkeys entered the
// map or the input.
func TestTiesAreDeterministic(t *testing.T) {
	in := Input{Policy: testPolicy, Block: 1100, Validator: "v", Metagraph: []string{"v", "a", "b", "c", "d", "e", "f", "g"}}
	for i, h := range []string{"g", "f", "e", "d", "c", "b", "a"} {
		in.Standing = append(in.Standing, crown(fmt.Sprint("t", i), h, 1_100_000, 1100))
	}
	rng := rand.New(rand.NewSource(1))
	first, err := Project(in)
	if err != nil {
		t.Fatal(err)
	}
	// 10⁶/7 = 142857 r 1 each: the one part left goes to "a".
	want := map[string]uint64{"a": 142_858, "b": 142_857, "c": 142_857, "d": 142_857, "e": 142_857, "f": 142_857, "g": 142_857}
	if got := vector(first); !reflect.DeepEqual(got, want) {
		t.Fatalf("weights %v, want %v", got, want)
	}
	for i := 0; i < 50; i++ {
		p, err := Project(shuffled(rng, in))
		if err != nil || !reflect.DeepEqual(vector(p), want) {
			t.Fatalf("shuffle %d: %v, %v", i, vector(p), err)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
