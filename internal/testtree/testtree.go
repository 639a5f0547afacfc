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
	"bytes"
	"encoding/json"
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

// DeclareTokenBound makes every metadata document of the bundle (copy) at
// dir, metadata/*.json, declare max_num_tokens n, keeping its other
// fields: verify then runs the catalog cases of at most n tokens, each with
// the index and seed it has unbounded, and finds the others outside the
// declared domain. Tests use it to leave out catalog shapes far bigger
// than what they check needs. It fails the test when the bundle has no
// metadata document.
func DeclareTokenBound(t testing.TB, dir string, n int) {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(dir, "metadata", "*.json"))
	if err != nil || len(docs) == 0 {
		t.Fatalf("no metadata document in %s to declare a token bound in (%v)", dir, err)
	}
	for _, p := range docs {
		if err := declareTokenBound(p, n); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
	}
}

func declareTokenBound(path string, n int) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		return err
	}
	doc["max_num_tokens"] = n
	if data, err = json.MarshalIndent(doc, "", "  "); err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}
