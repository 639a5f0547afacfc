package pyparse

import (
	"sort"
	"strings"
	"unicode/utf8"
)

// strings parses one or more adjacent string literals, which Python joins
// into a single constant (or a single f-string when any part is one).
func (p *parser) strings() Expr {
	start := p.exprStart()
	var parts []Expr
	var buf joiner // the whole value, when no part is an f-string
	isF, inexact := false, false
	kind := -1 // 0 str, 1 bytes
	// Adjacent literal text between replacement fields merges into one
	// constant.
	var pending joiner
	pendStart, pendEnd := 0, 0
	flushConst := func(s string, start, end int) {
		if s == "" {
			return
		}
		if pending.empty() {
			pendStart = start
		}
		pending.add(s)
		pendEnd = end
	}
	endConst := func() {
		if !pending.empty() {
			parts = append(parts, &Constant{Loc: Loc{pendStart, pendEnd}, Kind: ConstStr, Str: pending.String()})
			pending.reset()
		}
	}
	for {
		t := p.tok()
		if t.kind == tString {
			val, isBytes, inx := p.decodeString(t)
			k := 0
			if isBytes {
				k = 1
			}
			if kind >= 0 && k != kind {
				p.fail("cannot mix bytes and nonbytes literals")
			}
			kind = k
			inexact = inexact || inx
			buf.add(val)
			if kind == 0 {
				flushConst(val, int(t.start), int(t.end))
			}
			p.advance()
			continue
		}
		if t.kind == tFStart {
			if kind == 1 {
				p.fail("cannot mix bytes and nonbytes literals")
			}
			kind = 0
			isF = true
			for _, part := range p.fstring() {
				if c, ok := part.(*Constant); ok {
					inexact = inexact || c.Inexact
					flushConst(c.Str, c.Start, c.End)
					continue
				}
				endConst()
				parts = append(parts, part)
			}
			continue
		}
		break
	}
	loc := Loc{start, p.prevEnd()}
	if !isF {
		// Without an f-string the parts are not used: buf holds the value.
		k := ConstStr
		if kind == 1 {
			k = ConstBytes
		}
		return p.newConstant(Constant{Loc: loc, Kind: k, Str: buf.String(), Inexact: inexact})
	}
	endConst()
	for _, part := range parts {
		if c, ok := part.(*Constant); ok {
			c.Inexact = inexact
		}
	}
	return &JoinedStr{loc, parts}
}

// joiner concatenates adjacent literal pieces in linear time. A lone
// piece is kept as it is, without a copy: it is often a slice of the
// source, or the debug text of a nested f-string field, which every
// enclosing level would otherwise copy again. A second piece starts one
// builder that all later pieces append to.
type joiner struct {
	first string
	b     strings.Builder
	n     int
}

func (j *joiner) add(s string) {
	switch j.n {
	case 0:
		j.first = s
	case 1:
		j.b.Grow(len(j.first) + len(s))
		j.b.WriteString(j.first)
		j.b.WriteString(s)
	default:
		j.b.WriteString(s)
	}
	j.n++
}

func (j *joiner) empty() bool { return j.n == 0 }

func (j *joiner) String() string {
	if j.n <= 1 {
		return j.first
	}
	return j.b.String()
}

func (j *joiner) reset() {
	j.first, j.n = "", 0
	j.b.Reset()
}

// fstring parses one f-string from its start token to its end token.
func (p *parser) fstring() []Expr {
	st := p.advance()
	prefix := strings.ToLower(p.f.Src[st.start:st.end])
	raw := strings.Contains(strings.TrimRight(prefix, "'\""), "r")
	p.enter()
	defer p.leave()
	var parts []Expr
	for {
		t := p.tok()
		switch {
		case t.kind == tFEnd:
			p.advance()
			return parts
		case t.kind == tFMiddle:
			val, inx := p.decodeFText(t, raw, true)
			parts = append(parts, &Constant{Loc: Loc{int(t.start), int(t.end)}, Kind: ConstStr, Str: val, Inexact: inx})
			p.advance()
		case p.opIs(t, "{"):
			parts = append(parts, p.fstringField(raw)...)
		default:
			p.invalid()
		}
	}
}

// fstringField parses `{expr[=][!conv][:spec]}`; a debug `=` adds the
// expression text before the value, as Python does.
func (p *parser) fstringField(raw bool) []Expr {
	lb := p.advance()
	if p.isOp("}") {
		p.fail("f-string: valid expression required before '}'")
	}
	var e Expr
	if p.isKw("yield") {
		e = p.yieldExpr()
	} else {
		e = p.starExpressions()
	}
	var out []Expr
	fv := &FormattedValue{Value: e}
	if p.isOp("=") {
		p.advance()
		textEnd := int(p.tok().start)
		text := p.lfSpan(int(lb.end), textEnd)
		out = append(out, &Constant{Loc: Loc{int(lb.end), textEnd}, Kind: ConstStr, Str: text})
	}
	debug := len(out) > 0
	if p.isOp("!") {
		bang := p.advance()
		t := p.tok()
		if t.kind != tName || t.start != bang.end {
			p.fail("f-string: conversion type must come right after the exclamation mark")
		}
		switch p.text(t) {
		case "s", "r", "a":
			fv.Conversion = rune(p.text(t)[0])
		default:
			p.fail("f-string: invalid conversion character %q: expected 's', 'r', or 'a'", p.text(t))
		}
		p.advance()
	}
	if p.isOp(":") {
		colon := p.advance()
		spec := &JoinedStr{}
		for !p.isOp("}") {
			t := p.tok()
			switch {
			case t.kind == tFMiddle:
				val, inx := p.decodeFText(t, raw, false)
				spec.Values = append(spec.Values, &Constant{Loc: Loc{int(t.start), int(t.end)}, Kind: ConstStr, Str: val, Inexact: inx})
				p.advance()
			case p.opIs(t, "{"):
				spec.Values = append(spec.Values, p.fstringField(raw)...)
			default:
				p.fail("f-string: expecting '}'")
			}
		}
		spec.Loc = Loc{int(colon.end), int(p.tok().start)}
		fv.FormatSpec = spec
	}
	if !p.isOp("}") {
		p.fail("f-string: expecting '}'")
	}
	p.advance()
	if debug && fv.Conversion == 0 && fv.FormatSpec == nil {
		fv.Conversion = 'r'
	}
	fv.Loc = Loc{int(lb.start), p.prevEnd()}
	return append(out, fv)
}

// lfText is the whole source with every line ending read as "\n", as
// CPython's tokenizer reads it. Debug fields (`{x=}`) keep their source
// text, and nested ones overlap: f"{f'{f'{...=}'=}'=}" has each level's
// text contain all the levels inside it. Normalizing each span on its own
// would copy the innermost text once per level; slicing one normalized
// copy costs nothing per level.
type lfText struct {
	text string
	crlf []int // offsets of the '\r' of each "\r\n" pair, ascending
}

func newLFText(src string) *lfText {
	t := &lfText{}
	var b strings.Builder
	b.Grow(len(src))
	for i := 0; i < len(src); i++ {
		c := src[i]
		if c == '\r' {
			if i+1 < len(src) && src[i+1] == '\n' {
				t.crlf = append(t.crlf, i)
				continue // the '\n' that follows is written next
			}
			c = '\n'
		}
		b.WriteByte(c)
	}
	t.text = b.String()
	return t
}

// offset maps an offset of the source into text: each "\r\n" before it
// lost a byte.
func (t *lfText) offset(off int) int { return off - sort.SearchInts(t.crlf, off) }

// lfSpan returns the source text of [start, end) with normalized line
// endings, sharing memory with the source or its one normalized copy.
func (p *parser) lfSpan(start, end int) string {
	if !p.lfChecked {
		p.lfChecked = true
		if strings.IndexByte(p.f.Src, '\r') >= 0 {
			p.lf = newLFText(p.f.Src)
		}
	}
	if p.lf == nil {
		return p.f.Src[start:end]
	}
	return p.lf.text[p.lf.offset(start):p.lf.offset(end)]
}

func normalizeNewlines(s string) string {
	if !strings.Contains(s, "\r") {
		return s
	}
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return strings.ReplaceAll(s, "\r", "\n")
}

// decodeString returns the value of a plain (non-f) string token.
func (p *parser) decodeString(t *token) (val string, isBytes, inexact bool) {
	text := p.f.Src[t.start:t.end]
	q := 0 // the opening quote, after a prefix of at most two letters
	for text[q] != '\'' && text[q] != '"' {
		q++
	}
	prefix := strings.ToLower(text[:q])
	body := text[q:]
	n := 1
	if len(body) >= 6 && body[1] == body[0] && body[2] == body[0] {
		n = 3
	}
	body = body[n : len(body)-n]
	if t.aux&strCR != 0 {
		body = normalizeNewlines(body)
	}
	isBytes = strings.Contains(prefix, "b")
	if isBytes {
		for i := 0; i < len(body); i++ {
			if body[i] >= utf8.RuneSelf {
				p.fail("bytes can only contain ASCII literal characters")
			}
		}
	}
	if strings.Contains(prefix, "r") || t.aux&strEscape == 0 {
		return body, isBytes, false
	}
	val, inexact = p.unescape(t, body, isBytes)
	return val, isBytes, inexact
}

// decodeFText returns the value of literal f-string text: escapes are
// processed unless raw, and outside format specs doubled braces collapse.
func (p *parser) decodeFText(t *token, raw, literal bool) (string, bool) {
	body := normalizeNewlines(p.f.Src[t.start:t.end])
	if literal {
		body = strings.ReplaceAll(strings.ReplaceAll(body, "{{", "{"), "}}", "}")
	}
	if raw {
		return body, false
	}
	return p.unescape(t, body, false)
}

// maxCharName is the length of the longest character name in the Unicode
// database of CPython 3.11 (Unicode 14.0.0; name aliases are shorter).
const maxCharName = 88

// plausibleCharName is the check a \N{...} name gets in place of the
// Unicode name table, which we do not carry: no longer than the longest
// name, and spelled as names are (letters, digits, single spaces and
// hyphens; CPython matches letters in either case). A name that passes
// may still be unknown to CPython, so the literal stays inexact.
func plausibleCharName(name string) bool {
	if name == "" || len(name) > maxCharName || name[0] == ' ' || name[len(name)-1] == ' ' || strings.Contains(name, "  ") {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == ' ' || c == '-') {
			return false
		}
	}
	return true
}

func hexVal(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// unescape processes backslash escapes the way Python's string and bytes
// literals do. Unknown escapes keep their backslash. \N{name} is marked
// inexact: the value stands in U+FFFD for the named character.
func (p *parser) unescape(t *token, body string, isBytes bool) (string, bool) {
	if !strings.Contains(body, "\\") {
		return body, false
	}
	var b strings.Builder
	inexact := false
	put := func(r int) {
		if isBytes {
			b.WriteByte(byte(r))
			return
		}
		if r >= 0xD800 && r <= 0xDFFF {
			inexact = true
			r = utf8.RuneError
		}
		b.WriteRune(rune(r))
	}
	for i := 0; i < len(body); i++ {
		c := body[i]
		if c != '\\' || i+1 >= len(body) {
			b.WriteByte(c)
			continue
		}
		i++
		d := body[i]
		switch d {
		case '\n':
		case '\\', '\'', '"':
			b.WriteByte(d)
		case 'a':
			b.WriteByte(7)
		case 'b':
			b.WriteByte(8)
		case 'f':
			b.WriteByte(12)
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'v':
			b.WriteByte(11)
		case '0', '1', '2', '3', '4', '5', '6', '7':
			v := int(d - '0')
			for k := 0; k < 2 && i+1 < len(body) && body[i+1] >= '0' && body[i+1] <= '7'; k++ {
				i++
				v = v*8 + int(body[i]-'0')
			}
			if isBytes {
				v &= 0xFF
			}
			put(v)
		case 'x', 'u', 'U':
			digits := 2
			switch d {
			case 'u':
				digits = 4
			case 'U':
				digits = 8
			}
			if isBytes && d != 'x' {
				b.WriteByte('\\')
				b.WriteByte(d)
				continue
			}
			v := 0
			for k := 0; k < digits; k++ {
				if i+1 >= len(body) || hexVal(body[i+1]) < 0 {
					p.failAt(int(t.start), "(unicode error) truncated \\%c escape", d)
				}
				i++
				v = v*16 + hexVal(body[i])
			}
			if v > 0x10FFFF {
				p.failAt(int(t.start), "(unicode error) illegal Unicode character")
			}
			put(v)
		case 'N':
			if isBytes {
				b.WriteString("\\N")
				continue
			}
			end := strings.IndexByte(body[i:], '}')
			if i+1 >= len(body) || body[i+1] != '{' || end < 0 {
				p.failAt(int(t.start), "(unicode error) malformed \\N character escape")
			}
			if !plausibleCharName(body[i+2 : i+end]) {
				p.failAt(int(t.start), "(unicode error) 'unicodeescape' codec can't decode \\N{...}: unknown Unicode character name")
			}
			i += end
			inexact = true
			b.WriteRune(utf8.RuneError)
		default:
			b.WriteByte('\\')
			b.WriteByte(d)
		}
	}
	return b.String(), inexact
}
