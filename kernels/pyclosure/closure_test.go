package pyclosure

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

func mapFS(files map[string]string) fstest.MapFS {
	m := fstest.MapFS{}
	for p, s := range files {
		m[p] = &fstest.MapFile{Data: []byte(s), Mode: 0o644}
	}
	return m
}

func problems(err error) []string {
	var ce *Error
	if !errors.As(err, &ce) {
		return nil
	}
	var out []string
	for _, p := range ce.Problems {
		out = append(out, p.String())
	}
	return out
}

func TestClosureFollowsBundleLocalImports(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]string
		sources []string
		want    []string
	}{
		{"no imports", map[string]string{"kernels/k.py": "import torch\n"}, []string{"kernels/k.py"},
			[]string{"kernels/k.py"}},
		{"external imports are not followed", map[string]string{"kernels/k.py": "import torch, triton.language as tl\nfrom os import path\n", "torch_notes.py": ""},
			[]string{"kernels/k.py"}, []string{"kernels/k.py"}},
		{"from package import name", map[string]string{
			"kernels/__init__.py": "", "kernels/util.py": "X = 1\n", "kernels/k.py": "from kernels.util import X\n"},
			[]string{"kernels/k.py"}, []string{"kernels/__init__.py", "kernels/k.py", "kernels/util.py"}},
		{"top-level helper module", map[string]string{"helpers.py": "", "kernels/k.py": "import helpers\n"},
			[]string{"kernels/k.py"}, []string{"helpers.py", "kernels/k.py"}},
		{"submodule named in from-import", map[string]string{
			"lib/__init__.py": "", "lib/a.py": "", "lib/b/__init__.py": "", "k.py": "from lib import a, b, not_a_module\n"},
			[]string{"k.py"}, []string{"k.py", "lib/__init__.py", "lib/a.py", "lib/b/__init__.py"}},
		{"transitive and cyclic", map[string]string{
			"a.py": "import b\n", "b.py": "from c import f\nimport a\n", "c.py": "def f(): pass\n"},
			[]string{"a.py"}, []string{"a.py", "b.py", "c.py"}},
		{"imports inside functions are followed", map[string]string{
			"k.py": "def f():\n    import lazy\n", "lazy.py": ""},
			[]string{"k.py"}, []string{"k.py", "lazy.py"}},
		{"deep package chain runs every __init__", map[string]string{
			"a/__init__.py": "", "a/b/__init__.py": "", "a/b/c.py": "", "k.py": "import a.b.c\n"},
			[]string{"k.py"}, []string{"a/__init__.py", "a/b/__init__.py", "a/b/c.py", "k.py"}},
		{"op source package __init__ and root __init__ run", map[string]string{
			"__init__.py": "", "kernels/__init__.py": "from . import shared\n", "kernels/shared.py": "", "kernels/k.py": ""},
			[]string{"kernels/k.py"}, []string{"__init__.py", "kernels/__init__.py", "kernels/k.py", "kernels/shared.py"}},
		{"relative imports", map[string]string{
			"pkg/__init__.py": "", "pkg/a.py": "from .b import g\nfrom . import c\nfrom .sub.d import h\n", "pkg/b.py": "", "pkg/c.py": "",
			"pkg/sub/__init__.py": "", "pkg/sub/d.py": "from .. import b\n"},
			[]string{"pkg/a.py"}, []string{"pkg/__init__.py", "pkg/a.py", "pkg/b.py", "pkg/c.py", "pkg/sub/__init__.py", "pkg/sub/d.py"}},
		{"relative import up to the bundle root", map[string]string{
			"kernels/k.py": "from .. import helpers\n", "helpers.py": ""},
			[]string{"kernels/k.py"}, []string{"helpers.py", "kernels/k.py"}},
		{"native stem without a local module is external", map[string]string{"k.py": "import silu_ext\n"},
			[]string{"k.py"}, []string{"k.py"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := buildEveryWay(t, mapFS(tt.files), tt.sources, Options{NativeStems: []string{"silu_ext"}})
			if err != nil {
				t.Fatalf("Build: %v", err)
			}
			if got := strings.Join(c.Paths(), " "); got != strings.Join(tt.want, " ") {
				t.Errorf("closure\n got %s\nwant %s", got, strings.Join(tt.want, " "))
			}
		})
	}
}

func TestClosureRefusals(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]string
		sources []string
		stems   []string
		want    []string // substrings, one per problem, in order
	}{
		{"bare namespace package", map[string]string{"kernels/util.py": "", "kernels/k.py": "import kernels.util\n"},
			[]string{"kernels/k.py"}, nil, []string{"kernels/k.py:1:8: import of \"kernels.util\" goes through kernels/, which has no __init__.py"}},
		{"partially local", map[string]string{"kernels/__init__.py": "", "kernels/k.py": "from kernels.missing import x\n"},
			[]string{"kernels/k.py"}, nil, []string{"kernels/k.py:1:1: import of \"kernels.missing\" starts in the bundle but \"kernels.missing\" is not a bundle module"}},
		{"module used as package", map[string]string{"helpers.py": "", "k.py": "import helpers.sub\n"},
			[]string{"k.py"}, nil, []string{"k.py:1:8: import of \"helpers.sub\": helpers.py is a module, not a package"}},
		{"relative import above the root", map[string]string{"k.py": "from .. import x\n"},
			[]string{"k.py"}, nil, []string{"k.py:1:1: unresolved relative import: 2 leading dots climb above"}},
		{"relative import of a missing module", map[string]string{"pkg/__init__.py": "", "pkg/k.py": "from .missing import x\n"},
			[]string{"pkg/k.py"}, nil, []string{"pkg/k.py:1:1: unresolved relative import: .missing is not a bundle module"}},
		{"relative name with no module and no __init__", map[string]string{"pkg/k.py": "from . import ghost\n"},
			[]string{"pkg/k.py"}, nil, []string{"pkg/k.py:1:1: unresolved relative import: \"ghost\" is not a module of pkg"}},
		{"clash with a native stem", map[string]string{"silu.py": "", "k.py": "import silu\n"},
			[]string{"k.py"}, []string{"silu"}, []string{"k.py:1:8: bundle module \"silu\" has the name of the native extension built from silu.cu"}},
		{"non-identifier directory", map[string]string{"my-kernels/k.py": ""},
			[]string{"my-kernels/k.py"}, nil, []string{"my-kernels/k.py: path component \"my-kernels\" is not a Python identifier"}},
		{"dotted file name", map[string]string{"kernels/v1.2.py": ""},
			[]string{"kernels/v1.2.py"}, nil, []string{"path component \"v1.2\" is not a Python identifier"}},
		{"keyword directory", map[string]string{"class/k.py": ""},
			[]string{"class/k.py"}, nil, []string{"path component \"class\" is not a Python identifier"}},
		{"ambiguous module and package", map[string]string{"h.py": "", "h/__init__.py": "", "k.py": "import h\n"},
			[]string{"k.py"}, nil, []string{"import of \"h\" is ambiguous"}},
		{"star import from a bundle package", map[string]string{"lib/__init__.py": "", "k.py": "from lib import *\n"},
			[]string{"k.py"}, nil, []string{"star import from bundle package \"lib\""}},
		{"syntax error in an imported file", map[string]string{"k.py": "import helpers\n", "helpers.py": "def (:\n"},
			[]string{"k.py"}, nil, []string{"helpers.py:1:"}},
		// The worker runs 3.11: what its grammar rejects is refused here
		// as the scan refuses it, never a selected delta.
		{"PEP 695 type parameters (Python 3.12)", map[string]string{"k.py": "def first[T](xs: list[T]) -> T:\n    return xs[0]\n"},
			[]string{"k.py"}, nil, []string{"k.py:1:10: syntax error: a type parameter list (PEP 695) requires Python 3.12; the target is Python 3.11"}},
		{"a 3.12 f-string", map[string]string{"k.py": "x = f\"{'a' + \"b\"}\"\n"},
			[]string{"k.py"}, nil, []string{"k.py:1:14: syntax error: f-string: the enclosing quote reused inside a replacement field requires Python 3.12"}},
		{"missing op source", map[string]string{}, []string{"kernels/k.py"}, nil, []string{"kernels/k.py: cannot be read"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := buildEveryWay(t, mapFS(tt.files), tt.sources, Options{NativeStems: tt.stems})
			if !errors.Is(err, ErrRefused) {
				t.Fatalf("Build error = %v, want a refusal", err)
			}
			got := problems(err)
			if len(got) != len(tt.want) {
				t.Fatalf("problems %q, want %d", got, len(tt.want))
			}
			for i := range got {
				if !strings.Contains(got[i], tt.want[i]) {
					t.Errorf("problem %q does not contain %q", got[i], tt.want[i])
				}
			}
		})
	}
}

func TestDynamicImportBan(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string // problem substrings; nil = admitted
	}{
		{"plain kernel", "import torch\ndef f(x): return torch.relu(x)\n", nil},
		{"importlib", "import importlib\n", []string{"1:8: dynamic import: module \"importlib\""}},
		{"importlib.util", "from importlib.util import spec_from_file_location\n", []string{"1:1: dynamic import: module \"importlib.util\""}},
		{"builtins alias", "import builtins as b\n", []string{"1:8: dynamic import: module \"builtins\""}},
		{"__import__", "m = __import__('os')\n", []string{"1:5: dynamic import: name \"__import__\""}},
		{"eval", "eval('1')\n", []string{"1:1: dynamic import: name \"eval\""}},
		{"exec aliased", "run = exec\n", []string{"1:7: dynamic import: name \"exec\""}},
		{"compile builtin", "compile('x', 'f', 'exec')\n", []string{"1:1: dynamic import: name \"compile\""}},
		{"import_module attribute", "mod.import_module('x')\n", []string{"1:5: dynamic import: attribute \"import_module\""}},
		{"torch.compile", "f = torch.compile(g)\n", []string{"1:11: dynamic import: attribute \"compile\""}},
		{"loader calls", "spec.loader.exec_module(m)\nl.load_module('x')\nu.spec_from_file_location('m', p)\n",
			[]string{"1:13: dynamic import: loader call \"exec_module\"", "2:3: dynamic import: loader call \"load_module\"", "3:3: dynamic import: loader call \"spec_from_file_location\""}},
		{"from-import of a banned name", "from torch import compile\n", []string{"1:19: dynamic import: imports \"compile\""}},
		{"cute.compile carve-out", "import cutlass.cute as cute\n\ndef build(k, a):\n    return cute.compile(k, a)\n", nil},
		{"cute.compile from-import, dotted callable", "from cutlass import cute\nc = cute.compile(kernels.gemm.kernel, x)\n", nil},
		{"cute bound twice", "import cutlass.cute as cute\ncute = other\ncute.compile(k)\n", []string{"3:6: dynamic import: attribute \"compile\""}},
		{"cute as a parameter", "import cutlass.cute as cute\ndef f(cute): cute.compile(k)\n", []string{"2:19: dynamic import: attribute \"compile\""}},
		{"cute from elsewhere", "import evil as cute\ncute.compile(k)\n", []string{"2:6: dynamic import: attribute \"compile\""}},
		{"cute.compile of a string", "import cutlass.cute as cute\ncute.compile('source')\n", []string{"2:6: dynamic import: attribute \"compile\""}},
		{"cute.compile of a lambda", "import cutlass.cute as cute\ncute.compile(lambda: 0)\n", []string{"2:6: dynamic import: attribute \"compile\""}},
		{"cute.compile aliased", "import cutlass.cute as cute\nc = cute.compile\n", []string{"2:10: dynamic import: attribute \"compile\""}},
		{"cute.compile without arguments", "import cutlass.cute as cute\ncute.compile()\n", []string{"2:6: dynamic import: attribute \"compile\""}},
		{"cute via star import", "from cutlass import *\nfrom cutlass import cute\ncute.compile(k)\n", []string{"3:6: dynamic import: attribute \"compile\""}},
		// The validator's own packages: importing one lets the kernel
		// replace the checks its process makes.
		{"the harness", "import cacheon_worker.candidate as c\nc.Call.violations = f\n", []string{"1:8: harness import: module \"cacheon_worker.candidate\""}},
		{"the reference", "import torch, cacheon_reference\n", []string{"1:15: harness import: module \"cacheon_reference\""}},
		{"the substrate from-imported", "def f():\n    from cacheon_substrate.serve import main\n", []string{"2:5: harness import: module \"cacheon_substrate.serve\""}},
		{"a harness package from-imported", "from cacheon_worker import candidate\n", []string{"1:1: harness import: module \"cacheon_worker\""}},
		{"the harness by string", "m = __import__('cacheon_worker')\n", []string{"1:5: dynamic import: name \"__import__\""}},
		{"names that only look like the harness", "import cacheon_workers\nimport kernels_cacheon_reference\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := buildEveryWay(t, mapFS(map[string]string{"k.py": tt.src}), []string{"k.py"}, Options{})
			got := problems(err)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if len(got) != len(tt.want) {
				t.Fatalf("problems %q, want %q", got, tt.want)
			}
			for i := range got {
				if !strings.Contains(got[i], tt.want[i]) {
					t.Errorf("problem %q does not contain %q", got[i], tt.want[i])
				}
			}
		})
	}
}

func TestNativeStems(t *testing.T) {
	got := NativeStems([]string{"csrc/silu.cu", "csrc/common.cuh", "b/silu.cu", "gemm.cu"})
	if strings.Join(got, ",") != "gemm,silu" {
		t.Errorf("NativeStems = %q", got)
	}
}

func TestDirFSRefusesLinks(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret.py"), []byte("import subprocess\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "k.py"), []byte("import secret\nimport linked.mod\n"), 0o644)
	if err := os.Symlink(filepath.Join(outside, "secret.py"), filepath.Join(dir, "secret.py")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "linked")); err != nil {
		t.Fatal(err)
	}
	c, err := FromDir(dir, []string{"k.py"}, Options{})
	if err != nil {
		t.Fatalf("FromDir: %v", err)
	}
	// Links do not exist for the closure: both imports read as external.
	if got := strings.Join(c.Paths(), " "); got != "k.py" {
		t.Errorf("closure = %q, want only k.py", got)
	}
}
