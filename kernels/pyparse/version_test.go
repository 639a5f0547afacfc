package pyparse

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// The worker interpreter is 3.11: source that only 3.12 accepts must be
// refused when parsed for 3.11, at the construct, and still parse for
// 3.12. Every case was checked against CPython 3.11, which refuses each
// of the first table and accepts each of the second.
func TestParseVersionRefusesNewerSyntax(t *testing.T) {
	tests := []struct {
		name, src, pos, msg string
	}{
		{"type statement", "type X = int\n", "1:1", "type statement (PEP 695) requires Python 3.12"},
		{"generic type alias", "type L[T] = list[T]\n", "1:1", "type statement (PEP 695) requires Python 3.12"},
		{"generic function", "def f[T](x: T) -> T:\n    return x\n", "1:6", "type parameter list (PEP 695) requires Python 3.12"},
		{"generic class", "class C[T]:\n    pass\n", "1:8", "type parameter list (PEP 695) requires Python 3.12"},
		{"generic async function", "async def f[T](): pass\n", "1:12", "type parameter list (PEP 695) requires Python 3.12"},
		{"same quote in field", "s = f'{x['k']}'\n", "1:10", "enclosing quote reused"},
		{"same double quote in field", "s = f\"{\"a\"}\"\n", "1:8", "enclosing quote reused"},
		{"same triple quote in field", "s = f'''{'''a'''}'''\n", "1:10", "enclosing quote reused"},
		{"nested same quote", "s = f'{f'{1}'}'\n", "1:9", "enclosing quote reused"},
		{"deep nesting by reuse", "s = f\"{f\"{f\"{f\"{f\"{1}\"}\"}\"}\"}\"\n", "1:9", "enclosing quote reused"},
		{"backslash in field", "s = f'{\"\\n\".join(x)}'\n", "1:9", "cannot include a backslash"},
		{"backslash in nested string", "s = f'''{\"a\\tb\"}'''\n", "1:12", "cannot include a backslash"},
		{"comment in field", "s = f'''{x # note\n}'''\n", "1:12", "cannot include '#'"},
		{"field spanning lines", "s = f'{x +\n1}'\n", "1:11", "spanning lines"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := ParseVersion("k.py", []byte(tt.src), Python311)
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("3.11: err = %v, want a syntax error", err)
			}
			if pos := fmt.Sprintf("%d:%d", se.Pos.Line, se.Pos.Col); pos != tt.pos || !strings.Contains(se.Msg, tt.msg) ||
				!strings.Contains(se.Msg, "the target is Python 3.11") {
				t.Errorf("3.11: %s %q, want %s and %q naming the target", pos, se.Msg, tt.pos, tt.msg)
			}
			if _, _, err := ParseVersion("k.py", []byte(tt.src), Python312); err != nil {
				t.Errorf("3.12: %v", err)
			}
		})
	}
}

func TestParseVersionAcceptsTargetSyntax(t *testing.T) {
	tests := map[string]string{
		"different quotes":              "s = f'{\"a\"}' + f\"{'b'}\"\n",
		"triple around single":          "s = f'''{'a'} {\"b\"}'''\n",
		"four levels":                   "s = f'''{f\"\"\"{f'{f\"{1}\"}'}\"\"\"}'''\n",
		"hash in spec":                  "s = f'{n:#x}'\n",
		"hash in nested string":         "s = f'{\"#\"}'\n",
		"nested spec field":             "s = f'{x!r:>{width}}'\n",
		"escape in literal part":        "s = f'a\\n{x}\\t'\n",
		"quote escaped in literal part": "s = f'it\\'s {x}'\n",
		"debug field":                   "s = f'{x = }'\n",
		"continued line, CRLF":          "s = f'ab\\\r\ncd{x}'\r\n",
		"continued line, CR":            "s = f'ab\\\rcd{x}'\r",
		"multi-line triple field":       "s = f'''{x +\n1}'''\n",
		"type as a name":                "type = 1\nprint(type(type))\n",
		"subscript named type":          "type[int]\n",
		"match":                         "match x:\n    case [1, *r]: pass\n",
		"except star":                   "try:\n    pass\nexcept* ValueError:\n    pass\n",
	}
	for name, src := range tests {
		if _, _, err := ParseVersion("k.py", []byte(src), Python311); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// Type parameter defaults are 3.13 (PEP 696); Parse accepts them.
func TestTypeParameterDefaultsNeed313(t *testing.T) {
	src := []byte("def f[T = int](): pass\n")
	if _, _, err := ParseVersion("k.py", src, Python312); err == nil || !strings.Contains(err.Error(), "requires Python 3.13") {
		t.Errorf("3.12: err = %v, want a 3.13 requirement", err)
	}
	if _, _, err := Parse("k.py", src); err != nil {
		t.Errorf("Parse: %v", err)
	}
}

// CPython refuses what its compiler cannot convert, whatever the grammar
// version: decimal literals over sys.int_max_str_digits (4,300) digits,
// and \N{...} names that are no character name. Without the name table
// only implausible names are refused (longer than the longest name, or
// not spelled as names are); CPython refuses each "refused" case below and
// accepts each "accepted" one.
func TestLiteralsCPythonCannotConvert(t *testing.T) {
	long := strings.Repeat("A", maxCharName+1)
	tests := []struct {
		name, src string
		refused   bool
	}{
		{"4,301 digits", "x = 1" + strings.Repeat("0", 4300) + "\n", true},
		{"4,301 digits with underscores", "x = " + strings.Repeat("1_", 4300) + "1\n", true},
		{"4,300 digits", "x = 1" + strings.Repeat("0", 4299) + "\n", false},
		{"5,000 zeros", "x = " + strings.Repeat("0", 5000) + "\n", false},
		{"5,000 hex digits", "x = 0x" + strings.Repeat("f", 5000) + "\n", false},
		{"5,000 digit float", "x = 1" + strings.Repeat("0", 5000) + ".0\n", false},
		{"5,000 digit imaginary", "x = 1" + strings.Repeat("0", 5000) + "j\n", false},
		{"overlong character name", "x = '\\N{" + long + "}'\n", true},
		{"overlong name in an f-string", "x = f'\\N{" + long + "}{1}'\n", true},
		{"underscore in a name", "x = '\\N{bad_name}'\n", true},
		{"double space in a name", "x = '\\N{EM  DASH}'\n", true},
		{"leading space in a name", "x = '\\N{ EM DASH}'\n", true},
		{"known name", "x = '\\N{EM DASH}' + '\\N{latin small letter a}'\n", false},
		{"bytes keep \\N", "x = b'\\N{" + long + "}'\n", false},
		{"raw keeps \\N", "x = r'\\N{" + long + "}'\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := Parse("k.py", []byte(tt.src))
			if (err != nil) != tt.refused {
				t.Errorf("err = %v, want refused %v", err, tt.refused)
			}
		})
	}
}
