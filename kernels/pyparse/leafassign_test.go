package pyparse

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cacheon/engine/internal/testtree"
)

// parseGeneral is ParseVersion with the leafAssign shortcut off: every
// statement takes the general path.
func parseGeneral(name string, src []byte, v Version) (*File, *Module, error) {
	f := NewFile(name, src)
	lx, err := newLexer(f, v)
	if err != nil {
		return f, nil, err
	}
	p := &parser{f: f, src: f.Src, lx: lx, version: v, general: true}
	mod, err := p.run()
	return f, mod, err
}

// fingerprint is everything a parse result says: the error, the dump of
// the tree, and every node's type and span.
func fingerprint(mod *Module, err error) string {
	var b strings.Builder
	fmt.Fprintf(&b, "error: %v\n", err)
	if mod == nil {
		return b.String()
	}
	b.WriteString(Dump(mod))
	Inspect(mod, func(n Node) bool {
		s, e := n.Span()
		fmt.Fprintf(&b, "\n%T [%d,%d)", n, s, e)
		return true
	})
	return b.String()
}

var allVersions = []Version{Python311, Python312, Python313}

func checkLeafAssign(t testing.TB, name string, src []byte, versions ...Version) {
	t.Helper()
	for _, v := range versions {
		_, mod, err := ParseVersion(name, src, v)
		_, gmod, gerr := parseGeneral(name, src, v)
		if got, want := fingerprint(mod, err), fingerprint(gmod, gerr); got != want {
			t.Fatalf("%s (3.%d): the leafAssign shortcut parses differently from the general path\nshortcut:\n%s\ngeneral:\n%s\nsource: %q", name, v, got, want, src)
		}
	}
}

// leafCorpus is every Python file under kernels/ and every file of the
// repository's testdata directories, by path; only this package's
// testdata when the test does not run from the source tree.
func leafCorpus(t testing.TB) map[string][]byte {
	t.Helper()
	if _, err := os.Stat(filepath.Join("..", "..", "MODULE.bazel")); err != nil {
		return testtree.PythonCorpus(t, ".")
	}
	return testtree.PythonCorpus(t, filepath.Join("..", ".."))
}

// leafCases are statements at and around the `name = leaf` shape.
var leafCases = []string{
	"T0 = \"0123abcd\"\nT1 = 'x'\nT2 = 12\nT3 = T2\n",
	"a = 1; b = 2;\nc = 3;  # c\n",
	"a = 0x1F\nb = 0o17\nc = 0b1\nd = 1_000\ne = 1.5e3\nf = 2j\ng = .5\n",
	"a = b'\\x00'\nb = r'\\d'\nc = u'x'\nd = rb'x'\ne = '''x\ny'''\n",
	"a = 'x' 'y'\nb = 'x'\\\n 'y'\nc = f'{a}'\nd = 'a' f'{b}'\n",
	"a = None\nb = True\nc = False\nd = yield\ne = await\nf = lambda: 1\n",
	"a = b = 1\na = b.c\na = b[0]\na = b()\na = -1\na = (1)\na = b, c\na, b = 1\n",
	"a = 1 if b else 2\na = b or c\na = b + c\na = b := 1\n",
	"a: int = 1\na += 1\na.b = 1\n",
	"\u00e9 = 1\n\uff41 = \uff42\nx\u0301 = 1\n",
	"match = 1\ncase = 2\ntype = 3\n_ = 4\nprint = print\n",
	"def f():\n    a = 1\n    if a:\n        b = 'x'\n    return b\n",
	"class C:\n    x = 1\n    y = x\n",
	"a = b'caf\u00e9'\n",
	"a = '\\N{BOGUS}'\n",
	"a = 1__0\n",
	"a = 09\n",
	"a = 1\n  b = 2\n",
	"a = 'unterminated\n",
	"a = 1",
	"a = \n",
	"a =\n1\n",
	"= 1\n",
	"1 = a\n",
	"a = 1 = 2\n",
	"if a = 1:\n    pass\n",
	"a = 1\r\nb = 'x'\r\n",
	"a = 1 \\\n\n",
	"a = 1 ; ; b = 2\n",
	"__debug__ = 1\n",
	"a = 0_\n",
	"a = 1if x else 2\n",
	"a = 1jexec\n",
}

// The leafAssign shortcut parses exactly as the general path: the same
// trees, spans and errors, for the 3.11, 3.12 and 3.13 grammars, on the
// repository's Python and testdata files and the cases above; and for
// the latest grammar, each of them with a statement, a piece of one or
// a byte inserted at offsets spread over its first 1200 bytes, a byte
// removed there, and truncated there.
func TestLeafAssignMatchesGeneralPath(t *testing.T) {
	srcs := leafCorpus(t)
	for i, c := range leafCases {
		srcs[fmt.Sprintf("case %d", i)] = []byte(c)
	}
	inserts := []string{"x = 'y'\n", " = 1", ";", "\n", "'", "\u00e9"}
	variants := 0
	for name, src := range srcs {
		checkLeafAssign(t, name, src, allVersions...)
		step := 97 + len(name)%89
		for off := 0; off < min(len(src), 1200); off += step {
			for _, w := range inserts {
				v := append(append(append([]byte(nil), src[:off]...), w...), src[off:]...)
				checkLeafAssign(t, name+" +"+w, v, Latest)
				variants++
			}
			checkLeafAssign(t, name+" -1", append(append([]byte(nil), src[:off]...), src[off+1:]...), Latest)
			checkLeafAssign(t, name+" truncated", src[:off], Latest)
			variants += 2
		}
	}
	t.Logf("%d sources, %d variants", len(srcs), variants)
}

// The shortcut is taken where it is meant to be.
func TestIsLeafAssign(t *testing.T) {
	for src, want := range map[string]bool{
		"T0 = \"0123\"\n": true, "a = b;": true, "a = 1\n": true, "\u00e9 = x\n": true,
		"a = None\n": false, "a = b.c\n": false, "a = 'x' 'y'\n": false, "a = b = 1\n": false,
		"a = f'x'\n": false, "a = (1)\n": false, "a = 1": true,
	} {
		f := NewFile("t.py", []byte(src))
		lx, err := newLexer(f, Latest)
		if err != nil {
			t.Fatal(err)
		}
		p := &parser{f: f, src: f.Src, lx: lx, version: Latest}
		p.fill(1)
		if got := p.isLeafAssign(); got != want {
			t.Errorf("isLeafAssign(%q) = %v, want %v", src, got, want)
		}
	}
}
