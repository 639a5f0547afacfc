package pyparse

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The golden dumps in testdata/syntax.golden were produced by CPython
// 3.12's own ast module (testdata/gen_golden.py), so this test checks our
// trees against the reference parser node for node.
func TestParseMatchesCPythonGolden(t *testing.T) {
	f, err := os.Open("testdata/syntax.golden")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	n := 0
	for sc.Scan() {
		name, want, ok := strings.Cut(sc.Text(), "\t")
		if !ok {
			t.Fatalf("malformed golden line %q", sc.Text())
		}
		n++
		t.Run(name, func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join("testdata/syntax", name+".py"))
			if err != nil {
				t.Fatal(err)
			}
			_, mod, err := Parse(name+".py", src)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got := Dump(mod); got != want {
				i := 0
				for i < len(got) && i < len(want) && got[i] == want[i] {
					i++
				}
				lo := max(0, i-120)
				t.Errorf("dump differs at byte %d\n got: …%s\nwant: …%s", i, got[lo:min(len(got), i+80)], want[lo:min(len(want), i+80)])
			}
		})
	}
	if n < 10 {
		t.Fatalf("only %d golden cases read", n)
	}
}

func TestSyntaxErrors(t *testing.T) {
	tests := []struct {
		name, src string
		line, col int
		msg       string
	}{
		{"unclosed paren", "x = (1,\n", 1, 5, "'(' was never closed"},
		{"unmatched close", "x = 1)\n", 1, 6, "unmatched ')'"},
		{"mismatched close", "x = [1)\n", 1, 7, "does not match"},
		{"bad indent", "if x:\n    a\n  b\n", 3, 3, "unindent does not match"},
		{"unexpected indent", "a\n    b\n", 2, 5, "unexpected indent"},
		{"missing block", "if x:\npass\n", 2, 1, "expected an indented block"},
		{"tab mix", "if x:\n        a\n\tb\n", 3, 2, "inconsistent use of tabs"},
		{"unterminated string", "x = 'abc\n", 1, 5, "unterminated string literal"},
		{"unterminated triple", "x = '''abc\n", 1, 5, "unterminated triple-quoted"},
		{"unterminated fstring", "x = f'{a}\n", 1, 5, "unterminated f-string"},
		{"fstring empty field", "f'{}'\n", 1, 4, "valid expression required"},
		{"fstring bad conversion", "f'{x!z}'\n", 1, 6, "invalid conversion character"},
		{"fstring single brace", "f'a}b'\n", 1, 4, "single '}' is not allowed"},
		{"fstring nested too deep", "f'{x:{y:{z:{w}}}}'\n", 1, 12, "nested too deeply"},
		{"python2 print", "print 'x'\n", 1, 7, "invalid syntax"},
		{"python2 exec", "exec 'code'\n", 1, 6, "invalid syntax"},
		{"backtick", "x = `a`\n", 1, 5, "invalid character"},
		{"dollar", "x = $a\n", 1, 5, "invalid character"},
		{"assign to call", "f() = 1\n", 1, 1, "cannot assign to function call"},
		{"assign to literal", "1 = x\n", 1, 1, "cannot assign to literal"},
		{"del call", "del f()\n", 1, 5, "cannot delete function call"},
		{"aug assign tuple", "a, b += 1\n", 1, 1, "illegal expression for augmented assignment"},
		{"annotate tuple", "a, b: int\n", 1, 1, "only single target (not tuple)"},
		{"walrus at statement level", "a := 1\n", 1, 3, "invalid syntax"},
		{"keyword then positional", "f(a=1, b)\n", 1, 8, "positional argument follows keyword argument"},
		{"star after double star", "f(**a, *b)\n", 1, 8, "iterable argument unpacking follows keyword argument unpacking"},
		{"unparenthesized generator", "f(x for x in y, 1)\n", 1, 3, "Generator expression must be parenthesized"},
		{"bare star", "def f(*): pass\n", 1, 8, "named arguments must follow bare *"},
		{"default order", "def f(a=1, b): pass\n", 1, 12, "parameter without a default"},
		{"leading zero", "x = 0123\n", 1, 5, "leading zeros"},
		{"double underscore number", "x = 1__0\n", 1, 5, "invalid decimal literal"},
		{"number then name", "x = 1abc\n", 1, 5, "invalid decimal literal"},
		{"mixed bytes", "x = b'a' 'b'\n", 1, 10, "cannot mix bytes and nonbytes"},
		{"non-ascii bytes", "x = b'é'\n", 1, 5, "bytes can only contain ASCII"},
		{"truncated hex escape", "x = '\\x4'\n", 1, 5, "truncated \\x escape"},
		{"except and except star", "try:\n pass\nexcept A:\n pass\nexcept* B:\n pass\n", 5, 1, "cannot have both"},
		{"continuation garbage", "x = 1 \\ 2\n", 1, 7, "unexpected character after line continuation"},
		{"nul byte", "x = 1\x00\n", 1, 6, "null bytes"},
		{"invalid utf8", "x = '\xff'\n", 1, 6, "invalid UTF-8"},
		{"latin1 cookie", "# -*- coding: latin-1 -*-\nx = 1\n", 1, 1, "only UTF-8"},
		{"utf7 cookie on line 2", "#!/usr/bin/env python\n# coding: utf-7\n+AAo-import os\n", 2, 1, "only UTF-8"},
		{"return annotation missing", "def f() -> : pass\n", 1, 12, "invalid syntax"},
		{"lambda in fstring", "f'{lambda x:1}'\n", 1, 13, ""},
		{"class without colon", "class A\n", 1, 8, "expected ':'"},
		{"import trailing comma", "from a import b,\n", 1, 17, "trailing comma not allowed"},
		{"empty type params", "def f[](): pass\n", 1, 7, "type parameter list cannot be empty"},
		{"150 nested f-strings", "x = " + strings.Repeat(`f"{`, 150) + "a" + strings.Repeat(`}"`, 150) + "\n", 1, 453, "too many nested f-strings"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := Parse("t.py", []byte(tt.src))
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Parse(%q) = %v, want a SyntaxError", tt.src, err)
			}
			if !strings.Contains(se.Msg, tt.msg) {
				t.Errorf("message %q, want it to contain %q", se.Msg, tt.msg)
			}
			if se.Pos.Line != tt.line || se.Pos.Col != tt.col {
				t.Errorf("position %d:%d, want %d:%d (%s)", se.Pos.Line, se.Pos.Col, tt.line, tt.col, se.Msg)
			}
		})
	}
}

func TestImportSpansAddressTheModuleName(t *testing.T) {
	src := "import a.b as c, d\nfrom .e.f import (g as h,\n  i)\nfrom ... import j\nimport k . l\n"
	_, mod, err := Parse("t.py", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	Inspect(mod, func(n Node) bool {
		if d, ok := n.(*DottedName); ok {
			got = append(got, d.Name+"="+src[d.Start:d.End])
		}
		return true
	})
	want := []string{"a.b=a.b", "d=d", "e.f=e.f", "g=g", "i=i", "j=j", "k.l=k . l"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("dotted names\n got %q\nwant %q", got, want)
	}
	from := mod.Body[1].(*ImportFrom)
	if from.Level != 1 || from.Module.Name != "e.f" {
		t.Errorf("from import = level %d module %q, want 1 e.f", from.Level, from.Module.Name)
	}
	if mod.Body[2].(*ImportFrom).Level != 3 {
		t.Errorf("`from ... import` level = %d, want 3", mod.Body[2].(*ImportFrom).Level)
	}
}

func TestPositionCountsCharacters(t *testing.T) {
	f := NewFile("t.py", []byte("a\r\nπ = x\rb\n"))
	tests := []struct{ off, line, col int }{
		{0, 1, 1}, {3, 2, 1}, {5, 2, 2}, {9, 2, 6}, {10, 3, 1},
	}
	for _, tt := range tests {
		p := f.Position(tt.off)
		if p.Line != tt.line || p.Col != tt.col {
			t.Errorf("Position(%d) = %d:%d, want %d:%d", tt.off, p.Line, p.Col, tt.line, tt.col)
		}
	}
}

func TestIdentifiersAreNFKCNormalized(t *testing.T) {
	_, mod, err := Parse("t.py", []byte("ｅｖａｌ(x)\n__𝐢𝐦𝐩𝐨𝐫𝐭__('os')\n"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	Inspect(mod, func(n Node) bool {
		if nm, ok := n.(*Name); ok {
			names = append(names, nm.ID)
		}
		return true
	})
	if strings.Join(names, ",") != "eval,x,__import__" {
		t.Errorf("names = %q, want eval, x, __import__", names)
	}
}

// Hostile inputs must end in a syntax error or a tree, quickly, and never
// in a crash or stack exhaustion.
func TestHostileInputTerminates(t *testing.T) {
	tests := []struct {
		name    string
		src     string
		wantErr string
	}{
		{"deep parens", strings.Repeat("(", 100000) + strings.Repeat(")", 100000), "too many nested parentheses"},
		{"deep brackets within limit", "x = " + strings.Repeat("[", 199) + strings.Repeat("]", 199) + "\n", ""},
		{"deep unary", "x = " + strings.Repeat("-", 200000) + "1\n", "too many nested"},
		{"deep not", "x = " + strings.Repeat("not ", 100000) + "1\n", "too many nested"},
		{"deep power", "x = 2" + strings.Repeat(" ** 2", 100000) + "\n", "too many nested"},
		{"deep lambda", "x = " + strings.Repeat("lambda: ", 100000) + "1\n", "too many nested"},
		{"deep ternary", "x = 1" + strings.Repeat(" if a else 1", 100000) + "\n", "too many nested"},
		{"await await is not python", "x = " + strings.Repeat("await ", 100000) + "1\n", "invalid syntax"},
		{"deep indentation", deepIndent(150), "too many levels of indentation"},
		{"long flat sum", "x = " + strings.Repeat("a + ", 200000) + "a\n", ""},
		{"deep fstrings", "x = " + strings.Repeat("f'{", 300) + "1" + strings.Repeat("}'", 300) + "\n", "too many nested"},
		{"many adjacent strings", "x = " + strings.Repeat("'ab' ", 500000) + "\n", ""},
		{"many adjacent f-strings", "x = (" + strings.Repeat("f'{a}b' ", 200000) + ")\n", ""},
		{"million elif clauses", "if a: pass\n" + strings.Repeat("elif a: pass\n", 1<<20), ""},
		{"many blank lines", strings.Repeat("\n", 1<<20) + "x = 1\n", ""},
		{"unterminated huge string", "x = '''" + strings.Repeat("a", 1<<20), "unterminated triple-quoted"},
		{"nul in middle", "x = 1\n" + strings.Repeat("y = 2\n", 1000) + "\x00", "null bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			done := make(chan error, 1)
			go func() {
				_, _, err := Parse("t.py", []byte(tt.src))
				done <- err
			}()
			var err error
			select {
			case err = <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("parse did not finish")
			}
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func deepIndent(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		b.WriteString(strings.Repeat(" ", i))
		b.WriteString("if x:\n")
	}
	b.WriteString(strings.Repeat(" ", n) + "pass\n")
	return b.String()
}

func TestInspectVisitsFStringExpressions(t *testing.T) {
	_, mod, err := Parse("t.py", []byte(`s = f"{__import__('os').system('id')!r:{w}}"`+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	var attrs []string
	Inspect(mod, func(n Node) bool {
		if a, ok := n.(*Attribute); ok {
			attrs = append(attrs, a.Attr.Name)
		}
		return true
	})
	if len(attrs) != 1 || attrs[0] != "system" {
		t.Errorf("attributes inside the f-string = %q, want [system]", attrs)
	}
}

func FuzzParse(f *testing.F) {
	entries, _ := os.ReadDir("testdata/syntax")
	for _, e := range entries {
		if src, err := os.ReadFile(filepath.Join("testdata/syntax", e.Name())); err == nil {
			f.Add(src)
		}
	}
	f.Add([]byte("f'{x:{y!r}}'"))
	f.Add([]byte("match x:\n case [1, *r] if r: pass\n"))
	f.Add([]byte("s = f'{x['k']}' + f'{1 +\n2}'\ntype X = int\n"))
	for _, c := range leafCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		// The leafAssign shortcut parses exactly as the general path.
		checkLeafAssign(t, "fuzz.py", src, allVersions...)
		file, mod, err := Parse("fuzz.py", src)
		if err != nil {
			checkStatements(t, src, nil, err)
		}
		// The 3.11 grammar is a subset of the latest one.
		if _, _, err311 := ParseVersion("fuzz.py", src, Python311); err311 == nil && err != nil {
			t.Fatalf("accepted for 3.11 but not for the latest grammar: %v", err)
		}
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("non-syntax error %T: %v", err, err)
			}
			return
		}
		checkStatements(t, src, mod, err)
		// Every node span must lie inside the source.
		Inspect(mod, func(n Node) bool {
			s, e := n.Span()
			if s < 0 || e < s || e > len(file.Src) {
				t.Fatalf("node %T has span [%d,%d) outside %d bytes", n, s, e, len(file.Src))
			}
			return true
		})
	})
}

// The expected names are CPython 3.12's unicodedata.normalize("NFKC", ...)
// of each spelling. The first two are where the x/text normalizer alone
// differs from Python.
func TestIdentifierNormalizationMatchesPython(t *testing.T) {
	tests := []struct{ name, spelling, want string }{
		{"marks beyond the stream-safe limit", "x" + strings.Repeat("\u0301\u0323", 20), "x" + strings.Repeat("\u0323", 20) + strings.Repeat("\u0301", 20)},
		{"mark after a backward-combining starter", "O\u09be\u031e\u0304", "O\u09be\u031e\u0304"},
		{"hangul jamo with marks", "\u1100\u1161\u11a8" + strings.Repeat("\u0301", 33), "\uac01" + strings.Repeat("\u0301", 33)},
		{"compatibility then composition", "\u1e9b\u0323", "\u1e69"},
		{"mark with no starter before it", "_\u0301A\u030a", "_\u0301\u00c5"},
		{"ligature", "\ufb01x", "fix"},
		{"fullwidth", "\uff45\uff56\uff41\uff4c", "eval"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, mod, err := Parse("t.py", []byte(tt.spelling+" = 1\n"))
			if err != nil {
				t.Fatal(err)
			}
			got := mod.Body[0].(*Assign).Targets[0].(*Name).ID
			if got != tt.want {
				t.Errorf("name %+q, want %+q", got, tt.want)
			}
		})
	}
}

// Position takes two routes to a column (counting from the line start, or
// from per-block totals on long lines); both must agree with counting the
// characters of the line one by one, at every offset.
func TestPositionMatchesCharacterCount(t *testing.T) {
	src := "a = 1\r\n" + strings.Repeat("é𝐞x", 900) + "\rb\n\n" + strings.Repeat("y", 3000) + "é\n"
	f := NewFile("t.py", []byte(src))
	line, col := 1, 1
	for off := 0; off <= len(src); off++ {
		if off > 0 {
			switch prev := src[off-1]; {
			case prev == '\n', prev == '\r' && (off >= len(src) || src[off] != '\n'):
				line, col = line+1, 1
			case off < len(src) && src[off]&0xC0 == 0x80:
				// inside a character
			default:
				col++
			}
		}
		if off < len(src) && src[off]&0xC0 == 0x80 {
			continue
		}
		if p := f.Position(off); p.Line != line || p.Col != col {
			t.Fatalf("Position(%d) = %d:%d, want %d:%d", off, p.Line, p.Col, line, col)
		}
	}
}

// checkStatements fails unless ParseStatements of src hands out the
// statements of mod (what Parse returned), each whole while it is handed
// out, or fails with Parse's error.
func checkStatements(t *testing.T, src []byte, mod *Module, err error) {
	t.Helper()
	var got []string
	_, serr := ParseStatements("fuzz.py", string(src), func(_ *File, s Stmt) { got = append(got, Dump(s)) })
	if fmt.Sprint(serr) != fmt.Sprint(err) {
		t.Fatalf("ParseStatements error %v, Parse error %v", serr, err)
	}
	if err != nil {
		return
	}
	if len(got) != len(mod.Body) {
		t.Fatalf("ParseStatements handed out %d statements, the module has %d", len(got), len(mod.Body))
	}
	for i, s := range mod.Body {
		if want := Dump(s); got[i] != want {
			t.Fatalf("statement %d handed out as\n%s\nparsed as\n%s", i, got[i], want)
		}
	}
}

func TestParseStatementsMatchesParse(t *testing.T) {
	entries, err := os.ReadDir("testdata/syntax")
	if err != nil {
		t.Fatal(err)
	}
	var srcs [][]byte
	for _, e := range entries {
		src, err := os.ReadFile(filepath.Join("testdata/syntax", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		srcs = append(srcs, src)
	}
	for _, sh := range pathologicalShapes {
		srcs = append(srcs, []byte(sh.gen(16<<10)))
	}
	// Enough statements that the parser drops tokens and reuses node
	// memory many times over.
	srcs = append(srcs, generatedTable(256<<10), []byte(strings.Repeat("def f(a, b=1):\n    return a.b[c](d) + e * 2\nx = f(1)\n", 4000)))
	for _, src := range srcs {
		_, mod, err := Parse("t.py", src)
		checkStatements(t, src, mod, err)
	}
}

// A lexical error is reported ahead of a syntax error earlier in the
// file, as when the whole file is tokenized before it is parsed, however
// far apart they are.
func TestLexicalErrorComesFirst(t *testing.T) {
	ok := strings.Repeat("x = 1\n", 5000)
	src := []byte(ok + "1 +\n" + ok + "z = 'abc\n")
	const want = "t.py:10002:5: syntax error: unterminated string literal (detected at line 10002)"
	if _, _, err := Parse("t.py", src); fmt.Sprint(err) != want {
		t.Errorf("Parse: %v, want %s", err, want)
	}
	if _, err := ParseStatements("t.py", string(src), func(*File, Stmt) {}); fmt.Sprint(err) != want {
		t.Errorf("ParseStatements: %v, want %s", err, want)
	}
	// Without the lexical error, the syntax error is the one.
	src = []byte(ok + "1 +\n" + ok)
	if _, _, err := Parse("t.py", src); err == nil || !strings.HasPrefix(err.Error(), "t.py:5001:4: ") {
		t.Errorf("Parse: %v, want the syntax error at 5001:4", err)
	}
}
