package cli

import (
	"path/filepath"
	"testing"

	"github.com/cacheon/engine/internal/testtree"
)

// repoCopy is a fresh copy, made by testtree.Copy, of the repository's tree at
// rel (read from this package's directory).
func repoCopy(t testing.TB, rel string) string {
	t.Helper()
	src := repoDir(rel)
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	testtree.Copy(t, src, dst)
	return dst
}
