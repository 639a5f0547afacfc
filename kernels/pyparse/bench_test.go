package pyparse

import (
	"fmt"
	"testing"
)

// pathologicalSizes quadruple, so a linear parser shows ns/op growing
// about 4x per step (MB/s flat) and a quadratic one about 16x.
var pathologicalSizes = []int{256 << 10, 1 << 20, 4 << 20}

// BenchmarkPathological parses each hostile shape at three sizes:
//
//	go test ./kernels/pyparse -run '^$' -bench Pathological -benchtime 3x -count 3
//
// Take the minimum of the counts per size: the time at 4 MiB should stay
// within about 5x (4x plus noise) of the time at 1 MiB for every shape.
func BenchmarkPathological(b *testing.B) {
	for _, sh := range pathologicalShapes {
		b.Run(sh.name, func(b *testing.B) {
			for _, size := range pathologicalSizes {
				b.Run(sizeName(size), func(b *testing.B) {
					src := []byte(sh.gen(size))
					b.SetBytes(int64(len(src)))
					b.ReportAllocs()
					for i := 0; i < b.N; i++ {
						if _, _, err := Parse("bench.py", src); err != nil {
							b.Fatalf("%s at %d bytes does not parse: %v", sh.name, len(src), err)
						}
					}
				})
			}
		})
	}
}

func sizeName(size int) string {
	if size >= 1<<20 && size%(1<<20) == 0 {
		return fmt.Sprintf("%dMiB", size>>20)
	}
	return fmt.Sprintf("%dKiB", size>>10)
}

// generatedTable is the shape bench/materialize.sh writes: one assignment
// of a 96-character string literal per line.
func generatedTable(size int) []byte {
	var b []byte
	for i := 0; len(b) < size; i++ {
		h := fmt.Sprintf("%064x", uint64(i)*0x9e3779b97f4a7c15)
		b = fmt.Appendf(b, "T%d = \"%s%s\"\n", i, h, h[:32])
	}
	return b
}

// BenchmarkGeneratedTable parses a generated module of the shape
// bench/materialize.sh writes (the Python the materializer benchmark
// spends its time on):
//
//	go test ./kernels/pyparse -run '^$' -bench GeneratedTable -benchmem
func BenchmarkGeneratedTable(b *testing.B) {
	src := generatedTable(8 << 20)
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, _, err := Parse("table.py", src); err != nil {
			b.Fatal(err)
		}
	}
}
