package pyclosure

import (
	"strings"
	"testing"
	"testing/fstest"
)

const prefix = "cacheon_c_0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestRewriteMovesLocalImportsUnderThePrefix(t *testing.T) {
	files := map[string]string{
		"kernels/__init__.py": "",
		"kernels/util.py":     "X = 1\n",
		"helpers.py":          "",
		"kernels/k.py": "import torch, helpers\n" +
			"import kernels.util\n" +
			"import kernels.util as u\n" +
			"from kernels.util import X as Y  # keep this comment\n" +
			"from . import util\n" +
			"import kernels . \\\n    util\n" +
			"def f():\n    from helpers import thing\n",
	}
	c, err := Build(mapFS(files), []string{"kernels/k.py"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var k *File
	for _, f := range c.Files {
		if f.Path == "kernels/k.py" {
			k = f
		}
	}
	got, err := k.Rewrite(prefix)
	if err != nil {
		t.Fatal(err)
	}
	P := prefix
	want := "import torch, " + P + ".helpers as helpers\n" +
		"import " + P + ".kernels.util, " + P + ".kernels as kernels\n" +
		"import " + P + ".kernels.util as u\n" +
		"from " + P + ".kernels.util import X as Y  # keep this comment\n" +
		"from . import util\n" +
		"import " + P + ".kernels.util, " + P + ".kernels as kernels\n" +
		"def f():\n    from " + P + ".helpers import thing\n"
	if string(got) != want {
		t.Errorf("rewritten source\n got:\n%s\nwant:\n%s", got, want)
	}
}

// Rewriting every closure file and placing it under the prefix must give
// a tree whose closure, taken from the moved op source, is exactly the
// moved files: every rewritten import still lands on the same module.
func TestRewrittenTreeResolvesToTheSameModules(t *testing.T) {
	files := map[string]string{
		"kernels/__init__.py":     "from kernels import shared\n",
		"kernels/shared.py":       "import helpers\n",
		"kernels/k.py":            "import kernels.shared\nfrom .sub import leaf\n",
		"kernels/sub/__init__.py": "",
		"kernels/sub/leaf.py":     "from helpers import h\n",
		"helpers.py":              "def h(): pass\n",
		"unused.py":               "",
	}
	c, err := Build(mapFS(files), []string{"kernels/k.py"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	moved := fstest.MapFS{prefix + "/__init__.py": &fstest.MapFile{}}
	var want []string
	for _, f := range c.Files {
		out, err := f.Rewrite(prefix)
		if err != nil {
			t.Fatal(err)
		}
		moved[prefix+"/"+f.Path] = &fstest.MapFile{Data: out}
		want = append(want, prefix+"/"+f.Path)
	}
	c2, err := Build(moved, []string{prefix + "/kernels/k.py"}, Options{})
	if err != nil {
		t.Fatalf("closure of the rewritten tree: %v", err)
	}
	want = append(want, prefix+"/__init__.py")
	got := c2.Paths()
	if strings.Join(sortedStrings(got), " ") != strings.Join(sortedStrings(want), " ") {
		t.Errorf("rewritten closure\n got %q\nwant %q", got, want)
	}
	for _, f := range c2.Files {
		for _, imp := range f.Imports {
			if !strings.HasPrefix(imp.Module, prefix+".") {
				t.Errorf("%s still imports %q outside the prefix", f.Path, imp.Module)
			}
		}
	}
}

func TestRewriteRejectsBadEdits(t *testing.T) {
	src := []byte("from kernels.util import X\n")
	tests := []struct {
		name    string
		imports []LocalImport
		prefix  string
		want    string
	}{
		{"bad prefix", []LocalImport{{Start: 5, End: 17, Module: "kernels.util"}}, "cacheon-c", "not a dotted identifier"},
		{"span outside source", []LocalImport{{Start: 5, End: 500, Module: "kernels.util"}}, prefix, "outside"},
		{"overlapping spans", []LocalImport{{Start: 5, End: 17, Module: "kernels.util"}, {Start: 10, End: 17, Module: "ls.util"}}, prefix, "overlaps"},
		{"span holds other text", []LocalImport{{Start: 0, End: 4, Module: "kernels"}}, prefix, "not module"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Rewrite(src, tt.imports, tt.prefix)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestNamespacePrefix(t *testing.T) {
	p, err := NamespacePrefix(strings.Repeat("ab", 32))
	if err != nil || p != "cacheon_c_"+strings.Repeat("ab", 32) {
		t.Fatalf("NamespacePrefix = %q, %v", p, err)
	}
	if _, err := NamespacePrefix("ABC"); err == nil {
		t.Fatal("NamespacePrefix accepted a non-digest")
	}
}

func sortedStrings(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}
