package weights

import (
	"fmt"
	"math/big"
	"testing"
)

// benchInput is a large projection: 10,000 standing claims (100 arenas of
// 100 targets), held by 2,000 hotkeys of which one in ten has left the
// metagraph, and 100 discovery claims, half of them live.
func benchInput() Input {
	in := Input{Policy: Policy{HalfLifeBlocks: 7200, DiscoveryLifetimeBlocks: 3600, DiscoveryPoolPPM: 100_000}, Block: 1_000_000, Validator: "validator"}
	in.Metagraph = []string{"validator"}
	for h := 0; h < 2000; h++ {
		if h%10 != 9 {
			in.Metagraph = append(in.Metagraph, fmt.Sprintf("hotkey%04d", h))
		}
	}
	n := 0
	for a := 0; a < 100; a++ {
		for t := 0; t < 100; t++ {
			in.Standing = append(in.Standing, crownIn(fmt.Sprint(a), fmt.Sprintf("target%03d", t), fmt.Sprintf("hotkey%04d", n%2000), 1_000_001+uint64(n*7919%500_000), in.Block-uint64(n*104729%900_000)))
			n++
		}
	}
	for d := 0; d < 100; d++ {
		in.Discovery = append(in.Discovery, bounty(fmt.Sprint(d), fmt.Sprintf("hotkey%04d", d*13%2000), uint64(1+d), in.Block-uint64(d*72)))
	}
	return in
}

func BenchmarkProject10000Claims(b *testing.B) {
	in := benchInput()
	if p, err := Project(in); err != nil || len(p.Standing) != 10_000 {
		b.Fatalf("%d standing credits, %v", len(p.Standing), err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Project(in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAllocate is the largest-remainder normalization alone, over
// the 2,000 hotkeys of benchInput's credits.
func BenchmarkAllocate(b *testing.B) {
	p, err := Project(benchInput())
	if err != nil {
		b.Fatal(err)
	}
	credits := map[string]*big.Int{}
	for _, c := range p.Standing {
		addTo(credits, c.Recipient, c.Credit)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		allocate(credits, WeightPPM)
	}
}
