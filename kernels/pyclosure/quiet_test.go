package pyclosure

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/cacheon/engine/internal/testtree"
)

// diffCorpus is the source the differential tests start from: every
// Python file under kernels/ and every file of the repository's testdata
// directories (fuzz corpora included), by path. It is empty when the
// test does not run from the source tree.
func diffCorpus(t testing.TB) map[string][]byte {
	t.Helper()
	root := filepath.Join("..", "..")
	if _, err := os.Stat(filepath.Join(root, "MODULE.bazel")); err != nil {
		t.Log("not run from the source tree: no corpus")
		return map[string][]byte{}
	}
	corpus := testtree.PythonCorpus(t, root)
	if len(corpus) < 100 {
		t.Fatalf("corpus has %d files; expected the repository's Python files", len(corpus))
	}
	return corpus
}

// quietCases are sources where the shortcut's reading of statement text
// matters: each thing the walk acts on, spelled where it is easy to miss
// (decorators, after ';', inside blocks, non-ASCII spellings), beside
// statements whose text is quiet.
var quietCases = []string{
	"T0 = \"abc0123\"\nT1 = 12\nT2 = T1\nT3 = eval\n",
	"a = 1; b = eval\nc = 2\n",
	"a = 1; import importlib\n",
	"@dec\ndef f():\n    return 1\n@eval\ndef g(): pass\n",
	"def f():\n    import os\n    return os\nT = 1\n",
	"class C:\n    def f(self):\n        return self.exec_module\n",
	"x = a.compile\ny = a.load_module\nz = a.spec_from_file_location\n",
	"\uff45\uff56\uff41\uff4c(\"1\")\n",
	"T = 1\n\u00e9 = 2\nexe\u0441 = 3\n",
	"import cutlass.cute as cute\nk = cute.compile(f, x)\n",
	"from cutlass import cute\nk = cute.compile(f)\ncute = 1\n",
	"from cutlass import *\nk = cute.compile(f)\n",
	"global cute\n",
	"for cute in x: pass\nk = cute.compile(f)\n",
	"try:\n    pass\nexcept E as cute:\n    pass\n",
	"match x:\n    case [*cute]:\n        pass\n",
	"x = \"eval\"  # exec\ny = 1\n",
	"x = (1,\n     eval)\ny = 2\n",
	"x = 1 \\\n  + eval\n",
	"if x:\n    y = 1\nelse:\n    from builtins import open\n",
	"from . import helpers\nfrom .. import x\nimport a.b.c as d\n",
	"__import__('os')\n",
	"import cacheon_worker\nfrom cacheon_reference import x\n",
	"f'{eval}'\nT = 1\n",
	"T = 1\nT = \n",
	"x = 1\n\x00\n",
}

func factsJSON(t testing.TB, src []byte, full bool) string {
	t.Helper()
	facts, err := analyze(src, full)
	if err != nil {
		return "error: " + err.Error()
	}
	out, err := json.Marshal(facts)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func checkQuietShortcut(t testing.TB, name string, src []byte) {
	t.Helper()
	if got, want := factsJSON(t, src, false), factsJSON(t, src, true); got != want {
		t.Fatalf("%s: facts with the quiet-text shortcut differ from the full walk's\ngot:  %s\nwant: %s\nsource:\n%q", name, got, want, src)
	}
}

// The quiet-text shortcut never changes the facts: on the corpus, the
// cases above, each of them with loud words and statements inserted at
// offsets spread over its first 1200 bytes, and truncated there.
func TestQuietShortcutMatchesFullWalk(t *testing.T) {
	srcs := diffCorpus(t)
	for i, c := range quietCases {
		srcs["case "+string(rune('a'+i))] = []byte(c)
	}
	words := []string{"eval", "exec_module", " import_module", "spec_from_file_location", "\uff45\uff56\uff41\uff4c",
		"\n@eval\n", "\nimport os\n", "; cute = 1", "\nfrom cutlass import cute\n"}
	variants := 0
	for name, src := range srcs {
		checkQuietShortcut(t, name, src)
		step := 97 + len(name)%89
		for off := 0; off < min(len(src), 1200); off += step {
			for _, w := range words {
				v := append(append(append([]byte(nil), src[:off]...), w...), src[off:]...)
				checkQuietShortcut(t, name+" +"+w, v)
				variants++
			}
			checkQuietShortcut(t, name+" truncated", src[:off])
		}
	}
	t.Logf("%d sources, %d variants", len(srcs), variants)
}

// The statements of the benchmark's generated modules are quiet, and a
// loud byte anywhere in a statement's text is seen.
func TestQuiet(t *testing.T) {
	for _, s := range []string{"T0 = \"a1b2c3d4e5f60718293a4b5c6d7e8f90\"\n", "T12 = 0o17\n", "\n\n# a note\nA = B\n"} {
		if !quiet(s) {
			t.Errorf("quiet(%q) = false", s)
		}
	}
	for _, s := range []string{"x = eval\n", "import a\n", "T = exe\u0441\n", "cute = 1\n", "# mm\n", "\u00e9 = 1\n"} {
		if quiet(s) {
			t.Errorf("quiet(%q) = true", s)
		}
	}
}

// quiet reads words and a tail; it must agree with the byte table at
// every position of a loud byte in texts of every length up to 40.
func TestQuietMatchesByteTable(t *testing.T) {
	base := []byte("T0 = \"0123456789abcdef\" # ABC wyz_()[]\n")
	for n := 0; n <= len(base); n++ {
		if !quiet(string(base[:n])) {
			t.Fatalf("quiet(%q) = false", base[:n])
		}
		for at := 0; at < n; at++ {
			for c := 0; c < 256; c++ {
				text := append([]byte(nil), base[:n]...)
				text[at] = byte(c)
				if got, want := quiet(string(text)), !loud[c]; got != want {
					t.Fatalf("quiet(%q) = %v, want %v", text, got, want)
				}
			}
		}
	}
}
