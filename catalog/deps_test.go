package catalog

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The catalog is trusted code that every other component links: it may
// import only the standard library, HCL (with its value library cty) and
// the project's identity primitives and shared HCL limits (which import
// only the standard library and HCL themselves).
func TestImportsStayWithinFence(t *testing.T) {
	allowed := []string{
		"github.com/hashicorp/hcl/v2",
		"github.com/zclconf/go-cty/",
		"github.com/cacheon/engine/internal/canonjson",
		"github.com/cacheon/engine/internal/identity",
		"github.com/cacheon/engine/internal/hclload",
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if !strings.Contains(strings.Split(path, "/")[0], ".") {
				continue // standard library
			}
			ok := false
			for _, a := range allowed {
				if path == a || strings.HasPrefix(path, a+"/") || strings.HasSuffix(a, "/") && strings.HasPrefix(path, a) {
					ok = true
				}
			}
			if !ok {
				t.Errorf("%s imports %s, outside the catalog's import fence", name, path)
			}
		}
	}
}
