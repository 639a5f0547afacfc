package stack

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/cacheon/engine/internal/testtree"
)

// repoCopy is a workspace holding copies, made by testtree.Copy, of the
// repository's files or trees at rels (read from this package's
// directory), at the same paths.
func repoCopy(t testing.TB, rels ...string) string {
	t.Helper()
	ws := t.TempDir()
	for _, rel := range rels {
		dst := filepath.Join(ws, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		testtree.Copy(t, filepath.Join("..", "..", filepath.FromSlash(rel)), dst)
	}
	return ws
}
