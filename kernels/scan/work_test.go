package scan

import (
	"testing"

	"github.com/cacheon/engine/internal/alloctest"
)

// TestSourceAllocationIsLinear scans every hostile shape at two sizes a
// factor of four apart and checks that the bytes allocated grow about
// fourfold too, as pyparse's TestParseAllocationIsLinear does for the
// parser. A rule that copies a long name once per finding or per link
// (a module path into each from-import alias and message, a chain root
// lowered at each link) allocates with the square of the size and shows
// up here as a factor near 16. Rules that only rescan without allocating
// are held by BenchmarkSourcePathological instead.
func TestSourceAllocationIsLinear(t *testing.T) {
	const small, large = 64 << 10, 256 << 10
	const maxGrowth = 8.0
	for _, sh := range scanShapes {
		t.Run(sh.name, func(t *testing.T) {
			var sizes [2]int
			var allocs [2]uint64
			for i, size := range []int{small, large} {
				src := []byte(sh.gen(size))
				sizes[i] = len(src)
				allocs[i] = alloctest.Bytes(func() {
					for _, f := range Source("k.py", src) {
						if f.Rule == RuleSyntax {
							t.Fatalf("%s does not parse: %s", sh.name, f.Message)
						}
					}
				})
			}
			perByte := [2]float64{float64(allocs[0]) / float64(sizes[0]), float64(allocs[1]) / float64(sizes[1])}
			if growth := perByte[1] / perByte[0]; growth*4 > maxGrowth {
				t.Errorf("allocation grew %.1fx for %.1fx the source: %d bytes for %d, %d bytes for %d",
					growth*float64(sizes[1])/float64(sizes[0]), float64(sizes[1])/float64(sizes[0]),
					allocs[0], sizes[0], allocs[1], sizes[1])
			}
		})
	}
}
