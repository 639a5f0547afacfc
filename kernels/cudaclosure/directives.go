package cudaclosure

// directive is one preprocessing directive line after splicing and
// comment removal.
type directive struct {
	line     int    // 1-based source line where the directive starts
	name     string // e.g. "include", "define"
	rest     string // text after the name
	digraph  bool   // introduced by %: instead of #
	trigraph bool   // introduced by ??= instead of #
}

// text is source text with a source line for every byte.
type text struct {
	b         []byte
	line      []int32
	lineStart int // offset in b where the current line begins
}

func (t *text) put(c byte, line int32) {
	t.b = append(t.b, c)
	t.line = append(t.line, line)
	if c == '\n' {
		t.lineStart = len(t.b)
	}
}

// splice performs translation phases 1-2: line endings become '\n' and a
// backslash followed by a line ending is removed. Like GCC and Clang,
// white space between the backslash and the line ending is allowed.
func splice(src []byte) text {
	t := text{b: make([]byte, 0, len(src)), line: make([]int32, 0, len(src))}
	line := int32(1)
	for i := 0; i < len(src); i++ {
		c := src[i]
		if c == '\\' {
			j := i + 1
			for j < len(src) && (src[j] == ' ' || src[j] == '\t') {
				j++
			}
			if j < len(src) && (src[j] == '\n' || src[j] == '\r') {
				if src[j] == '\r' && j+1 < len(src) && src[j+1] == '\n' {
					j++
				}
				i = j
				line++
				continue
			}
		}
		if c == '\r' {
			if i+1 < len(src) && src[i+1] == '\n' {
				i++
			}
			c = '\n'
		}
		t.put(c, line)
		if c == '\n' {
			line++
		}
	}
	return t
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// stripComments performs translation phase 3's comment removal: each
// comment becomes one space, while string, character and raw string
// literals pass through unchanged.
func stripComments(in text) text {
	s := in.b
	out := text{b: make([]byte, 0, len(s)), line: make([]int32, 0, len(s))}
	checked := -1 // the line whose include operand was looked for
	// inNumber tracks whether the output ends inside a pp-number, where a
	// quote is a C++14 digit separator (1'000'000), not a character literal.
	inName, inNumber := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		wasNumber := inNumber
		if isIdentByte(c) || c == '.' || c == '\'' && inNumber {
			if !inName {
				inNumber = c >= '0' && c <= '9' || c == '.'
			}
			inName = true
		} else {
			inName, inNumber = false, false
		}
		switch {
		case c == '/' && i+1 < len(s) && s[i+1] == '/':
			for i < len(s) && s[i] != '\n' {
				i++
			}
			if i < len(s) {
				out.put('\n', in.line[i])
			}
		case c == '/' && i+1 < len(s) && s[i+1] == '*':
			out.put(' ', in.line[i])
			i += 2
			for i < len(s) && !(s[i] == '*' && i+1 < len(s) && s[i+1] == '/') {
				i++
			}
			i++ // onto the '/', or past the end if unterminated
		case c == 'R' && i+1 < len(s) && s[i+1] == '"' && rawPrefixOK(s, i):
			i = copyRaw(s, in.line, i, &out)
		case c == '"':
			i = copyQuoted(s, in.line, i, '"', &out)
		case c == '<' && checked != out.lineStart && isIncludeOperand(&out, &checked):
			// A <header-name> is one token: `//` or `/*` inside it is
			// not a comment.
			for ; i < len(s) && s[i] != '\n'; i++ {
				out.put(s[i], in.line[i])
				if s[i] == '>' {
					break
				}
			}
			if i < len(s) && s[i] == '\n' {
				i--
			}
		case c == '\'' && !wasNumber:
			inName, inNumber = false, false
			i = copyQuoted(s, in.line, i, '\'', &out)
		default:
			out.put(c, in.line[i])
		}
	}
	return out
}

// isIncludeOperand reports whether the current output line so far is an
// include directive waiting for its operand. Only the first '<' of a line
// can be that operand, so each line is looked at once (keeping hostile
// lines of many '<' linear).
func isIncludeOperand(out *text, checked *int) bool {
	*checked = out.lineStart
	d, ok := parseDirective(out.b[out.lineStart:])
	if !ok {
		return false
	}
	switch d.name {
	case "include", "include_next", "import":
	default:
		return false
	}
	for _, c := range []byte(d.rest) {
		if c != ' ' && c != '\t' && c != '\f' && c != '\v' {
			return false
		}
	}
	return true
}

// rawPrefixOK reports whether the R at i starts a raw string literal:
// alone or after an encoding prefix (u8, u, U, L), not inside a name.
func rawPrefixOK(s []byte, i int) bool {
	j := i
	for j > 0 && isIdentByte(s[j-1]) {
		j--
	}
	switch string(s[j:i]) {
	case "", "u8", "u", "U", "L":
		return true
	}
	return false
}

func copyQuoted(s []byte, lines []int32, i int, q byte, out *text) int {
	out.put(s[i], lines[i])
	for i++; i < len(s); i++ {
		c := s[i]
		if c == '\n' {
			out.put(c, lines[i]) // unterminated: the literal ends with the line
			return i
		}
		out.put(c, lines[i])
		if c == '\\' && i+1 < len(s) && s[i+1] != '\n' {
			i++
			out.put(s[i], lines[i])
			continue
		}
		if c == q {
			return i
		}
	}
	return i
}

// copyRaw copies R"delim( ... )delim" through.
func copyRaw(s []byte, lines []int32, i int, out *text) int {
	open := i + 2
	j := open
	for j < len(s) && j-open <= 16 && s[j] != '(' {
		j++
	}
	if j >= len(s) || s[j] != '(' {
		out.put(s[i], lines[i])
		return i
	}
	closing := ")" + string(s[open:j]) + "\""
	end := indexFrom(s, j+1, closing)
	last := len(s) - 1
	if end >= 0 {
		last = end + len(closing) - 1
	}
	for k := i; k <= last; k++ {
		out.put(s[k], lines[k])
	}
	return last
}

func indexFrom(s []byte, from int, sub string) int {
	for k := from; k+len(sub) <= len(s); k++ {
		if string(s[k:k+len(sub)]) == sub {
			return k
		}
	}
	return -1
}

// directives returns the preprocessing directives of a CUDA source file.
func directives(src []byte) []directive {
	t := stripComments(splice(src))
	var out []directive
	s := t.b
	for start := 0; start < len(s); {
		end := start
		for end < len(s) && s[end] != '\n' {
			end++
		}
		if d, ok := parseDirective(s[start:end]); ok {
			d.line = int(t.line[start])
			out = append(out, d)
		}
		start = end + 1
	}
	return out
}

func parseDirective(l []byte) (directive, bool) {
	i := 0
	for i < len(l) && (l[i] == ' ' || l[i] == '\t' || l[i] == '\f' || l[i] == '\v') {
		i++
	}
	var d directive
	switch {
	case i < len(l) && l[i] == '#':
		i++
	case i+1 < len(l) && l[i] == '%' && l[i+1] == ':':
		d.digraph = true
		i += 2
	case i+2 < len(l) && l[i] == '?' && l[i+1] == '?' && l[i+2] == '=':
		d.trigraph = true
		i += 3
	default:
		return d, false
	}
	for i < len(l) && (l[i] == ' ' || l[i] == '\t' || l[i] == '\f' || l[i] == '\v') {
		i++
	}
	j := i
	for j < len(l) && isIdentByte(l[j]) {
		j++
	}
	d.name = string(l[i:j])
	d.rest = string(l[j:])
	return d, true
}
