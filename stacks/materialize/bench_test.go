package materialize

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// benchSlots are the eleven singleton targets, one contribution each.
var benchSlots = []string{
	"activation.silu_and_mul", "norm.rmsnorm", "attention.sdpa", "attention.decode",
	"attention.msa_block_score", "attention.msa_prefill_block_score", "moe.fused_experts",
	"moe.fused_experts_reduce", "collective.all_reduce", "collective.ar_residual_rmsnorm",
	"collective.moe_finalize_ar_rmsnorm",
}

// syntheticBundle writes a bundle at slot whose op source imports one
// generated module of about tableBytes bytes.
func syntheticBundle(tb testing.TB, dir, slot string, tableBytes int) {
	tb.Helper()
	must := func(err error) {
		if err != nil {
			tb.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "kernels"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "manifest.toml"), []byte(fmt.Sprintf(
		"bundle_id = \"bench\"\nabi_version = \"cacheon-op-abi-v0\"\n\n[[ops]]\nslot = %q\nsource = \"kernels/op.py\"\nentry = \"run\"\n", slot)), 0o644))
	must(os.WriteFile(filepath.Join(dir, "kernels", "__init__.py"), nil, 0o644))
	must(os.WriteFile(filepath.Join(dir, "kernels", "op.py"), []byte("from kernels.table import T0\n\n\ndef run(*args):\n    return T0\n"), 0o644))
	var b strings.Builder
	for i := 0; b.Len() < tableBytes; i++ {
		sum := sha256.Sum256([]byte(fmt.Sprintf("%s/%d", slot, i)))
		fmt.Fprintf(&b, "T%d = %q\n", i, hex.EncodeToString(sum[:]))
	}
	must(os.WriteFile(filepath.Join(dir, "kernels", "table.py"), []byte(b.String()), 0o644))
}

// BenchmarkMaterialize materializes a stack of eleven contributions of
// about 1 MiB of Python each (bench/materialize.sh runs the same shape at
// 260 MiB through the command line).
func BenchmarkMaterialize(b *testing.B) {
	opts := testOptions(b)
	root := b.TempDir()
	var dirs []string
	for i, slot := range benchSlots {
		dir := filepath.Join(root, fmt.Sprintf("bundle_%02d", i))
		syntheticBundle(b, dir, slot, 1<<20)
		dirs = append(dirs, dir)
	}
	st := evaluationStack(b, opts, dirs...)
	var total int64
	for _, d := range dirs {
		filepath.Walk(d, func(_ string, info os.FileInfo, err error) error {
			if err == nil && info.Mode().IsRegular() {
				total += info.Size()
			}
			return nil
		})
	}
	// "from-source" reads and inspects every bundle again; "reuse" takes
	// the snapshots and closures the stack was built from, as
	// `cacheon stack materialize` does after assembly.
	reuse := opts
	reuse.Inspections = st.inspections
	for _, bc := range []struct {
		name string
		opts Options
	}{{"from-source", opts}, {"reuse", reuse}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(total)
			for i := 0; i < b.N; i++ {
				dest := filepath.Join(b.TempDir(), "out")
				if _, err := Materialize(st.manifest, st.resolve, dest, bc.opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
