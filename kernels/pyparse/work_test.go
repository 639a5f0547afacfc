package pyparse

import (
	"testing"

	"github.com/cacheon/engine/internal/alloctest"
)

// TestParseAllocationIsLinear parses every pathological shape at two
// sizes a factor of four apart and checks that the bytes allocated grow
// about fourfold too. Work that copies a growing prefix (joining a dotted
// name piece by piece, re-copying each nested f-string's text) allocates
// with the square of the size and shows up here as a factor near 16. The
// bound leaves room for slices that double as they grow and so may have
// just doubled at one size and not at the other.
func TestParseAllocationIsLinear(t *testing.T) {
	const small, large = 16 << 10, 64 << 10
	const maxGrowth = 8.0
	for _, sh := range pathologicalShapes {
		t.Run(sh.name, func(t *testing.T) {
			var sizes [2]int
			var allocs [2]uint64
			for i, size := range []int{small, large} {
				src := []byte(sh.gen(size))
				sizes[i] = len(src)
				allocs[i] = alloctest.Bytes(func() {
					if _, _, err := Parse("t.py", src); err != nil {
						t.Fatalf("%s at %d bytes does not parse: %v", sh.name, len(src), err)
					}
				})
			}
			perByte := [2]float64{float64(allocs[0]) / float64(sizes[0]), float64(allocs[1]) / float64(sizes[1])}
			if growth := perByte[1] / perByte[0]; growth*4 > maxGrowth {
				t.Errorf("allocation grew %.1fx for %.1fx the source: %d bytes for %d, %d bytes for %d",
					growth*float64(sizes[1])/float64(sizes[0]), float64(sizes[1])/float64(sizes[0]),
					allocs[0], sizes[0], allocs[1], sizes[1])
			}
			t.Logf("%.0f and %.0f bytes allocated per source byte", perByte[0], perByte[1])
		})
	}
}
