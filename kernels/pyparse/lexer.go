package pyparse

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The tokenizer follows CPython 3.12's: INDENT/DEDENT from a stack of
// indentation columns (tabs to multiples of 8, checked against a tab size
// of 1 to detect ambiguous mixes), implicit line joining inside brackets,
// and PEP 701 f-strings split into start/middle/end tokens with ordinary
// tokens for each replacement field, so expressions nested in f-strings
// are parsed, and scanned, like any other code.

type tokKind uint8

const (
	tEnd tokKind = iota // ENDMARKER
	tNewline
	tIndent
	tDedent
	tName
	tNumber
	tString
	tFStart
	tFMiddle
	tFEnd
	tOp
)

var tokNames = [...]string{"end of file", "newline", "indent", "dedent", "name", "number", "string", "f-string start", "f-string text", "f-string end", "operator"}

func (k tokKind) String() string { return tokNames[k] }

// token holds no pointers, so the token slice of a large file is neither
// zeroed as a pointer array nor scanned by the collector. The text of an
// operator or an ASCII name is the source between start and end; the
// NFKC-normalized text of a non-ASCII name is kept in the lexer's raws.
type token struct {
	start, end int32
	// aux indexes raws for a raw NAME.
	aux  int32
	kind tokKind
	raw  bool // a NAME spelled with non-ASCII characters (never a keyword)
	kw   bool // a NAME that is one of the hard keywords (never raw)
}

const (
	maxParenDepth   = 200  // CPython's tokenizer limit ("too many nested parentheses")
	maxIndentDepth  = 100  // CPython's tokenizer limit ("too many levels of indentation")
	maxFSpecDepth   = 2    // CPython rejects format specs nested deeper ("expressions nested too deeply")
	maxIntDigits    = 4300 // sys.int_max_str_digits' default (3.11 on): the most digits of a decimal int literal
	maxFStringDepth = 149  // CPython's tokenizer mode stack holds 150 modes ("too many nested f-strings")
)

type lexMode uint8

const (
	mCode     lexMode = iota
	mFLiteral         // literal text of an f-string
	mFExpr            // expression of a replacement field
	mFSpec            // format spec of a replacement field
)

type modeEntry struct {
	mode   lexMode
	quote  byte
	triple bool
	raw    bool
	depth  int // mFExpr: len(parens) once the field's '{' is pushed
	start  int // offset of the f-string start, for unterminated errors
	body   int // mFLiteral: offset after the opening quotes; mFExpr: of the field's expression
	// specs counts the format specs open around this entry within its own
	// f-string: CPython limits that nesting per f-string, and keeping the
	// count here answers it in constant time for every field opened.
	specs int
}

type paren struct {
	ch    byte
	pos   int
	field bool // the '{' opening an f-string replacement field
}

type lexer struct {
	src       string
	file      *File
	pos       int
	toks      []token
	raws      []string // NFKC-normalized text of the raw names, by token aux
	indents   []int
	alts      []int
	parens    []paren
	modes     []modeEntry
	fstrings  int // f-strings open around the current position
	lineStart bool
	version   Version
	done      bool // the end of the source is tokenized
}

type lexError struct{ err *SyntaxError }

func (l *lexer) fail(off int, format string, args ...any) {
	panic(lexError{&SyntaxError{File: l.file.Name, Pos: l.file.Position(off), Msg: fmt.Sprintf(format, args...)}})
}

// emit appends a token of kind k over src[start:end]; an operator's or a
// name's text is those bytes.
func (l *lexer) emit(k tokKind, start, end int) {
	l.push(token{kind: k, start: int32(start), end: int32(end)})
}

// push appends a token, doubling the slice when it is full. Ordinary code
// has a token every four or five bytes, but a file may be one long string
// (a token in megabytes) or a run of one-byte tokens, so no size fits all
// up front: starting small and doubling keeps both within twice the room
// their tokens need.
func (l *lexer) push(t token) {
	if len(l.toks) == cap(l.toks) {
		grown := make([]token, len(l.toks), 2*cap(l.toks)+64)
		copy(grown, l.toks)
		l.toks = grown
	}
	l.toks = append(l.toks, t)
}

func (l *lexer) top() *modeEntry { return &l.modes[len(l.modes)-1] }

// newLexer starts tokenizing f's source. It checks what CPython checks
// before tokenizing: NUL bytes, valid UTF-8 and a UTF-8 encoding
// declaration (any other declared encoding would make CPython read the
// bytes differently from us, so it is refused rather than guessed).
//
// The tokens are made as the parser asks for them (more), not all up
// front: the parser drops those of each top-level statement once it is
// parsed, so the buffer stays small and warm in the cache however large
// the file. Errors keep the order a whole-file tokenization gives them:
// a lexical error anywhere in the file is the one reported, ahead of a
// syntax error the parser found earlier in the file (see drain).
func newLexer(f *File, v Version) (l *lexer, err error) {
	l = &lexer{src: f.Src, file: f, version: v, indents: []int{0}, alts: []int{0}, lineStart: true,
		modes: []modeEntry{{mode: mCode}}, toks: make([]token, 0, min(len(f.Src)/16+64, tokenWindow))}
	defer func() {
		if r := recover(); r != nil {
			le, ok := r.(lexError)
			if !ok {
				panic(r)
			}
			l, err = nil, le.err
		}
	}()
	l.checkSource()
	return l, nil
}

// tokenWindow is about how many tokens the parser keeps: the ones of the
// top-level statement it is in, at least, and what the lexer made ahead.
const tokenWindow = 4096

// more tokenizes until at least n tokens are buffered or the source is
// done. A lexical error panics with lexError.
func (l *lexer) more(n int) {
	if !l.done {
		l.run(n)
	}
}

// drain tokenizes the rest of the source, dropping the tokens, and
// returns the first lexical error in it.
func (l *lexer) drain() (err error) {
	defer func() {
		if r := recover(); r != nil {
			le, ok := r.(lexError)
			if !ok {
				panic(r)
			}
			err = le.err
		}
	}()
	for !l.done {
		l.toks = l.toks[:copy(l.toks, l.toks[max(0, len(l.toks)-1):])]
		l.run(tokenWindow)
	}
	return nil
}

func (l *lexer) checkSource() {
	s := l.src
	if len(s) >= 1<<31-1 {
		l.fail(0, "source file too large")
	}
	if i := strings.IndexByte(s, 0); i >= 0 {
		l.fail(i, "source code cannot contain null bytes")
	}
	// The library's check is fast on valid text; only an invalid source
	// is walked again to find where.
	valid := utf8.ValidString(s)
	for i := 0; !valid && i < len(s); {
		if s[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n <= 1 {
			l.fail(i, "invalid UTF-8 byte 0x%02x in source", s[i])
		}
		i += n
	}
	if strings.HasPrefix(s, "\ufeff") {
		l.pos = 3
	}
	// A coding declaration counts on line 1, or on line 2 when line 1 is
	// blank or a comment.
	first, rest := cutLine(s[l.pos:])
	base := l.pos
	if enc, ok := codingCookie(first); ok {
		l.checkEncoding(base, enc)
	} else if isBlankOrComment(first) {
		second, _ := cutLine(rest)
		if enc, ok := codingCookie(second); ok {
			l.checkEncoding(base+len(first), enc)
		}
	}
}

func cutLine(s string) (line, rest string) {
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' || s[i] == '\r' {
			j := i + 1
			if s[i] == '\r' && j < len(s) && s[j] == '\n' {
				j++
			}
			return s[:j], s[j:]
		}
	}
	return s, ""
}

func isBlankOrComment(line string) bool {
	t := strings.TrimLeft(line, " \t\f")
	return t == "" || t[0] == '#' || t[0] == '\n' || t[0] == '\r'
}

// codingCookie matches CPython's `^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)`.
func codingCookie(line string) (string, bool) {
	t := strings.TrimLeft(line, " \t\f")
	if !strings.HasPrefix(t, "#") {
		return "", false
	}
	i := strings.Index(t, "coding")
	for i >= 0 {
		j := i + len("coding")
		if j < len(t) && (t[j] == ':' || t[j] == '=') {
			k := j + 1
			for k < len(t) && (t[k] == ' ' || t[k] == '\t') {
				k++
			}
			e := k
			for e < len(t) && (t[e] == '-' || t[e] == '_' || t[e] == '.' || isASCIIAlnum(t[e])) {
				e++
			}
			if e > k {
				return t[k:e], true
			}
		}
		next := strings.Index(t[i+1:], "coding")
		if next < 0 {
			break
		}
		i += 1 + next
	}
	return "", false
}

func (l *lexer) checkEncoding(off int, enc string) {
	e := strings.ReplaceAll(strings.ToLower(enc), "_", "-")
	switch {
	case e == "utf-8", e == "utf8", e == "u8", e == "utf", strings.HasPrefix(e, "utf-8-"):
		return
	}
	l.fail(off, "source encoding %q is not supported: only UTF-8 sources are accepted", enc)
}

func isASCIIAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// run tokenizes until at least n tokens are buffered or the source is
// done.
func (l *lexer) run(n int) {
	for len(l.toks) < n {
		m := l.top()
		switch m.mode {
		case mFLiteral, mFSpec:
			l.lexFStringText()
			continue
		}
		if l.lineStart && len(l.parens) == 0 {
			if l.indentation() {
				continue
			}
		}
		l.skipSpace()
		if l.pos >= len(l.src) {
			l.finish()
			l.done = true
			return
		}
		c := l.src[l.pos]
		switch {
		case c == '#':
			if l.fstrings > 0 && l.version < Python312 {
				l.fail(l.pos, "f-string expression part cannot include '#' before Python 3.12; the target is Python 3.%d", l.version)
			}
			for l.pos < len(l.src) && l.src[l.pos] != '\n' && l.src[l.pos] != '\r' {
				l.pos++
			}
		case c == '\n' || c == '\r':
			start := l.pos
			l.skipNewline()
			if len(l.parens) == 0 {
				l.emit(tNewline, start, l.pos)
				l.lineStart = true
			}
		case c == '\\':
			start := l.pos
			l.pos++
			if l.pos >= len(l.src) {
				l.fail(start, "unexpected EOF while parsing")
			}
			if l.src[l.pos] != '\n' && l.src[l.pos] != '\r' {
				l.fail(start, "unexpected character after line continuation character")
			}
			l.skipNewline()
			if l.pos >= len(l.src) {
				l.fail(start, "unexpected EOF while parsing")
			}
		case c >= '0' && c <= '9' || c == '.' && l.pos+1 < len(l.src) && isDigit(l.src[l.pos+1]):
			l.lexNumber()
		case c == '"' || c == '\'':
			l.lexString(l.pos, l.pos)
		case isASCIIIdentStart(c) || c >= utf8.RuneSelf:
			l.lexNameOrString()
		default:
			l.lexOp()
		}
	}
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isASCIIIdentStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_'
}

func (l *lexer) skipSpace() {
	for l.pos < len(l.src) {
		switch l.src[l.pos] {
		case ' ', '\t', '\f':
			l.pos++
		default:
			return
		}
	}
}

func (l *lexer) skipNewline() {
	if l.src[l.pos] == '\r' && l.pos+1 < len(l.src) && l.src[l.pos+1] == '\n' {
		l.pos += 2
		return
	}
	l.pos++
}

// indentation measures the indentation of a new logical line and emits
// INDENT/DEDENT tokens. It reports true when the line was blank or a
// comment and has been consumed without tokens.
func (l *lexer) indentation() bool {
	col, alt := 0, 0
	p := l.pos
	for p < len(l.src) {
		switch l.src[p] {
		case ' ':
			col++
			alt++
		case '\t':
			col = (col/8 + 1) * 8
			alt++
		case '\f':
			col, alt = 0, 0
		default:
			goto measured
		}
		p++
	}
measured:
	if p >= len(l.src) {
		l.pos = p
		return false // finish() emits the trailing tokens
	}
	switch l.src[p] {
	case '#', '\n', '\r':
		// Blank or comment-only lines never change indentation.
		for p < len(l.src) && l.src[p] != '\n' && l.src[p] != '\r' {
			p++
		}
		l.pos = p
		if p < len(l.src) {
			l.skipNewline()
		}
		return true
	case '\\':
		// A continuation line on its own keeps the indentation logic on
		// the following physical line, as CPython does.
	}
	l.lineStart = false
	l.pos = p
	top := l.indents[len(l.indents)-1]
	altTop := l.alts[len(l.alts)-1]
	switch {
	case col == top:
		if alt != altTop {
			l.fail(p, "inconsistent use of tabs and spaces in indentation")
		}
	case col > top:
		if alt <= altTop {
			l.fail(p, "inconsistent use of tabs and spaces in indentation")
		}
		if len(l.indents) >= maxIndentDepth {
			l.fail(p, "too many levels of indentation")
		}
		l.indents = append(l.indents, col)
		l.alts = append(l.alts, alt)
		l.emit(tIndent, p, p)
	default:
		for len(l.indents) > 1 && col < l.indents[len(l.indents)-1] {
			l.indents = l.indents[:len(l.indents)-1]
			l.alts = l.alts[:len(l.alts)-1]
			l.emit(tDedent, p, p)
		}
		if col != l.indents[len(l.indents)-1] {
			l.fail(p, "unindent does not match any outer indentation level")
		}
		if alt != l.alts[len(l.alts)-1] {
			l.fail(p, "inconsistent use of tabs and spaces in indentation")
		}
	}
	return false
}

func (l *lexer) finish() {
	if len(l.modes) > 1 {
		l.fail(l.top().start, "unterminated f-string literal")
	}
	if len(l.parens) > 0 {
		p := l.parens[len(l.parens)-1]
		l.fail(p.pos, "'%c' was never closed", p.ch)
	}
	end := len(l.src)
	if n := len(l.toks); n > 0 && l.toks[n-1].kind != tNewline && l.toks[n-1].kind != tDedent && l.toks[n-1].kind != tIndent {
		l.emit(tNewline, end, end)
	}
	for len(l.indents) > 1 {
		l.indents = l.indents[:len(l.indents)-1]
		l.emit(tDedent, end, end)
	}
	l.emit(tEnd, end, end)
}

func (l *lexer) lexNumber() {
	start := l.pos
	s := l.src
	digits := func(valid func(byte) bool) {
		// One or more digits, single underscores only between digits.
		if l.pos >= len(s) || !valid(s[l.pos]) {
			l.fail(l.pos, "invalid %s literal", numberWord(s[start:l.pos]))
		}
		for l.pos < len(s) {
			if valid(s[l.pos]) {
				l.pos++
				continue
			}
			if s[l.pos] == '_' && l.pos+1 < len(s) && valid(s[l.pos+1]) {
				l.pos += 2
				continue
			}
			break
		}
	}
	if s[l.pos] == '0' && l.pos+1 < len(s) && strings.IndexByte("xXoObB", s[l.pos+1]) >= 0 {
		kind := s[l.pos+1] | 0x20
		l.pos += 2
		if l.pos < len(s) && s[l.pos] == '_' {
			l.pos++
		}
		switch kind {
		case 'x':
			digits(func(c byte) bool { return isDigit(c) || c|0x20 >= 'a' && c|0x20 <= 'f' })
		case 'o':
			digits(func(c byte) bool { return c >= '0' && c <= '7' })
		case 'b':
			digits(func(c byte) bool { return c == '0' || c == '1' })
		}
		l.endNumber(start, false)
		return
	}
	isFloat := false
	if s[l.pos] != '.' {
		digits(isDigit)
	}
	intPart := s[start:l.pos]
	if l.pos < len(s) && s[l.pos] == '.' {
		isFloat = true
		l.pos++
		if l.pos < len(s) && isDigit(s[l.pos]) {
			digits(isDigit)
		}
	}
	if l.pos < len(s) && (s[l.pos] == 'e' || s[l.pos] == 'E') {
		save := l.pos
		l.pos++
		if l.pos < len(s) && (s[l.pos] == '+' || s[l.pos] == '-') {
			l.pos++
		}
		if l.pos < len(s) && isDigit(s[l.pos]) {
			digits(isDigit)
			isFloat = true
		} else {
			// `1else` and similar: the letter starts the next token.
			l.pos = save
		}
	}
	imag := false
	if l.pos < len(s) && (s[l.pos] == 'j' || s[l.pos] == 'J') {
		l.pos++
		imag = true
	}
	if !isFloat && !imag && len(intPart) > 1 && intPart[0] == '0' && strings.Trim(intPart, "0_") != "" {
		l.fail(start, "leading zeros in decimal integer literals are not permitted; use an 0o prefix for octal integers")
	}
	if !isFloat && !imag && len(intPart) > maxIntDigits {
		// CPython converts decimal literals with int(), which refuses more
		// than sys.int_max_str_digits digits (underscores do not count; a
		// literal of zeros never reaches it).
		if n := len(intPart) - strings.Count(intPart, "_"); n > maxIntDigits && strings.Trim(intPart, "0_") != "" {
			l.fail(start, "Exceeds the limit (%d digits) for integer string conversion: value has %d digits; use sys.set_int_max_str_digits() to increase the limit - Consider hexadecimal for huge integer literals to avoid decimal conversion limits.", maxIntDigits, n)
		}
	}
	l.endNumber(start, imag)
}

func numberWord(prefix string) string {
	switch strings.ToLower(prefix) {
	case "0x":
		return "hexadecimal"
	case "0o":
		return "octal"
	case "0b":
		return "binary"
	}
	return "decimal"
}

// numberFollowers are the keywords CPython still lets touch a number
// (`1if x else 2`); any other identifier character is an error.
var numberFollowers = []string{"and", "else", "for", "if", "in", "is", "not", "or"}

func (l *lexer) endNumber(start int, imag bool) {
	if l.pos < len(l.src) {
		c := l.src[l.pos]
		if isASCIIIdentStart(c) || isDigit(c) || c >= utf8.RuneSelf {
			ok := false
			for _, kw := range numberFollowers {
				if strings.HasPrefix(l.src[l.pos:], kw) {
					ok = true
					break
				}
			}
			if !ok || isDigit(c) {
				l.fail(start, "invalid %s literal", numberWord(l.src[start:min(start+2, len(l.src))]))
			}
		}
	}
	l.emit(tNumber, start, l.pos)
}

func isIdentStartRune(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.Is(unicode.Nl, r) || unicode.Is(unicode.Other_ID_Start, r)
}

func isIdentContinueRune(r rune) bool {
	return isIdentStartRune(r) || unicode.In(r, unicode.Mn, unicode.Mc, unicode.Nd, unicode.Pc, unicode.Other_ID_Continue)
}

func (l *lexer) lexNameOrString() {
	start := l.pos
	nonASCII := false
	for l.pos < len(l.src) {
		c := l.src[l.pos]
		if c < utf8.RuneSelf {
			if isASCIIIdentStart(c) || isDigit(c) {
				l.pos++
				continue
			}
			break
		}
		r, n := utf8.DecodeRuneInString(l.src[l.pos:])
		ok := isIdentContinueRune(r)
		if l.pos == start {
			ok = isIdentStartRune(r)
		}
		if !ok {
			if l.pos == start {
				if unicode.IsPrint(r) {
					l.fail(start, "invalid character '%c' (U+%04X)", r, r)
				}
				l.fail(start, "invalid non-printable character U+%04X", r)
			}
			break
		}
		nonASCII = true
		l.pos += n
	}
	word := l.src[start:l.pos]
	if !nonASCII && l.pos < len(l.src) && (l.src[l.pos] == '"' || l.src[l.pos] == '\'') && isStringPrefix(word) {
		l.lexString(start, l.pos)
		return
	}
	if nonASCII {
		// Python compares identifiers after NFKC normalization, so
		// `ｅｖａｌ` and `𝐞𝐯𝐚𝐥` both name the builtin eval.
		l.push(token{kind: tName, raw: true, start: int32(start), end: int32(l.pos), aux: int32(len(l.raws))})
		l.raws = append(l.raws, nfkc(word))
		return
	}
	l.push(token{kind: tName, kw: isKeyword(word), start: int32(start), end: int32(l.pos)})
}

func isStringPrefix(p string) bool {
	switch strings.ToLower(p) {
	case "r", "u", "b", "br", "rb", "f", "fr", "rf":
		return true
	}
	return false
}

// tripleAt reports whether three quote characters start at s[i].
func tripleAt(s string, i int, quote byte) bool {
	return i+2 < len(s) && s[i] == quote && s[i+1] == quote && s[i+2] == quote
}

func closerOf(open byte) byte {
	switch open {
	case '(':
		return ')'
	case '[':
		return ']'
	}
	return '}'
}

// What a string token's body holds, in token.aux: a backslash (so the
// value has escapes to decode, unless raw) or a carriage return (so its
// line endings are normalized).
const (
	strEscape = 1 << iota
	strCR
)

// scanString returns the offset of the first byte at or after i that can
// end or escape a string literal quoted with quote (the quote, a
// backslash or a line break), or len(s). Eight bytes at a time it tests
// whether any of them is one of those: a word with a zero byte where one
// of them was has a borrow into that byte's top bit, and the byte loop
// then finds which.
func scanString(s string, i int, quote byte) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	q, bs, nl, cr := ones*uint64(quote), ones*uint64('\\'), ones*uint64('\n'), ones*uint64('\r')
	for ; i+8 <= len(s); i += 8 {
		w := s[i : i+8] // one bounds check; the eight loads below become one
		v := uint64(w[0]) | uint64(w[1])<<8 | uint64(w[2])<<16 | uint64(w[3])<<24 |
			uint64(w[4])<<32 | uint64(w[5])<<40 | uint64(w[6])<<48 | uint64(w[7])<<56
		a, b, c, d := v^q, v^bs, v^nl, v^cr
		if ((a-ones)&^a|(b-ones)&^b|(c-ones)&^c|(d-ones)&^d)&highs != 0 {
			break
		}
	}
	for ; i < len(s); i++ {
		if c := s[i]; c == '\\' || c == quote || c == '\n' || c == '\r' {
			return i
		}
	}
	return i
}

// lexString scans a string literal whose prefix starts at start and whose
// opening quote is at q. F-strings are handed to the f-string modes.
func (l *lexer) lexString(start, q int) {
	prefix := strings.ToLower(l.src[start:q])
	raw := strings.Contains(prefix, "r")
	quote := l.src[q]
	triple := tripleAt(l.src, q, quote)
	l.pos = q + 1
	if triple {
		l.pos = q + 3
	}
	if strings.Contains(prefix, "f") {
		if l.fstrings >= maxFStringDepth {
			l.fail(q, "too many nested f-strings")
		}
		l.fstrings++
		l.emit(tFStart, start, l.pos)
		l.modes = append(l.modes, modeEntry{mode: mFLiteral, quote: quote, triple: triple, raw: raw, start: start, body: l.pos})
		return
	}
	var flags int32 // what the body holds (strEscape, strCR), for the parser's decoding
	for {
		// Skip the bytes that cannot end or escape the literal in one
		// tight loop; the switch below sees only the others.
		l.pos = scanString(l.src, l.pos, quote)
		if l.pos >= len(l.src) {
			if triple {
				l.fail(start, "unterminated triple-quoted string literal (detected at line %d)", l.file.Position(len(l.src)).Line)
			}
			l.fail(start, "unterminated string literal (detected at line %d)", l.file.Position(l.pos).Line)
		}
		c := l.src[l.pos]
		switch {
		case c == '\\':
			// A backslash always protects the next character from ending
			// the literal, raw or not; a backslash-newline continues it.
			flags |= strEscape
			l.pos++
			if l.pos < len(l.src) {
				if l.src[l.pos] == '\r' || l.src[l.pos] == '\n' {
					if l.src[l.pos] == '\r' {
						flags |= strCR
					}
					l.skipNewline()
				} else {
					l.pos++
				}
			}
		case c == quote:
			if !triple {
				l.pos++
				l.push(token{kind: tString, start: int32(start), end: int32(l.pos), aux: flags})
				return
			}
			if tripleAt(l.src, l.pos, quote) {
				l.pos += 3
				l.push(token{kind: tString, start: int32(start), end: int32(l.pos), aux: flags})
				return
			}
			l.pos++
		case c == '\r':
			if !triple {
				l.fail(start, "unterminated string literal (detected at line %d)", l.file.Position(start).Line)
			}
			flags |= strCR
			l.pos++
		case c == '\n' && !triple:
			l.fail(start, "unterminated string literal (detected at line %d)", l.file.Position(start).Line)
		default:
			l.pos++
		}
	}
}

// lexFStringText scans literal text of an f-string (or of a format spec)
// up to the next replacement field, the end of the spec or the closing
// quote.
func (l *lexer) lexFStringText() {
	m := l.top()
	start := l.pos
	flush := func() {
		if l.pos > start {
			l.emit(tFMiddle, start, l.pos)
		}
	}
	for {
		if l.pos >= len(l.src) {
			l.fail(m.start, "unterminated f-string literal (detected at line %d)", l.file.Position(len(l.src)).Line)
		}
		c := l.src[l.pos]
		switch {
		case c == m.quote && (!m.triple || tripleAt(l.src, l.pos, c)):
			if m.mode == mFSpec {
				l.fail(l.pos, "f-string: expecting '}'")
			}
			flush()
			n := 1
			if m.triple {
				n = 3
			}
			if l.fstrings == 1 && l.version < Python312 {
				l.checkFString311(m)
			}
			l.emit(tFEnd, l.pos, l.pos+n)
			l.pos += n
			l.modes = l.modes[:len(l.modes)-1]
			l.fstrings--
			return
		case (c == '\n' || c == '\r') && !m.triple:
			if m.mode == mFSpec {
				// A single-quoted spec may not run past the line.
				l.fail(l.pos, "f-string: newlines are not allowed in format specifiers for single quoted f-strings")
			}
			l.fail(m.start, "unterminated f-string literal (detected at line %d)", l.file.Position(m.start).Line)
		case c == '\\':
			l.pos++
			if l.pos >= len(l.src) {
				continue
			}
			d := l.src[l.pos]
			switch {
			case !m.raw && d == 'N' && l.pos+1 < len(l.src) && l.src[l.pos+1] == '{':
				// \N{NAME}: the braces belong to the escape.
				end := strings.IndexByte(l.src[l.pos:], '}')
				if end < 0 {
					l.fail(l.pos-1, "(unicode error) malformed \\N character escape")
				}
				l.pos += end + 1
			case d == '{' || d == '}':
				// The backslash stays literal and the brace keeps its role.
			case d == '\r' || d == '\n':
				l.skipNewline()
			default:
				l.pos++
			}
		case c == '{':
			if m.mode == mFLiteral && l.pos+1 < len(l.src) && l.src[l.pos+1] == '{' {
				l.pos += 2
				continue
			}
			flush()
			if m.specs > maxFSpecDepth {
				l.fail(l.pos, "f-string: expressions nested too deeply")
			}
			l.openParen('{', true)
			l.emit(tOp, l.pos, l.pos+1)
			l.pos++
			l.modes = append(l.modes, modeEntry{mode: mFExpr, quote: m.quote, triple: m.triple, raw: m.raw, depth: len(l.parens), start: m.start, specs: m.specs, body: l.pos})
			return
		case c == '}':
			if m.mode == mFLiteral {
				if l.pos+1 < len(l.src) && l.src[l.pos+1] == '}' {
					l.pos += 2
					continue
				}
				l.fail(l.pos, "f-string: single '}' is not allowed")
			}
			// End of the format spec closes its replacement field.
			flush()
			l.closeField()
			return
		default:
			l.pos++
		}
	}
}

// checkFString311 refuses, for a target before 3.12, an outermost
// f-string that 3.11 would end early: 3.11 finds the end of an f-string
// by its closing quote alone, so the enclosing quote reused inside a
// replacement field (or a line break in a single-quoted one) ends it
// there. Nested f-strings lie inside the outermost one's text, so one
// pass over each outermost f-string covers them all.
func (l *lexer) checkFString311(m *modeEntry) {
	for i := m.body; i < l.pos; i++ {
		switch c := l.src[i]; {
		case c == '\\':
			// The escaped character, or the whole line break of a
			// backslash continuation (\r\n is one).
			i++
			if i+1 < l.pos && l.src[i] == '\r' && l.src[i+1] == '\n' {
				i++
			}
		case c == m.quote && (!m.triple || tripleAt(l.src, i, c)):
			l.fail(i, "f-string: the enclosing quote reused inside a replacement field requires Python 3.12; the target is Python 3.%d", l.version)
		case (c == '\n' || c == '\r') && !m.triple:
			l.fail(i, "f-string: a replacement field spanning lines in a single-quoted f-string requires Python 3.12; the target is Python 3.%d", l.version)
		}
	}
}

// checkExpr311 refuses, for a target before 3.12, a backslash in the
// expression part of a replacement field of an outermost f-string, the
// expression ending at end. Fields of nested f-strings lie inside it.
func (l *lexer) checkExpr311(end int) {
	if l.fstrings != 1 || l.version >= Python312 {
		return
	}
	m := l.top()
	if i := strings.IndexByte(l.src[m.body:end], '\\'); i >= 0 {
		l.fail(m.body+i, "f-string expression part cannot include a backslash before Python 3.12; the target is Python 3.%d", l.version)
	}
}

// closeField consumes the '}' ending a replacement field and returns to
// the literal text (or enclosing spec) around it.
func (l *lexer) closeField() {
	if l.top().mode == mFSpec {
		l.modes = l.modes[:len(l.modes)-1]
	} else {
		l.checkExpr311(l.pos)
	}
	l.parens = l.parens[:len(l.parens)-1]
	l.emit(tOp, l.pos, l.pos+1)
	l.pos++
	l.modes = l.modes[:len(l.modes)-1] // the mFExpr
}

func (l *lexer) openParen(ch byte, field bool) {
	if len(l.parens) >= maxParenDepth {
		l.fail(l.pos, "too many nested parentheses")
	}
	l.parens = append(l.parens, paren{ch: ch, pos: l.pos, field: field})
}

// multiOpLen is the length of the operator of two or three characters
// that s starts with, or 0 when it starts with none: the three-character
// operators **= //= >>= <<= ... before the two-character ones
// ** // >> << <= >= == != -> += -= *= /= %= &= |= ^= @= :=, so the
// longest one is taken.
func multiOpLen(s string) int {
	if len(s) < 2 {
		return 0
	}
	c, d := s[0], s[1]
	switch c {
	case '*', '/', '>', '<':
		if d == c {
			if len(s) > 2 && s[2] == '=' {
				return 3
			}
			return 2
		}
		if d == '=' {
			return 2
		}
	case '.':
		if d == '.' && len(s) > 2 && s[2] == '.' {
			return 3
		}
	case '-':
		if d == '=' || d == '>' {
			return 2
		}
	case '=', '!', '+', '%', '&', '|', '^', '@', ':':
		if d == '=' {
			return 2
		}
	}
	return 0
}

func (l *lexer) lexOp() {
	s := l.src[l.pos:]
	m := l.top()
	inField := m.mode == mFExpr && len(l.parens) == m.depth
	if inField {
		// At the top level of a replacement field ':' starts the format
		// spec (even before '='), '}' ends the field and '!' the conversion.
		switch s[0] {
		case ':':
			l.checkExpr311(l.pos)
			l.emit(tOp, l.pos, l.pos+1)
			l.pos++
			l.modes = append(l.modes, modeEntry{mode: mFSpec, quote: m.quote, triple: m.triple, raw: m.raw, start: m.start, specs: m.specs + 1})
			return
		case '}':
			l.closeField()
			return
		}
	}
	if n := multiOpLen(s); n > 0 {
		l.emit(tOp, l.pos, l.pos+n)
		l.pos += n
		return
	}
	c := s[0]
	switch c {
	case '(', '[', '{':
		l.openParen(c, false)
	case ')', ']', '}':
		if len(l.parens) == 0 {
			l.fail(l.pos, "unmatched '%c'", c)
		}
		open := l.parens[len(l.parens)-1]
		if open.field {
			l.fail(l.pos, "f-string: unmatched '%c'", c)
		}
		if closerOf(open.ch) != c {
			l.fail(l.pos, "closing parenthesis '%c' does not match opening parenthesis '%c'", c, open.ch)
		}
		l.parens = l.parens[:len(l.parens)-1]
	case ':', ',', ';', '+', '-', '*', '/', '|', '&', '<', '>', '=', '.', '%', '~', '^', '@', '!':
	default:
		r, _ := utf8.DecodeRuneInString(s)
		if unicode.IsPrint(r) {
			l.fail(l.pos, "invalid character '%c' (U+%04X)", r, r)
		}
		l.fail(l.pos, "invalid non-printable character U+%04X", r)
	}
	l.emit(tOp, l.pos, l.pos+1)
	l.pos++
}
