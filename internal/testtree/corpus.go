package testtree

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// PythonCorpus reads the sources the parser's and the closure's
// differential tests start from: every Python file under kernels/ and
// every file of a testdata directory in the tree at root, keyed by their
// slash-separated path below root. Hidden directories and node_modules
// are left out, and so are files over 1 MiB and anything not a regular
// file (under Bazel a data file is a link, so a test run there sees only
// what the runfiles hold as files). It fails the test on a walk error.
func PythonCorpus(t testing.TB, root string) map[string][]byte {
	t.Helper()
	corpus := map[string][]byte{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") && rel != "." || d.Name() == "node_modules" {
				return filepath.SkipDir
			}
			return nil
		}
		inTestdata := strings.Contains("/"+rel, "/testdata/")
		if !d.Type().IsRegular() || !(inTestdata || strings.HasPrefix(rel, "kernels/") && strings.HasSuffix(rel, ".py")) {
			return nil
		}
		info, err := d.Info()
		if err != nil || info.Size() > 1<<20 {
			return err
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		corpus[rel] = src
		return nil
	})
	if err != nil {
		t.Fatalf("read the corpus under %s: %v", root, err)
	}
	return corpus
}
