// Package testtree copies source trees for tests that read bundles, stacks
// and packages of this repository.
//
// The readers under test refuse symbolic links by design. Under Bazel a
// test's data files are symbolic links into the source tree, so tests read
// a copy in which Bazel's links are regular files again. Outside Bazel a
// link is copied as a link, so one really committed to the repository is
// still refused.
package testtree

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// UnderBazel reports whether the test runs under `bazel test`.
func UnderBazel() bool { return os.Getenv("TEST_SRCDIR") != "" }

// Copy copies the tree at src to dst as directories and regular files,
// leaving out Python bytecode caches; it fails the test on any error.
func Copy(t testing.TB, src, dst string) {
	t.Helper()
	if err := copyTree(src, dst, UnderBazel()); err != nil {
		t.Fatalf("copy %s: %v", src, err)
	}
}

func copyTree(src, dst string, dereference bool) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
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
		case d.Type()&fs.ModeSymlink != 0 && !dereference:
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
}

// Workspace is a fresh directory holding copies, made by Copy, of the
// repository's files or trees at rels (paths from the repository root,
// which is root relative to the test's package directory, "../.." for a
// package two levels down), at the same paths, plus an empty WORKSPACE
// marker so that stack files in it resolve labels against it.
func Workspace(t testing.TB, root string, rels ...string) string {
	t.Helper()
	ws := t.TempDir()
	for _, rel := range rels {
		dst := filepath.Join(ws, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		Copy(t, filepath.Join(root, filepath.FromSlash(rel)), dst)
	}
	if err := os.WriteFile(filepath.Join(ws, "WORKSPACE"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return ws
}
