package releasetest

import (
	"path/filepath"
	"testing"

	"github.com/cacheon/engine/internal/testtree"
)

// SourceTree is a fresh copy, made by testtree.Copy, of the file or tree at rel
// (slash-separated) in the project's source tree.
func SourceTree(t testing.TB, rel string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(filepath.FromSlash(rel)))
	testtree.Copy(t, filepath.Join(RepoRoot(t), filepath.FromSlash(rel)), dst)
	return dst
}
