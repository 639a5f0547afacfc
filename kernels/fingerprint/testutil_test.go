package fingerprint

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cacheon/engine/catalog"
	"github.com/cacheon/engine/internal/testtree"
	"github.com/cacheon/engine/kernels/contribution"
)

// contributions are the repository's distinct example contributions.
var contributions = []string{
	"decode_attention_torch",
	"moe_epilogue_atomic_torch",
	"rmsnorm_torch",
	"rmsnorm_triton",
	"silu_and_mul_torch",
	"silu_and_mul_triton",
}

// bundleCopy copies a bundle of the repository (relative to kernels/)
// into a fresh temporary directory.
func bundleCopy(t testing.TB, rel string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(rel))
	testtree.Copy(t, filepath.Join("..", filepath.FromSlash(rel)), dst)
	return dst
}

// cudaBundle is the CUDA fixture made inspectable: the fixture omits
// the rebuild step its CUDA source needs.
func cudaBundle(t testing.TB) string {
	t.Helper()
	dir := bundleCopy(t, "fixtures/cuda_without_rebuild")
	writeFile(t, dir, "rebuild.json", `{"steps": [{"type": "repo_python", "path": "build_cuda_ext.py"}]}`)
	return dir
}

func inspect(t testing.TB, dir string) *contribution.Inspection {
	t.Helper()
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	in, err := contribution.Inspect(dir, contribution.Options{Catalog: cat, Payload: contribution.PayloadOptions{
		Closure: contribution.PythonClosure, CUDACheck: contribution.CUDAIncludeCheck,
		PatcherDigests: map[string]string{"build_cuda_ext.py": strings.Repeat("7", 64)},
	}})
	if err != nil {
		t.Fatalf("inspect %s: %v", dir, err)
	}
	return in
}

func fingerprintDir(t testing.TB, dir string) *Fingerprint {
	t.Helper()
	fp, err := Of(inspect(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	return fp
}

func readFile(t testing.TB, dir, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func writeFile(t testing.TB, dir, rel, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// edit rewrites one file of dir with a sequence of replacements, each of
// which must apply, so an edit that no longer matches the source fails
// the test instead of testing nothing.
func edit(t testing.TB, dir, rel string, pairs ...string) {
	t.Helper()
	s := readFile(t, dir, rel)
	for i := 0; i+1 < len(pairs); i += 2 {
		if !strings.Contains(s, pairs[i]) {
			t.Fatalf("%s: %q not found", rel, pairs[i])
		}
		s = strings.ReplaceAll(s, pairs[i], pairs[i+1])
	}
	writeFile(t, dir, rel, s)
}

// reindent replaces each four leading spaces with one tab.
func reindent(src string) string {
	lines := strings.Split(src, "\n")
	for i, l := range lines {
		n := len(l) - len(strings.TrimLeft(l, " "))
		lines[i] = strings.Repeat("\t", n/4) + strings.Repeat(" ", n%4) + l[n:]
	}
	return strings.Join(lines, "\n")
}
