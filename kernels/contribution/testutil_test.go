package contribution

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/cacheon/engine/internal/testtree"

	"github.com/cacheon/engine/catalog"
)

// repoPath is a copy of the repository's tree at rel (read from this
// package's directory), made by copyTree.
func repoPath(t testing.TB, rel string) string {
	t.Helper()
	return copyBundle(t, filepath.Join("..", "..", filepath.FromSlash(rel)))
}

func defaultCatalog(t testing.TB) *catalog.Catalog {
	t.Helper()
	c, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// testOptions are the validator's own: the real import closure.
func testOptions(t testing.TB) Options {
	return Options{Catalog: defaultCatalog(t), Payload: PayloadOptions{Closure: PythonClosure, CUDACheck: CUDAIncludeCheck}}
}

// copyBundle copies a bundle directory into a fresh temporary directory.
func copyBundle(t testing.TB, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	testtree.Copy(t, src, dst)
	return dst
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
