package cli

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// repoCopy is a fresh copy, made by copyTree, of the repository's tree at
// rel (read from this package's directory).
func repoCopy(t testing.TB, rel string) string {
	t.Helper()
	src := repoDir(rel)
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	copyTree(t, src, dst)
	return dst
}

// copyTree copies the tree at src to dst as directories and regular files,
// leaving out Python bytecode caches. Under Bazel a test's data files are
// symbolic links into the source tree, and the readers under test refuse
// links by design, so tests read a copy in which Bazel's links are regular
// files again. Outside Bazel a link is copied as a link, so one really
// committed to the repository is still refused.
func copyTree(t testing.TB, src, dst string) {
	t.Helper()
	underBazel := os.Getenv("TEST_SRCDIR") != ""
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir() && d.Name() == "__pycache__":
			return filepath.SkipDir
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type()&fs.ModeSymlink != 0 && !underBazel:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		}
		info, err := os.Stat(p)
		if err != nil {
			return err
		}
		if !info.Mode().IsRegular() {
			return fmt.Errorf("%s: not a regular file", p)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, info.Mode().Perm())
	})
	if err != nil {
		t.Fatalf("copy %s: %v", src, err)
	}
}
