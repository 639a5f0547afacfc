package fingerprint

import "testing"

// Pairs of Python sources that must (or must not) normalize alike.
func TestNormalizePython(t *testing.T) {
	cases := []struct {
		name string
		a, b string
		same bool
	}{
		{"comments and blank lines", "x = 1\n\n\n# c\ny = 2  # d\n", "x = 1\ny = 2\n", true},
		{"module, class and function docstrings", "'''m'''\nclass A:\n    \"c\"\n    def f(self):\n        r'''f'''\n        return 1\n", "class A:\n    def f(self):\n        return 1\n", true},
		{"a docstring-only body becomes pass", "def f():\n    '''doc'''\n", "def f():\n    pass\n", true},
		{"indentation width", "if a:\n    b()\n    if c:\n        d()\n", "if a:\n\tb()\n\tif c:\n\t\td()\n", true},
		{"line breaks inside brackets", "f(a, b)\n", "f(\n    a,\n    b,\n)\n", true},
		{"inline bodies and semicolons", "if a: b(); c()\nelse: d()\n", "if a:\n  b()\n  c()\nelse:\n  d()\n", true},
		{"elif chain", "if a:\n  x\nelif b:\n  y\nelse:\n  z\n", "if a: x\nelif b: y\nelse: z\n", true},
		{"string quotes, prefixes and concatenation", `s = 'a"b' "c"` + "\n", `s = "a\"bc"` + "\n", true},
		{"number spelling", "n = 0XFF + 1_000 + 1E3\n", "n = 0xff + 1000 + 1e3\n", true},
		{"trailing comma of a list", "v = [1, 2,]\n", "v = [1, 2]\n", true},
		{"one-element tuple keeps its comma", "v = (1,)\n", "v = (1)\n", false},
		{"subscript tuple keeps its comma", "v = x[1,]\n", "v = x[1]\n", false},
		{"a case pattern tuple keeps its comma", "match p:\n case (1,): pass\n", "match p:\n case (1): pass\n", false},
		{"operator change", "y = x * 2\n", "y = x / 2\n", false},
		{"constant change", "y = x * 2\n", "y = x * 3\n", false},
		{"block structure", "if a:\n  b()\nc()\n", "if a:\n  b()\n  c()\n", false},
		{"renamed identifier (not normalized)", "def f(x):\n  return x\n", "def f(y):\n  return y\n", false},
		{"f-strings are kept as written", `s = f"{x}"` + "\n", `s = f'{x}'` + "\n", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			na, err := NormalizePython("a.py", []byte(tc.a))
			if err != nil {
				t.Fatal(err)
			}
			nb, err := NormalizePython("b.py", []byte(tc.b))
			if err != nil {
				t.Fatal(err)
			}
			if (na == nb) != tc.same {
				t.Errorf("same %v, want %v:\n%s---\n%s", na == nb, tc.same, na, nb)
			}
		})
	}
	if _, err := NormalizePython("bad.py", []byte("def (:\n")); err == nil {
		t.Error("a syntax error normalized")
	}
}

func TestNormalizeCUDA(t *testing.T) {
	cases := []struct {
		name string
		a, b string
		same bool
	}{
		{"comments and whitespace", "int  x = 1; // one\n/* two\n lines */ int y=2;\n", "int x = 1;\nint y = 2;\n", true},
		{"directives keep their line", "#define N 4\nint a[N];\n", "#define N 4 int a[N];\n", false},
		{"directive spacing and continuation", "#  define  F(x) \\\n  ((x) + 1)\n", "#define F(x) ((x)+1)\n", true},
		{"comment markers in strings stay", `const char *s = "// not a comment";`, `const char *s = "";`, false},
		{"comment markers in raw strings stay", `auto s = R"x(/* a */)x";`, `auto s = R"x()x";`, false},
		{"character literals", `char c = '"'; int x; // "`, `char c = '"'; int x;`, true},
		{"maximal munch", "y = a - -b;", "y = a--b;", false},
		{"include header names", "#include <cuda/std/cstdint> // x\n", "# include <cuda/std/cstdint>\n", true},
		{"a continued line comment", "// one \\\nint hidden;\nint x;\n", "int x;\n", true},
		{"arithmetic change", "y = x * 2;", "y = x * 3;", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			na, nb := NormalizeCUDA([]byte(tc.a)), NormalizeCUDA([]byte(tc.b))
			if (na == nb) != tc.same {
				t.Errorf("same %v, want %v:\n%q\n%q", na == nb, tc.same, na, nb)
			}
		})
	}
}

// A dependency patch is reduced to its added and removed lines: context
// lines and hunk positions are the dependency's bytes.
func TestNormalizePatch(t *testing.T) {
	base := "--- a/flashinfer/data/csrc/fused_moe/x.cu\n+++ b/flashinfer/data/csrc/fused_moe/x.cu\n@@ -10,3 +10,3 @@\n int a;\n-  int b = 1;\n+  int b = 2; // faster\n int c;\n"
	moved := "diff --git a/flashinfer/data/csrc/fused_moe/x.cu b/flashinfer/data/csrc/fused_moe/x.cu\nindex 1..2 100644\n--- a/flashinfer/data/csrc/fused_moe/x.cu\n+++ b/flashinfer/data/csrc/fused_moe/x.cu\n@@ -40,3 +40,3 @@\n int other;\n-int b=1;\n+int b=2;\n int context;\n"
	changed := "--- a/flashinfer/data/csrc/fused_moe/x.cu\n+++ b/flashinfer/data/csrc/fused_moe/x.cu\n@@ -10,3 +10,3 @@\n int a;\n-  int b = 1;\n+  int b = 3;\n int c;\n"
	a, _ := normalizePatch([]byte(base))
	b, _ := normalizePatch([]byte(moved))
	c, _ := normalizePatch([]byte(changed))
	if a != b {
		t.Errorf("context and position changed the normalized patch:\n%s---\n%s", a, b)
	}
	if a == c {
		t.Errorf("an added line's change left the normalized patch unchanged:\n%s", a)
	}
}
