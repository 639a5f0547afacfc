package fingerprint

import (
	"testing"
)

// BenchmarkFingerprint fingerprints one inspected contribution (the
// largest example, the atomic MoE epilogue): normalization, winnowing and
// the normalized delta. Inspection itself is kernels/contribution's
// benchmark.
func BenchmarkFingerprint(b *testing.B) {
	in := inspect(b, bundleCopy(b, "contributions/moe_epilogue_atomic_torch"))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Of(in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCompare1000Pairs runs Compare over 1,000 pairs of the
// repository's contributions: what a census of a namespace with about
// 45 proposals costs.
func BenchmarkCompare1000Pairs(b *testing.B) {
	var prints []*Fingerprint
	for _, c := range contributions {
		prints = append(prints, fingerprintDir(b, bundleCopy(b, "contributions/"+c)))
	}
	prints = append(prints, fingerprintDir(b, cudaBundle(b)))
	b.ReportAllocs()
	copies := 0
	for b.Loop() {
		copies = 0
		for i := 0; i < 1000; i++ {
			e, l := prints[i%len(prints)], prints[(i/len(prints))%len(prints)]
			if Compare(e, l).Copy {
				copies++
			}
		}
	}
	// Exactly the pairs of a proposal with itself are copies.
	if want := 1000 / len(prints); copies < want || copies > want+1 {
		b.Fatalf("%d copies among 1,000 pairs, want about %d", copies, want)
	}
}
