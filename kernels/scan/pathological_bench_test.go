package scan

import (
	"fmt"
	"strings"
	"testing"
)

// scanShapes are hostile sources that parse in linear time but stress the
// rules applied to the tree: attribute chains whose every link triggers a
// rule that looks at the rest of the chain, and files of nothing but
// findings.
var scanShapes = []struct {
	name string
	gen  func(size int) string
}{
	// Every `.load` link asks whether the chain below it starts at a
	// pickle-like module.
	{"load-chain", func(n int) string { return repeatTo("x = a", ".load", "\n", n) }},
	// Every `.modules` link asks whether the chain below it is `sys`.
	{"modules-chain", func(n int) string { return repeatTo("x = a", ".modules", "\n", n) }},
	{"attribute-chain", func(n int) string { return repeatTo("x = a", ".b", "\n", n) }},
	// One from-import of a million names from a module path half the
	// file long: per-name work must not copy the path.
	{"from-import-many-names", func(n int) string {
		return "from " + strings.Repeat("m", n/2) + " import " + repeatTo("", "system, ", "load\n", n/2)
	}},
	// A .load chain whose root name is half the file: per-link work must
	// not lower or hash the root again.
	{"long-root-load-chain", func(n int) string {
		return repeatTo("x = TORCH"+strings.Repeat("A", n/2), ".load", "\n", n)
	}},
	// Every line binds a module to a name again, then uses it.
	{"module-assignments", func(n int) string { return repeatTo("import os, torch\n", "o = os\no = torch\no.open\n", "", n) }},
	// Half the file imports distinct modules under one name, the other
	// half uses the name where rules ask what it is bound to.
	{"aliases-then-uses", func(n int) string {
		var b strings.Builder
		for i := 0; b.Len() < n/2; i++ {
			fmt.Fprintf(&b, "import numpy.m%d as x\n", i)
		}
		return repeatTo(b.String(), "x.load\nx.modules\nx.open\n", "", n)
	}},
	{"finding-per-line", func(n int) string { return repeatTo("", "eval\n", "", n) }},
	{"findings-on-one-line", func(n int) string { return repeatTo("", "eval;", "eval\n", n) }},
	{"findings-after-wide-characters", func(n int) string { return repeatTo("x = '"+strings.Repeat("é", 4096)+"'\n", "eval\n", "", n) }},
}

func repeatTo(head, unit, tail string, size int) string {
	var b strings.Builder
	b.WriteString(head)
	for b.Len() < size-len(tail) {
		b.WriteString(unit)
	}
	b.WriteString(tail)
	return b.String()
}

// BenchmarkSourcePathological scans each hostile shape at sizes a factor of
// four apart. Linear rules show ns/op growing about fourfold per step:
//
//	go test ./kernels/scan -run '^$' -bench SourcePathological -benchtime 3x -count 3
//
// The sizes are smaller than the parser's pathological benchmarks because
// a rule that walks a chain for every link takes minutes per megabyte.
func BenchmarkSourcePathological(b *testing.B) {
	for _, sh := range scanShapes {
		b.Run(sh.name, func(b *testing.B) {
			for _, size := range []int{16 << 10, 64 << 10, 256 << 10} {
				b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
					src := []byte(sh.gen(size))
					b.SetBytes(int64(len(src)))
					b.ReportAllocs()
					for i := 0; i < b.N; i++ {
						for _, f := range Source("k.py", src) {
							if f.Rule == RuleSyntax {
								b.Fatalf("%s does not parse: %s", sh.name, f.Message)
							}
						}
					}
				})
			}
		})
	}
}
