package scan

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// kernelUnit is a realistic slice of contribution code: a Triton kernel
// with constexpr parameters, a launcher and a torch fallback.
const kernelUnit = `
@triton.jit
def _silu_mul_kernel_%[1]d(x_ptr, out_ptr, n_rows, d: tl.constexpr, BLOCK: tl.constexpr = 1024):
    """Fused SiLU(gate) * up for one row block (%[1]d)."""
    row = tl.program_id(axis=0)
    offs = tl.arange(0, BLOCK)
    mask = offs < d
    gate = tl.load(x_ptr + row * 2 * d + offs, mask=mask, other=0.0).to(tl.float32)
    up = tl.load(x_ptr + row * 2 * d + d + offs, mask=mask, other=0.0)
    y = gate * tl.sigmoid(gate)
    tl.store(out_ptr + row * d + offs, (y * up.to(tl.float32)).to(up.dtype), mask=mask)


def silu_and_mul_%[1]d(x: torch.Tensor, out: torch.Tensor) -> None:
    n_rows, two_d = x.shape
    d = two_d // 2
    block = triton.next_power_of_2(d)
    if block > 65536 or not x.is_cuda:
        gate, up = x[..., :d].float(), x[..., d:]
        out.copy_((torch.nn.functional.silu(gate) * up.float()).to(out.dtype))
        return
    _silu_mul_kernel_%[1]d[(n_rows,)](x, out, n_rows, d, BLOCK=block)
    scales = {k: v for k, v in zip(range(4), (1.0, 0.5, 0.25, 0.125)) if k %% 2 == 0}
    label = f"silu[{d}] rows={n_rows:>6} blocks={block!r}"
`

// syntheticSource returns about size bytes of kernel code.
func syntheticSource(size int) []byte {
	var b strings.Builder
	b.WriteString("import torch\nimport triton\nimport triton.language as tl\n")
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, kernelUnit, i)
	}
	return []byte(b.String())
}

var benchSizes = []int{256 << 10, 1 << 20, 4 << 20}

// BenchmarkSource scans one file of each size; ns/op divided by the size
// (the MB/s column) stays flat when scanning is linear.
func BenchmarkSource(b *testing.B) {
	for _, size := range benchSizes {
		src := syntheticSource(size)
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if fs := Source("k.py", src); len(fs) != 0 {
					b.Fatalf("unexpected findings: %v", fs[0])
				}
			}
		})
	}
}

// BenchmarkBundle scans a whole bundle directory of each total size,
// split into 64 KiB modules beside the op source.
func BenchmarkBundle(b *testing.B) {
	for _, size := range benchSizes {
		dir := b.TempDir()
		writeBench(b, dir, "manifest.toml", []byte(testManifest))
		writeBench(b, dir, "csrc/ok.cu", []byte("__global__ void k() {}\n"))
		src := syntheticSource(size)
		const chunk = 64 << 10
		n := 0
		for off := 0; off < len(src); n++ {
			end := min(off+chunk, len(src))
			// cut at a unit boundary so every file parses
			if end < len(src) {
				if k := strings.Index(string(src[end:]), "\n@triton.jit"); k >= 0 {
					end += k + 1
				} else {
					end = len(src)
				}
			}
			name := fmt.Sprintf("kernels/mod_%03d.py", n)
			if n == 0 {
				name = "kernels/k.py"
			}
			writeBench(b, dir, name, append([]byte("import torch\nimport triton\nimport triton.language as tl\n"), src[off:end]...))
			off = end
		}
		b.Run(fmt.Sprintf("%dKiB_%dfiles", size>>10, n), func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			for i := 0; i < b.N; i++ {
				r, err := Bundle(dir)
				if err != nil || !r.Clean {
					b.Fatalf("Bundle: %v clean=%v", err, r != nil && r.Clean)
				}
			}
		})
	}
}

func writeBench(b *testing.B, dir, rel string, data []byte) {
	p := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		b.Fatal(err)
	}
}
