package contribution

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cacheon/engine/kernels/bundle"
)

// BenchmarkLoadAndSelectedPayload measures what intake does for every
// bundle before anything runs: the tree walk with the intake limits,
// manifest and metadata parsing, and the selected payload (hashing every
// selected file).
func BenchmarkLoadAndSelectedPayload(b *testing.B) {
	cases := []struct {
		name string
		dir  func(b *testing.B) string
	}{
		{"silu_and_mul_torch", func(b *testing.B) string { return repoPath(b, "kernels/contributions/silu_and_mul_torch") }},
		{"moe_epilogue_atomic_torch", func(b *testing.B) string { return repoPath(b, "kernels/contributions/moe_epilogue_atomic_torch") }},
		{"64_ops_4MiB", largeBundle},
	}
	opts := PayloadOptions{Closure: PythonClosure, CUDACheck: CUDAIncludeCheck}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			dir := c.dir(b)
			b2, err := bundle.LoadBundle(dir)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(b2.Tree.TotalBytes)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b2, err := bundle.LoadBundle(dir)
				if err != nil {
					b.Fatal(err)
				}
				p, err := ComputeSelectedPayload(b2, opts)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := p.Digest(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// largeBundle is a bundle near the realistic upper end: 64 variant rows,
// each with its own 64 KiB source and metadata file.
func largeBundle(b *testing.B) string {
	dir := b.TempDir()
	var m strings.Builder
	m.WriteString("bundle_id = \"large\"\nabi_version = \"cacheon-op-abi-v0\"\n")
	body := strings.Repeat("# padding line of a large generated kernel module.............\n", 1024)
	for i := 0; i < 64; i++ {
		fmt.Fprintf(&m, "\n[[ops]]\nslot = \"activation.silu_and_mul\"\nvariant = \"v%02d\"\nsource = \"kernels/k%02d.py\"\nentry = \"silu_and_mul\"\nmetadata = \"metadata/k%02d.json\"\n", i, i, i)
		writeFile(b, dir, fmt.Sprintf("kernels/k%02d.py", i), "def silu_and_mul(x, out):\n    pass\n"+body)
		writeFile(b, dir, fmt.Sprintf("metadata/k%02d.json", i), fmt.Sprintf(`{"dtypes": ["bfloat16"], "min_num_tokens": %d, "max_num_tokens": %d}`, i*64, i*64+63))
	}
	writeFile(b, dir, "manifest.toml", m.String())
	return dir
}
