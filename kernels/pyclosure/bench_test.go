package pyclosure

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeDeepBundle writes a chain of depth nested packages a/a/.../a, each
// with an __init__.py, and an op source k.py of about size bytes that
// imports the innermost package over and over.
func writeDeepBundle(b *testing.B, depth, size int) string {
	dir := b.TempDir()
	pkg := dir
	for i := 0; i < depth; i++ {
		pkg = filepath.Join(pkg, "a")
		if err := os.MkdirAll(pkg, 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(pkg, "__init__.py"), nil, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	stmt := "import " + strings.TrimSuffix(strings.Repeat("a.", depth), ".") + "\n"
	src := strings.Repeat(stmt, max(1, size/len(stmt)))
	if err := os.WriteFile(filepath.Join(dir, "k.py"), []byte(src), 0o644); err != nil {
		b.Fatal(err)
	}
	return dir
}

// BenchmarkClosureDeepImports resolves an op source whose every statement
// imports a package depth levels down, through DirFS:
//
//	go test ./kernels/pyclosure -run '^$' -bench ClosureDeepImports -benchtime 3x -count 3
//
// The source size is fixed, so with depth four times larger there are a
// quarter as many statements and, if resolution were linear in the
// source, about the same time per operation. Resolving one statement
// checks every package on the way down, and DirFS checks every directory
// above each path it is asked about, so the time instead grows with the
// depth.
func BenchmarkClosureDeepImports(b *testing.B) {
	const size = 64 << 10
	for _, depth := range []int{4, 16, 64} {
		dir := writeDeepBundle(b, depth, size)
		b.Run(fmt.Sprintf("depth%d_%dKiB", depth, size>>10), func(b *testing.B) {
			b.SetBytes(size)
			for i := 0; i < b.N; i++ {
				c, err := FromDir(dir, []string{"k.py"}, Options{})
				if err != nil {
					b.Fatal(err)
				}
				if len(c.Files) != depth+1 {
					b.Fatalf("closure has %d files, want %d", len(c.Files), depth+1)
				}
			}
		})
	}
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

// kernelCode repeats a function of the kind a kernel bundle holds:
// imports, calls, attributes, subscripts, operators, a comprehension.
func kernelCode(size int) []byte {
	b := []byte("import torch\nfrom .util import helper\n")
	for i := 0; len(b) < size; i++ {
		b = fmt.Appendf(b, `

def kernel_%d(x, y, *, scale=1.0):
    """Scale x, add y, reduce."""
    out = torch.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = helper(x[i] * scale + y[i], dim=-1) if i %% 2 else x[i]
    return out.sum(dim=0), {"n": len(out), 'k': [a for a in y if a > 0]}
`, i)
	}
	return b
}

// BenchmarkAnalyze computes the facts of an 8 MiB module (one parse and
// the ban's walk), of the shape bench/materialize.sh writes and of
// ordinary code:
//
//	go test ./kernels/pyclosure -run '^$' -bench Analyze -benchmem -count 5
func BenchmarkAnalyze(b *testing.B) {
	for _, c := range []struct {
		name string
		src  []byte
	}{{"generated-table", generatedTable(8 << 20)}, {"kernel-code", kernelCode(8 << 20)}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.src)))
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				facts, err := Analyze(c.src)
				if err != nil || len(facts.Refusals) > 0 {
					b.Fatalf("Analyze: %v %v", err, facts.Refusals)
				}
			}
		})
	}
}
