package identity

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The identity primitives sit under everything else: they import only the
// standard library and the canonical JSON encoder.
func TestImportsStayWithinFence(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if strings.Contains(strings.Split(path, "/")[0], ".") && path != "github.com/cacheon/engine/internal/canonjson" {
				t.Errorf("%s imports %s, outside the identity package's import fence", name, path)
			}
		}
	}
}

// TestNoOtherPackageSpellsADomain keeps every domain declared once: a
// string literal equal to a declared domain anywhere else in the
// repository's non-test Go code is a second declaration that can drift
// from the first. (Tests may spell the wire strings: there they pin them.)
// It needs the repository's sources, so it skips where the test runs
// without them (a Bazel sandbox).
func TestNoOtherPackageSpellsADomain(t *testing.T) {
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(repo, "go.mod")); err != nil {
		t.Skipf("the repository sources are not here (%v)", err)
	}
	names := map[string]string{}
	for _, info := range Domains() {
		names[string(info.Domain)] = info.Name
	}
	self := filepath.Join(repo, "internal", "identity")
	err = filepath.WalkDir(repo, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if base := d.Name(); path == self || path != repo && (strings.HasPrefix(base, ".") || base == "testdata" || base == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			if s, err := strconv.Unquote(lit.Value); err == nil && names[s] != "" {
				rel, _ := filepath.Rel(repo, fset.Position(lit.Pos()).Filename)
				t.Errorf("%s:%d spells the domain %q; use identity.%s", filepath.ToSlash(rel), fset.Position(lit.Pos()).Line, s, names[s])
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
