package fingerprint

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/cacheon/engine/internal/testtree"
)

// reorderTopLevel reverses the order of the top-level blocks after the
// module's docstring and imports (blocks are separated by two blank
// lines, as the contributions are written).
func reorderTopLevel(t testing.TB, src string) string {
	t.Helper()
	blocks := strings.Split(strings.TrimRight(src, "\n"), "\n\n\n")
	if len(blocks) < 4 {
		t.Fatalf("only %d top-level blocks to reorder", len(blocks))
	}
	head, rest := blocks[:2], blocks[2:]
	for i, j := 0, len(rest)-1; i < j; i, j = i+1, j-1 {
		rest[i], rest[j] = rest[j], rest[i]
	}
	return strings.Join(append(head, rest...), "\n\n\n") + "\n"
}

// Copies built from the repository's contributions are found, each by
// the first rule that should catch it.
func TestCopiesAreCaught(t *testing.T) {
	cases := []struct {
		name     string
		original func(t *testing.T) string // the earlier bundle
		copy     func(t *testing.T, dir string)
		want     string
	}{
		{
			name:     "exact copy with its own README and bundle id",
			original: func(t *testing.T) string { return bundleCopy(t, "contributions/silu_and_mul_triton") },
			copy: func(t *testing.T, dir string) {
				writeFile(t, dir, "README.md", "My very own SiLU kernel.\n")
				edit(t, dir, "manifest.toml", `bundle_id = "silu-and-mul-triton"`, `bundle_id = "totally-original"`)
			},
			want: RulePayload,
		},
		{
			name:     "comments and docstrings changed",
			original: func(t *testing.T) string { return bundleCopy(t, "contributions/rmsnorm_triton") },
			copy: func(t *testing.T, dir string) {
				edit(t, dir, "kernels/rmsnorm.py",
					"One program per row", "Row-parallel RMSNorm, written from scratch. One program per row",
					"    row = tl.program_id(0)", "    # which row this program owns\n    row = tl.program_id(0)",
					"def rmsnorm(x: torch.Tensor, weight: torch.Tensor, out: torch.Tensor, eps: float) -> None:\n",
					"def rmsnorm(x: torch.Tensor, weight: torch.Tensor, out: torch.Tensor, eps: float) -> None:\n    '''Launch one program per row.'''\n",
					"    rows = x2.shape[0]\n", "    rows = x2.shape[0]  # rows to normalize\n    \"a string used as a comment\"\n")
			},
			want: RuleNormalizedDelta,
		},
		{
			name:     "reformatted: tabs, blank lines, line breaks inside brackets",
			original: func(t *testing.T) string { return bundleCopy(t, "contributions/silu_and_mul_triton") },
			copy: func(t *testing.T, dir string) {
				edit(t, dir, "kernels/silu_and_mul.py",
					"    x_ptr, out_ptr, d,\n    x_row_stride, x_col_stride, out_row_stride, out_col_stride,\n    BLOCK: tl.constexpr,\n):",
					"x_ptr, out_ptr, d, x_row_stride, x_col_stride, out_row_stride, out_col_stride, BLOCK: tl.constexpr):",
					"    mask = cols < d\n", "    mask = cols < d\n\n\n",
					"grid = (rows, triton.cdiv(d, _BLOCK))", "grid = (\n        rows,\n        triton.cdiv(\n            d, _BLOCK\n        ),\n    )",
					"(-gate)", "(- gate)")
				writeFile(t, dir, "kernels/silu_and_mul.py", reindent(readFile(t, dir, "kernels/silu_and_mul.py")))
			},
			want: RuleNormalizedDelta,
		},
		{
			name:     "reformatted: quotes, semicolons, trailing commas, inline bodies",
			original: func(t *testing.T) string { return bundleCopy(t, "contributions/rmsnorm_triton") },
			copy: func(t *testing.T, dir string) {
				edit(t, dir, "kernels/rmsnorm.py",
					`raise ValueError("rows must be contiguous")`, `raise ValueError('rows must ' 'be contiguous')`,
					"    if rows == 0:\n        return\n", "    if rows == 0: return\n",
					"    x2 = x.reshape(-1, hidden)\n    out2 = out.view(-1, hidden)\n", "    x2 = x.reshape(-1, hidden,); out2 = out.view(-1, hidden)\n",
					"16384", "16_384")
			},
			want: RuleNormalizedDelta,
		},
		{
			name:     "file and variant renamed",
			original: func(t *testing.T) string { return bundleCopy(t, "contributions/silu_and_mul_torch") },
			copy: func(t *testing.T, dir string) {
				writeFile(t, dir, "kernels/act.py", readFile(t, dir, "kernels/silu_and_mul.py"))
				writeFile(t, dir, "kernels/silu_and_mul.py", "")
				edit(t, dir, "manifest.toml", `source = "kernels/silu_and_mul.py"`, "source = \"kernels/act.py\"\nvariant = \"mine\"")
			},
			want: RuleNormalizedDelta,
		},
		{
			name: "helper module renamed, its import made relative",
			original: func(t *testing.T) string {
				dir := bundleCopy(t, "contributions/silu_and_mul_torch")
				writeFile(t, dir, "kernels/__init__.py", "")
				writeFile(t, dir, "kernels/act.py", "import torch.nn.functional as F\n\n\ndef gated(gate, up, dtype):\n    return F.silu(gate.float()).to(dtype) * up\n")
				edit(t, dir, "kernels/silu_and_mul.py",
					"import torch.nn.functional as F\n", "from kernels.act import gated\n",
					"out.copy_(F.silu(gate.float()).to(x.dtype) * up)", "out.copy_(gated(gate, up, x.dtype))")
				return dir
			},
			copy: func(t *testing.T, dir string) {
				writeFile(t, dir, "kernels/my_gate.py", readFile(t, dir, "kernels/act.py"))
				writeFile(t, dir, "kernels/act.py", "")
				edit(t, dir, "kernels/silu_and_mul.py", "from kernels.act import gated", "from .my_gate import gated")
			},
			want: RuleNormalizedDelta,
		},
		{
			name:     "functions reordered",
			original: func(t *testing.T) string { return bundleCopy(t, "contributions/moe_epilogue_atomic_torch") },
			copy: func(t *testing.T, dir string) {
				writeFile(t, dir, "kernels/epilogue.py", reorderTopLevel(t, readFile(t, dir, "kernels/epilogue.py")))
			},
			want: RuleContainment,
		},
		{
			name:     "kernel and launcher reordered",
			original: func(t *testing.T) string { return bundleCopy(t, "contributions/silu_and_mul_triton") },
			copy: func(t *testing.T, dir string) {
				writeFile(t, dir, "kernels/silu_and_mul.py", reorderTopLevel(t, readFile(t, dir, "kernels/silu_and_mul.py")))
			},
			want: RuleContainment,
		},
		{
			name:     "CUDA comments and layout changed",
			original: func(t *testing.T) string { return cudaBundle(t) },
			copy: func(t *testing.T, dir string) {
				edit(t, dir, "csrc/silu_and_mul.cu",
					"// Declared CUDA source; the bundle forgets the rebuild step that builds it.",
					"/* Fused SiLU-and-mul.\n * Original work. // not a line comment\n */",
					"{\n  int row", "\n{\n\t/* one block per row */\n\tint row",
					"#include <cuda_runtime.h>", "#  include   <cuda_runtime.h>  // runtime API")
			},
			want: RuleNormalizedDelta,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			orig := tc.original(t)
			dup := filepath.Join(t.TempDir(), "copy")
			testtree.Copy(t, orig, dup)
			tc.copy(t, dup)
			earlier, later := fingerprintDir(t, orig), fingerprintDir(t, dup)
			v := Compare(earlier, later)
			if !v.Copy || v.Rule != tc.want {
				t.Fatalf("Compare: copy %v by %q (%s), want %s", v.Copy, v.Rule, v.Reason, tc.want)
			}
			if !strings.HasPrefix(v.Reason, tc.want+": ") {
				t.Errorf("reason %q does not name the rule", v.Reason)
			}
			if tc.want != RulePayload && earlier.SelectedPayloadDigest == later.SelectedPayloadDigest {
				t.Errorf("the copy left the selected payload unchanged: the case tests nothing beyond %s", RulePayload)
			}
			if tc.want == RuleContainment && earlier.NormalizedDeltaDigest == later.NormalizedDeltaDigest {
				t.Errorf("the copy left the normalized delta unchanged: the case tests nothing beyond %s", RuleNormalizedDelta)
			}
			if back := Compare(later, earlier); back.Copy != v.Copy || back.Rule != v.Rule {
				t.Errorf("the rules are not symmetric: reversed %v %q", back.Copy, back.Rule)
			}
			t.Logf("%s", v.Reason)
		})
	}
}
