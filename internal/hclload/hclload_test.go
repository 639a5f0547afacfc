package hclload

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

func refusedWith(t *testing.T, diags hcl.Diagnostics, want Limit) *hcl.Diagnostic {
	t.Helper()
	if len(diags) != 1 {
		t.Fatalf("diagnostics = %v, want one %s refusal", diags, want)
	}
	if got, ok := LimitOf(diags[0]); !ok || got != want {
		t.Fatalf("limit = %q, %v; want %q (%v)", got, ok, want, diags)
	}
	if !strings.HasPrefix(diags.Error(), "f.hcl:") {
		t.Errorf("error %q does not name the file", diags.Error())
	}
	return diags[0]
}

// A file of 100k nested brackets used to crash hclsyntax's recursive
// parser with an unrecoverable stack overflow. Check refuses it first,
// at the bracket that crosses the limit.
func TestCheckRefusesDeepNesting(t *testing.T) {
	const n = 100_000
	for _, tt := range []struct {
		name string
		src  string
		col  int // column of the refused opener on line 2
	}{
		{"brackets", "x = 1\ny = " + strings.Repeat("[", n) + strings.Repeat("]", n) + "\n", 5 + MaxDepth},
		{"braces", "x = 1\ny = " + strings.Repeat("{a=", n) + "1" + strings.Repeat("}", n) + "\n", 5 + 3*MaxDepth},
		{"parentheses", "x = 1\ny = " + strings.Repeat("(", n) + "1" + strings.Repeat(")", n) + "\n", 5 + MaxDepth},
		{"blocks", "x = 1\n" + strings.Repeat("b{", n) + strings.Repeat("}", n) + "\n", 2*MaxDepth + 2},
		{"interpolations", "x = 1\ny = " + strings.Repeat(`"${`, n) + "1" + strings.Repeat(`}"`, n) + "\n", 0},
		{"negations", "x = 1\ny = " + strings.Repeat("!", n) + "true\n", 5 + MaxDepth},
		{"unary minus", "x = 1\ny = " + strings.Repeat("- ", n) + "1\n", 5 + 2*MaxDepth},
		{"conditionals", "x = 1\ny = " + strings.Repeat("true ? 1 : ", n/10) + "1\n", 0},
		{"heredocs", "x = 1\ny = " + strings.Repeat("<<E\n${", n) + "1" + strings.Repeat("}\nE\n", n), 0},
		// A stray closer ends no frame.
		{"blocks after stray closers", "x = 1\n" + strings.Repeat("b {\n)\n]\n", n/10), 0},
		{"template if directives", "x = 1\ny = \"" + strings.Repeat("%{ if true }", n/20) + "\"\n", 6 + 12*(MaxDepth-2)},
		{"template for directives", "x = 1\ny = <<E\n" + strings.Repeat("%{~for v in w}", n/20) + "\nE\n", 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := refusedWith(t, Check([]byte(tt.src), "f.hcl"), LimitDepth)
			if tt.col > 0 && d.Subject.Start.Line != 2 {
				t.Errorf("line = %d, want 2", d.Subject.Start.Line)
			}
			if tt.col > 0 && d.Subject.Start.Column != tt.col {
				t.Errorf("column = %d, want %d", d.Subject.Start.Column, tt.col)
			}
		})
	}
}

// Brackets inside strings, comments and heredoc text are not nesting.
func TestCheckIgnoresBracketsInText(t *testing.T) {
	deep := strings.Repeat("[{(", 10_000)
	for _, src := range []string{
		`x = "` + deep + `"`,
		`x = "\"` + deep + `"`,
		`x = "$${` + deep + `"`,
		`x = "%%{` + deep + `"`,
		"# " + deep + "\nx = 1",
		"// " + deep + "\nx = 1",
		"/* " + deep + "\n" + deep + " */ x = 1",
		"x = <<EOF\n" + deep + "\n  EOF\ny = 1\n",
		"x = <<-EOF\n  " + deep + "\n  EOF\n",
		"x = [for a in [1] : \"" + deep + "\"]",
		"a-b = c-d\nx = a - b\ny = [1, -1]\nz = -1\nw = a != b\n",
		"x = \"" + strings.Repeat("%{if a}b%{else}c%{endif}", 1000) + "\"\n",
		"x = <<EOF\n" + strings.Repeat("%{for v in w}${v}%{endfor}\n", 1000) + "EOF\n",
	} {
		if diags := Check([]byte(src), "f.hcl"); diags.HasErrors() {
			t.Errorf("%.40q: %v", src, diags)
		}
		if _, diags := hclsyntax.ParseConfig([]byte(src), "f.hcl", hcl.InitialPos); diags.HasErrors() && !strings.Contains(src, "a-b") {
			t.Errorf("%.40q does not parse: %v", src, diags)
		}
	}
}

// Operators count only while their expression is unfinished: many short
// expressions, each with a few operators, are fine.
func TestCheckOperatorsEndWithTheirExpression(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 10_000; i++ {
		b.WriteString("x = [!a, -1, b ? -2 : !c]\n")
	}
	b.WriteString("y = {\n" + strings.Repeat("  k = -1\n", 1000) + "}\n")
	if diags := Check([]byte(b.String()), "f.hcl"); diags.HasErrors() {
		t.Fatal(diags)
	}
}

func TestCheckRefusesLargeFiles(t *testing.T) {
	src := bytes.Repeat([]byte("# padding\n"), MaxBytes/10+1)
	refusedWith(t, Check(src, "f.hcl"), LimitSize)
	if diags := Check(src[:MaxBytes], "f.hcl"); diags.HasErrors() {
		t.Fatalf("a file of exactly MaxBytes is refused: %v", diags)
	}

	fsys := fstest.MapFS{"big.hcl": {Data: src}, "ok.hcl": {Data: src[:MaxBytes]}}
	if _, err := ReadFile(fsys, "big.hcl"); err == nil || !strings.Contains(err.Error(), ErrTooLarge.Error()) {
		t.Fatalf("ReadFile of an oversized file: %v", err)
	}
	if data, err := ReadFile(fsys, "ok.hcl"); err != nil || len(data) != MaxBytes {
		t.Fatalf("ReadFile: %d bytes, %v", len(data), err)
	}
}

// Nested for expressions multiply the sizes of their collections: six
// levels over ten elements already build a million values.
func TestCheckExpressionsRefusesFor(t *testing.T) {
	for _, src := range []string{
		"x = [for a in [1, 2] : a]\n",
		"x = {for k, v in {a = 1} : k => v}\n",
		"x = \"%{for a in [1, 2]}${a}%{endfor}\"\n",
		"b {\n  c {\n    x = [[for a in [1] : a]]\n  }\n}\n",
	} {
		f, diags := hclsyntax.ParseConfig([]byte(src), "f.hcl", hcl.InitialPos)
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		d := CheckExpressions(f.Body, "concat")
		if len(d) == 0 {
			t.Fatalf("%q: not refused", src)
		}
		refusedWith(t, d[:1], LimitExpression)
	}
}

func TestCheckExpressionsFunctions(t *testing.T) {
	f, diags := hclsyntax.ParseConfig([]byte("x = concat(a.b, [\"c\"])\ny = upper(\"z\")\n"), "f.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	d := refusedWith(t, CheckExpressions(f.Body, "concat"), LimitExpression)
	if d.Subject.Start.Line != 2 || !strings.Contains(d.Detail, "upper()") {
		t.Errorf("refusal %v, want upper() on line 2", d)
	}
	if n := len(CheckExpressions(f.Body)); n != 2 {
		t.Errorf("with no functions allowed, %d refusals, want 2", n)
	}
}

// Every HCL file of the repository is far inside the limits.
func TestRepositoryFilesWithinLimits(t *testing.T) {
	if _, err := os.Stat(filepath.Join("..", "..", "MODULE.bazel")); err != nil {
		t.Skip("not run from the source tree")
	}
	n := 0
	err := filepath.WalkDir(filepath.Join("..", ".."), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules" || strings.HasPrefix(d.Name(), "bazel-")) {
			return filepath.SkipDir
		}
		if d.IsDir() || filepath.Ext(p) != ".hcl" || strings.Contains(p, "error-files") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		n++
		if diags := Check(src, p); diags.HasErrors() {
			t.Errorf("%v", diags)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 5 {
		t.Fatalf("found only %d HCL files", n)
	}
}
