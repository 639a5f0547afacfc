package fingerprint

import "strings"

// NormalizeCUDA strips comments and formatting from CUDA or C++ source:
//
//   - `//` and `/* */` comments are removed (a backslash at the end of a
//     `//` comment continues it, as the preprocessor splices lines first);
//   - whitespace, blank lines and backslash line splices between tokens
//     are gone: code tokens are separated by one space;
//   - string and character literals (raw strings included) are kept
//     byte for byte, so comment markers inside them are not comments;
//   - a preprocessor directive (a `#` first on its line, after blanks
//     and comments) stays on a line of its own, since the directive ends
//     there; its continuation lines are joined and a `<...>` header name
//     of an #include is one token.
//
// Tokens are split by maximal munch over C++'s punctuators, so `a - -b`
// and `a--b` stay different. It does not catch renamed identifiers,
// reordered functions (the per-file fingerprints do), macro-expanded
// equivalents, or a line splice inside a token. The output normalizes to
// itself; no input makes it fail.
func NormalizeCUDA(src []byte) string {
	return renderCUDA(cudaLex(string(src)))
}

// cToken is one token; directive is set on the first token of each
// directive line, and lineEnd on a token that must end its line (the
// last of a directive, an unterminated literal).
type cToken struct {
	text      string
	directive bool
	lineEnd   bool
}

func renderCUDA(toks []cToken) string {
	var b strings.Builder
	atLineStart := true
	last := ""
	// endLine ends a line; a stray backslash last on it is kept apart
	// from the newline, which it would otherwise splice away.
	endLine := func() {
		if strings.HasSuffix(last, "\\") {
			b.WriteByte(' ')
		}
		b.WriteByte('\n')
		atLineStart = true
	}
	for _, t := range toks {
		if t.directive && !atLineStart {
			endLine()
		}
		if !atLineStart {
			b.WriteByte(' ')
		}
		b.WriteString(t.text)
		last = t.text
		atLineStart = false
		if t.lineEnd {
			endLine()
		}
	}
	if !atLineStart {
		endLine()
	}
	return b.String()
}

// cudaTokens is the fingerprinting token stream: the tokens, with a
// line-end token after each directive.
func cudaTokens(toks []cToken) []string {
	out := make([]string, 0, len(toks))
	inDirective := false
	for _, t := range toks {
		if t.directive {
			inDirective = true
		}
		out = append(out, t.text)
		if t.lineEnd && inDirective {
			out = append(out, ";")
			inDirective = false
		}
	}
	return out
}

// punctuators are C++'s multi-character punctuators, longest first.
var punctuators = []string{
	"<<=", ">>=", "->*", "...", "<=>",
	"::", "->", "++", "--", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||",
	"+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", ".*", "##",
}

func isIdentByte(c byte) bool {
	return c == '_' || c == '$' || c >= 0x80 || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}

func isDigitByte(c byte) bool { return c >= '0' && c <= '9' }

type cLexer struct {
	s   string
	pos int
	out []cToken
	// lineStart: only blanks and comments since the last newline, so a
	// `#` here opens a directive.
	lineStart bool
	// directive: inside a directive line; include: it is an #include,
	// whose <...> is one header-name token.
	directive, include bool
	dirTokens          int
}

func cudaLex(s string) []cToken {
	l := &cLexer{s: s, lineStart: true}
	l.run()
	if l.directive {
		l.endDirective()
	}
	return l.out
}

func (l *cLexer) emit(text string) {
	t := cToken{text: text}
	if l.directive {
		if l.dirTokens == 0 {
			t.directive = true
		}
		l.dirTokens++
		if l.dirTokens == 2 && (text == "include" || text == "include_next" || text == "import") {
			l.include = true
		}
	}
	l.out = append(l.out, t)
	l.lineStart = false
}

func (l *cLexer) endDirective() {
	if n := len(l.out); n > 0 && l.dirTokens > 0 {
		l.out[n-1].lineEnd = true
	}
	l.directive, l.include, l.dirTokens = false, false, 0
}

func (l *cLexer) newline() {
	if l.directive {
		l.endDirective()
	}
	l.lineStart = true
}

func (l *cLexer) run() {
	s := l.s
	for l.pos < len(s) {
		c := s[l.pos]
		switch {
		case c == '\n':
			l.pos++
			l.newline()
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v':
			l.pos++
		case c == '\\' && l.splice(l.pos):
			// A line splice joins lines: it neither ends a directive nor
			// starts a line.
		case c == '/' && l.pos+1 < len(s) && s[l.pos+1] == '/':
			l.lineComment()
		case c == '/' && l.pos+1 < len(s) && s[l.pos+1] == '*':
			l.blockComment()
		case c == '#' && l.lineStart && !l.directive:
			l.directive = true
			l.pos++
			l.emit("#")
		case c == '<' && l.include && l.dirTokens == 2:
			l.headerName()
		case c == '"' || c == '\'':
			l.quoted(l.pos, l.pos)
		case isIdentByte(c) && !isDigitByte(c):
			l.identOrPrefixed()
		case isDigitByte(c) || (c == '.' && l.pos+1 < len(s) && isDigitByte(s[l.pos+1])):
			l.number()
		default:
			l.punct()
		}
	}
}

// splice reports (and skips) a backslash that ends its line.
func (l *cLexer) splice(at int) bool {
	if n := spliceLen(l.s, at); n > 0 {
		l.pos = at + n
		return true
	}
	return false
}

// spliceLen is the length of a line splice at at (a backslash then LF
// or CRLF), or 0.
func spliceLen(s string, at int) int {
	switch {
	case strings.HasPrefix(s[at:], "\\\n"):
		return 2
	case strings.HasPrefix(s[at:], "\\\r\n"):
		return 3
	}
	return 0
}

func (l *cLexer) lineComment() {
	s := l.s
	i := l.pos + 2
	for i < len(s) && s[i] != '\n' {
		if n := spliceLen(s, i); n > 0 {
			i += n
			continue
		}
		i++
	}
	l.pos = i // the newline itself ends a directive
}

// blockComment skips a /* */ comment. The preprocessor reads a comment
// as one space, so a newline inside it neither ends a directive nor
// starts a line.
func (l *cLexer) blockComment() {
	end := strings.Index(l.s[l.pos+2:], "*/")
	if end < 0 {
		l.pos = len(l.s)
		return
	}
	l.pos += 2 + end + 2
}

func (l *cLexer) headerName() {
	end := strings.IndexAny(l.s[l.pos:], ">\n")
	if end < 0 || l.s[l.pos+end] == '\n' {
		l.punct()
		return
	}
	l.emit(l.s[l.pos : l.pos+end+1])
	l.pos += end + 1
}

// identOrPrefixed lexes an identifier, or a literal with an encoding
// prefix (L, u, U, u8) and raw strings (R"delim(...)delim").
func (l *cLexer) identOrPrefixed() {
	s := l.s
	start := l.pos
	i := l.pos
	for i < len(s) && isIdentByte(s[i]) {
		i++
	}
	word := s[start:i]
	if i < len(s) && (s[i] == '"' || s[i] == '\'') {
		switch word {
		case "L", "u", "U", "u8":
			l.pos = i
			l.quoted(start, i)
			return
		case "R", "LR", "uR", "UR", "u8R":
			if s[i] == '"' && l.raw(start, i) {
				return
			}
		}
	}
	l.pos = i
	l.emit(word)
}

// raw lexes a raw string whose opening quote is at q. A malformed
// delimiter is not a raw string.
func (l *cLexer) raw(start, q int) bool {
	s := l.s
	// The delimiter is at most 16 characters: look no further, so a run
	// of R" without one stays linear.
	head := s[q+1 : min(len(s), q+18)]
	open := strings.IndexByte(head, '(')
	if open < 0 || open > 16 {
		return false
	}
	delim := s[q+1 : q+1+open]
	if strings.ContainsAny(delim, " ()\\\t\v\f\n\"") {
		return false
	}
	closeSeq := ")" + delim + `"`
	body := q + 1 + open + 1
	end := strings.Index(s[body:], closeSeq)
	if end < 0 {
		// Unterminated: it runs to the end of the file, without the
		// trailing blanks the rendering itself adds.
		l.pos = len(s)
		l.emit(strings.TrimRight(s[start:], " \t\r\n\f\v"))
		l.markLineEnd()
		return true
	}
	l.pos = body + end + len(closeSeq)
	l.emit(s[start:l.pos])
	return true
}

// quoted lexes a string or character literal whose quote is at q. An
// unterminated literal runs to the end of its line and ends the line.
func (l *cLexer) quoted(start, q int) {
	s := l.s
	quote := s[q]
	i := q + 1
	for i < len(s) {
		switch s[i] {
		case '\\':
			i += 2
			continue
		case quote:
			l.pos = i + 1
			l.emit(s[start:l.pos])
			return
		case '\n':
			l.pos = i
			l.emit(unterminated(s[start:i]))
			l.markLineEnd()
			return
		}
		i++
	}
	l.pos = len(s)
	l.emit(unterminated(s[start:]))
	l.markLineEnd()
}

// unterminated is an unterminated literal as emitted: without trailing
// blanks or an escaping backslash, which would swallow the line end the
// output puts after it.
func unterminated(text string) string {
	for {
		t := strings.TrimRight(text, " \t\r\f\v")
		n := len(t) - len(strings.TrimRight(t, "\\"))
		if n%2 == 1 {
			t = t[:len(t)-1]
		}
		if t == text {
			return t
		}
		text = t
	}
}

func (l *cLexer) markLineEnd() {
	if n := len(l.out); n > 0 {
		l.out[n-1].lineEnd = true
	}
}

// number lexes a preprocessing number: digits, letters, `.`, exponent
// signs and C++14 digit separators.
func (l *cLexer) number() {
	s := l.s
	start := l.pos
	i := l.pos + 1
	for i < len(s) {
		c := s[i]
		switch {
		case (c == '+' || c == '-') && strings.ContainsRune("eEpP", rune(s[i-1])):
			i++
		case c == '\'' && i+1 < len(s) && isIdentByte(s[i+1]):
			i += 2
		case isIdentByte(c) || c == '.':
			i++
		default:
			l.pos = i
			l.emit(s[start:i])
			return
		}
	}
	l.pos = i
	l.emit(s[start:i])
}

func (l *cLexer) punct() {
	rest := l.s[l.pos:]
	for _, p := range punctuators {
		if strings.HasPrefix(rest, p) {
			l.pos += len(p)
			l.emit(p)
			return
		}
	}
	// One byte (a stray byte of invalid UTF-8 included: tokens are bytes).
	l.pos++
	l.emit(rest[:1])
}
