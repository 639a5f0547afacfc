package contribution

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/cacheon/engine/catalog"
)

// repoPath is a path inside the repository from this package's directory.
func repoPath(rel string) string { return filepath.Join("..", "..", filepath.FromSlash(rel)) }

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
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
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
