package pyparse

import (
	"fmt"
	"strings"
)

// A pathological shape is a family of sources an attacker could grow up
// to the 8 MiB inspectable-file limit, each stressing one part of the
// lexer or parser: one huge construct where ordinary code has many small
// ones. Every generated source is valid Python 3.12, so the whole input is
// read rather than stopping at an early syntax error.
type shape struct {
	name string
	gen  func(size int) string
}

// fill repeats unit (formatted with its index when it holds a %d verb)
// between head and tail until the source reaches about size bytes.
func fill(head, unit, tail string, size int) string {
	var b strings.Builder
	b.Grow(size + len(tail) + 64)
	b.WriteString(head)
	indexed := strings.Contains(unit, "%d")
	for i := 0; b.Len() < size-len(tail); i++ {
		if indexed {
			fmt.Fprintf(&b, unit, i)
		} else {
			b.WriteString(unit)
		}
	}
	b.WriteString(tail)
	return b.String()
}

// nestedDebugFStrings nests triple-quoted f-strings with `=` debug fields
// around a CRLF-bearing payload of half the size. Each level's debug text
// spans every level inside it, and the depth grows with the size (up to
// CPython's 149 nested f-strings), so copying each level's text would grow
// with the square of the size.
func nestedDebugFStrings(size int) string {
	depth := min(149, max(4, size>>9))
	payload := "'''" + strings.Repeat("ab\r\n", max(1, size/8)) + "'''"
	unit := "x = " + strings.Repeat(`f"""{`, depth) + payload + strings.Repeat(`=}"""`, depth) + "\r\n"
	return fill("", unit, "", size)
}

// indentStack opens 99 nested blocks (one below CPython's limit of 100
// indentation levels) and drops back to column 0, repeatedly.
func indentStack(size int) string {
	var unit strings.Builder
	for i := 0; i < 99; i++ {
		unit.WriteString(strings.Repeat(" ", i))
		unit.WriteString("if a:\n")
	}
	unit.WriteString(strings.Repeat(" ", 99) + "pass\n")
	return fill("", unit.String(), "", size)
}

// nestedFStringFields puts a long run of replacement fields inside f-strings
// nested 99 levels deep, where the lexer must know how deep it is for every
// field it opens.
func nestedFStringFields(size int) string {
	const depth = 99
	head := "x = " + strings.Repeat(`f"{`, depth) + `f"`
	tail := `"` + strings.Repeat(`}"`, depth) + "\n"
	return fill(head, "{a:>{w}}", tail, size)
}

var pathologicalShapes = []shape{
	// Implicit concatenation: Python joins adjacent literals into one
	// constant, so each piece must be appended, not the whole re-copied.
	{"adjacent-strings", func(n int) string { return fill("x = ", `"abcdefgh" `, "\n", n) }},
	{"adjacent-strings-lines", func(n int) string { return fill("x = (\n", "    \"abcdefgh\"\n", ")\n", n) }},
	{"adjacent-bytes", func(n int) string { return fill("x = ", `b"abcdefgh" `, "\n", n) }},
	{"adjacent-escapes", func(n int) string { return fill("x = ", `"\x41\u00e9\N{BULLET}\n" `, "\n", n) }},
	{"adjacent-fstrings", func(n int) string { return fill("x = ", `"ab" f"{a}cd{b!r}" `, "\n", n) }},
	{"string-prefixes", func(n int) string {
		return fill("", `x = r"a" u"a" R"a" U"a" f"a" F"a" fr"a" Rf"a" rF"a" FR"a"`+"\n"+`y = b"a" B"a" br"a" Rb"a" bR"a" RB"a"`+"\n", "", n)
	}},
	{"triple-quoted-quotes", func(n int) string { return fill(`x = """`, `" "" \" `, `"""`+"\n", n) }},
	{"triple-quoted-fstring-quotes", func(n int) string { return fill(`x = f"""`, `" "" {a} `, `"""`+"\n", n) }},

	// One very long logical line.
	{"long-list", func(n int) string { return fill("x = [", "1, ", "]\n", n) }},
	{"long-dict", func(n int) string { return fill("x = {", "a: b, ", "}\n", n) }},
	{"long-call-keywords", func(n int) string { return fill("f(", "a%d=1, ", ")\n", n) }},
	{"backslash-continuation", func(n int) string { return fill("x = a", " + \\\n    a", "\n", n) }},

	// Long left-associative chains build trees as deep as they are long.
	{"attribute-chain", func(n int) string { return fill("x = a", ".b", "\n", n) }},
	{"call-chain", func(n int) string { return fill("x = f", "()", "\n", n) }},
	{"subscript-chain", func(n int) string { return fill("x = a", "[0]", "\n", n) }},
	{"binop-chain", func(n int) string { return fill("x = a", " + a * a - a", "\n", n) }},
	{"compare-chain", func(n int) string { return fill("x = a", " < a", "\n", n) }},
	{"boolop-chain", func(n int) string { return fill("x = a", " or a and a", "\n", n) }},
	{"comprehension-clauses", func(n int) string { return fill("x = [a", " for a in b if c", "]\n", n) }},

	// Nesting at the limits, repeated.
	{"nested-brackets", func(n int) string {
		return fill("", "x = "+strings.Repeat("(", 199)+"1"+strings.Repeat(")", 199)+"\n", "", n)
	}},
	{"nested-brackets-long-inner", func(n int) string {
		return fill("x = "+strings.Repeat("[", 199), "a, ", strings.Repeat("]", 199)+"\n", n)
	}},
	{"indent-stack", indentStack},
	{"nested-fstring-fields", nestedFStringFields},
	{"nested-debug-fstrings-crlf", nestedDebugFStrings},

	// Many small things.
	{"tiny-statements", func(n int) string { return fill("", "a\n", "", n) }},
	{"tiny-statements-semicolons", func(n int) string { return fill("", "a;", "a\n", n) }},
	{"tiny-statements-crlf", func(n int) string { return fill("", "a = 1\r\n", "", n) }},
	{"blank-and-comment-lines", func(n int) string { return fill("", "\n    # c\n\t\n", "x = 1\n", n) }},
	{"elif-chain", func(n int) string { return fill("if a: pass\n", "elif a: pass\n", "else: pass\n", n) }},
	{"decorators", func(n int) string { return fill("", "@d\n", "def f(): pass\n", n) }},
	{"decorator-calls", func(n int) string { return fill("", "@a.b(c, d=e)\n", "class C: pass\n", n) }},
	{"fstring-fields", func(n int) string { return fill(`x = f"`, `{a}{b!r}{c:>{w}}{d=}`, `"`+"\n", n) }},
	{"def-parameters", func(n int) string { return fill("def f(", "a%d: int = 1, ", "): pass\n", n) }},
	{"lambda-parameters", func(n int) string { return fill("f = lambda ", "a%d, ", ": 0\n", n) }},
	{"match-cases", func(n int) string { return fill("match x:\n", "    case [1, *r] | {'k': 2} if r: pass\n", "", n) }},
	{"with-tuple-speculation", func(n int) string { return fill("", "with (a, b) as c: pass\n", "", n) }},
	{"from-import-names", func(n int) string { return fill("from m import (", "a%d as b, ", ")\n", n) }},
	{"dotted-import", func(n int) string { return fill("import a", ".b", "\n", n) }},
	{"dotted-from-import", func(n int) string { return fill("from a", ".b", " import c\n", n) }},
	{"global-names", func(n int) string { return fill("def f():\n    global a", ", a", "\n", n) }},

	// Identifiers.
	{"long-identifier", func(n int) string { return fill("x = a", "bcdefghij", "\n", n) }},
	{"long-unicode-identifier", func(n int) string { return fill("x = é", "ｅｖａｌ", "\n", n) }},
	{"combining-marks-identifier", func(n int) string { return fill("x = a", "\u0301\u0323", "\n", n) }},
	{"unicode-identifiers", func(n int) string { return fill("", "ｅｖａｌ%d = ℌ + ﬁ\n", "", n) }},
}
