package fingerprint

import (
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/cacheon/engine/kernels/pyparse"
)

// NormalizePython re-emits Python source from its syntax tree in one
// canonical layout, so that two files differing only in comments,
// docstrings or formatting normalize to the same bytes:
//
//   - comments, blank lines, backslash continuations and line breaks
//     inside brackets are gone (the tokenizer drops them);
//   - each statement is on its own line (`a; b` and `if x: a` are split),
//     indented one space per block level whatever the source used;
//   - every expression statement that is a bare constant is dropped:
//     docstrings of modules, classes and functions, string "comments"
//     anywhere in a body and `...` placeholders (none has an effect); a
//     body left empty becomes `pass`;
//   - string and bytes literals are re-quoted from their decoded value
//     (quote style, prefixes, escapes and implicit concatenation vanish);
//     f-strings are kept as written;
//   - number literals are lower-cased without digit separators;
//   - trailing commas are dropped where they change nothing (not the
//     comma of a one-element tuple);
//   - tokens are separated by one space.
//
// It does not catch renamed identifiers, reordered statements or
// functions (the per-file fingerprints do), redundant parentheses, or
// equivalent but different expressions. The output is valid Python that
// normalizes to itself. Source that does not parse is an error.
func NormalizePython(name string, src []byte) (string, error) {
	lines, err := pythonLines(name, src)
	if err != nil {
		return "", err
	}
	return renderLines(lines), nil
}

// pyLine is one emitted logical line.
type pyLine struct {
	depth int
	toks  []string
}

func renderLines(lines []pyLine) string {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(strings.Repeat(" ", l.depth))
		b.WriteString(strings.Join(l.toks, " "))
		b.WriteByte('\n')
	}
	return b.String()
}

// pythonTokens is the fingerprinting token stream of normalized lines:
// each line's tokens, with explicit block-open and block-close tokens
// where the depth changes and a line-end token after each line.
func pythonTokens(lines []pyLine) []string {
	var out []string
	depth := 0
	for _, l := range lines {
		for ; depth < l.depth; depth++ {
			out = append(out, "{")
		}
		for ; depth > l.depth; depth-- {
			out = append(out, "}")
		}
		out = append(out, l.toks...)
		out = append(out, ";")
	}
	return out
}

func pythonLines(name string, src []byte) ([]pyLine, error) {
	return pythonLinesIn(name, src, nil)
}

// localImports follows imports within a contribution: each bundle-local
// module name an import statement names is replaced by a name derived
// from what the module holds, not from where it lives.
type localImports struct {
	module    string            // the importing file's dotted module name
	isPackage bool              // the importing file is a package's __init__.py
	names     map[string]string // bundle-local module -> replacement identifier
}

// resolve is the bundle-local module an import names: absolute, or
// relative to the importing file's package (level leading dots).
func (li *localImports) resolve(level int, module string) (string, bool) {
	if level == 0 {
		_, ok := li.names[module]
		return module, ok
	}
	parts := strings.Split(li.module, ".")
	if !li.isPackage {
		parts = parts[:len(parts)-1]
	}
	if level-1 > len(parts) {
		return "", false
	}
	parts = parts[:len(parts)-(level-1)]
	if module != "" {
		parts = append(parts, strings.Split(module, ".")...)
	}
	resolved := strings.Join(parts, ".")
	_, ok := li.names[resolved]
	return resolved, ok && resolved != ""
}

func pythonLinesIn(name string, src []byte, li *localImports) ([]pyLine, error) {
	f, mod, toks, err := pyparse.ParseTokens(name, src)
	if err != nil {
		return nil, fmt.Errorf("normalize %s: %w", name, err)
	}
	e := &pyEmitter{src: f.Src, toks: toks, literals: map[int]literal{}, renames: map[int]literal{}}
	e.collect(mod, li)
	e.block(mod, mod.Body, -1)
	return e.lines, nil
}

// literal is how a string literal run starting at an offset is emitted:
// one canonical literal, or (f-strings, inexact values) its pieces as
// written.
type literal struct {
	end       int
	canonical string // empty: emit the pieces verbatim
}

type pyEmitter struct {
	src      string
	toks     []pyparse.Token
	literals map[int]literal
	// renames are the module names of bundle-local imports, by start
	// offset, with the name each is emitted as.
	renames map[int]literal
	lines   []pyLine
}

// collect records every string literal run of the tree by its start
// offset, and with li the module names of bundle-local imports. Inspect
// keeps its own stack, so hostile nesting is safe.
func (e *pyEmitter) collect(mod *pyparse.Module, li *localImports) {
	pyparse.Inspect(mod, func(n pyparse.Node) bool {
		switch x := n.(type) {
		case *pyparse.Import:
			if li == nil {
				return false
			}
			for _, a := range x.Names {
				if m, ok := li.resolve(0, a.Name.Name); ok {
					e.renames[a.Name.Start] = literal{end: a.Name.End, canonical: li.names[m]}
				}
			}
			return false
		case *pyparse.ImportFrom:
			if li == nil {
				return false
			}
			module := ""
			if x.Module != nil {
				module = x.Module.Name
			}
			m, ok := li.resolve(x.Level, module)
			if !ok {
				return false
			}
			// The name runs from the token after `from` (leading dots
			// included) to the token before `import`.
			i := e.tokenAt(x.Start)
			for i < len(e.toks) && !(e.toks[i].Kind == pyparse.TokenName && e.toks[i].Text == "from") {
				i++
			}
			j := i + 1
			for j < len(e.toks) && !(e.toks[j].Kind == pyparse.TokenName && e.toks[j].Text == "import") {
				j++
			}
			if i+1 < j && j < len(e.toks) {
				e.renames[e.toks[i+1].Start] = literal{end: e.toks[j-1].End, canonical: li.names[m]}
			}
			return false
		case *pyparse.JoinedStr:
			e.literals[x.Start] = literal{end: x.End}
			return false
		case *pyparse.Constant:
			switch {
			case x.Kind != pyparse.ConstStr && x.Kind != pyparse.ConstBytes:
			case x.Inexact:
				e.literals[x.Start] = literal{end: x.End}
			default:
				e.literals[x.Start] = literal{end: x.End, canonical: quoteLiteral(x.Str, x.Kind == pyparse.ConstBytes)}
			}
		}
		return true
	})
}

// tokenAt is the index of the first token starting at or after off.
func (e *pyEmitter) tokenAt(off int) int {
	return sort.Search(len(e.toks), func(i int) bool { return e.toks[i].Start >= off })
}

// bodies are the statement groups of a block node, each with the depth
// offset of its statements relative to the node's own header.
type bodyGroup struct {
	nodes []pyparse.Node
	shift int
}

func stmtNodes(ss []pyparse.Stmt) []pyparse.Node {
	out := make([]pyparse.Node, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func (e *pyEmitter) groups(n pyparse.Node) []bodyGroup {
	switch x := n.(type) {
	case *pyparse.FunctionDef:
		return []bodyGroup{{stmtNodes(x.Body), 1}}
	case *pyparse.ClassDef:
		return []bodyGroup{{stmtNodes(x.Body), 1}}
	case *pyparse.For:
		return []bodyGroup{{stmtNodes(x.Body), 1}, {stmtNodes(x.Orelse), 1}}
	case *pyparse.While:
		return []bodyGroup{{stmtNodes(x.Body), 1}, {stmtNodes(x.Orelse), 1}}
	case *pyparse.If:
		orelse := bodyGroup{stmtNodes(x.Orelse), 1}
		// An elif is an If in the else branch whose span starts at the
		// `elif` keyword: it sits at the level of the if it continues.
		if len(x.Orelse) == 1 {
			if inner, ok := x.Orelse[0].(*pyparse.If); ok {
				i := e.tokenAt(inner.Start)
				for i < len(e.toks) && (e.toks[i].Kind == pyparse.TokenIndent || e.toks[i].Kind == pyparse.TokenDedent) {
					i++ // a dedent before the keyword starts where it does
				}
				if i < len(e.toks) && e.toks[i].Kind == pyparse.TokenName && e.toks[i].Text == "elif" {
					orelse.shift = 0
				}
			}
		}
		return []bodyGroup{{stmtNodes(x.Body), 1}, orelse}
	case *pyparse.With:
		return []bodyGroup{{stmtNodes(x.Body), 1}}
	case *pyparse.Try:
		handlers := make([]pyparse.Node, len(x.Handlers))
		for i, h := range x.Handlers {
			handlers[i] = h
		}
		return []bodyGroup{{stmtNodes(x.Body), 1}, {handlers, 0}, {stmtNodes(x.Orelse), 1}, {stmtNodes(x.Finalbody), 1}}
	case *pyparse.ExceptHandler:
		return []bodyGroup{{stmtNodes(x.Body), 1}}
	case *pyparse.Match:
		cases := make([]pyparse.Node, len(x.Cases))
		for i, c := range x.Cases {
			cases[i] = c
		}
		return []bodyGroup{{cases, 1}}
	case *pyparse.MatchCase:
		return []bodyGroup{{stmtNodes(x.Body), 1}}
	}
	return nil
}

// isNoOp reports an expression statement that is a bare constant: a
// docstring, a string used as a comment, or `...`.
func isNoOp(n pyparse.Node) bool {
	s, ok := n.(*pyparse.ExprStmt)
	if !ok {
		return false
	}
	_, ok = s.Value.(*pyparse.Constant)
	return ok
}

// block emits node n: its header runs at depth and its statement groups
// at their depths. The module is a block with no header at depth -1.
// Recursion follows statement nesting only, which the tokenizer bounds
// (100 indentation levels; inline bodies hold no compound statement).
func (e *pyEmitter) block(n pyparse.Node, body []pyparse.Stmt, depth int) {
	start, end := n.Span()
	var groups []bodyGroup
	if body != nil {
		groups = []bodyGroup{{stmtNodes(body), 1}}
	} else {
		groups = e.groups(n)
	}
	cur := e.tokenAt(start)
	for _, g := range groups {
		if len(g.nodes) == 0 {
			continue
		}
		emitted := false
		for _, c := range g.nodes {
			cs, ce := c.Span()
			e.run(cur, e.tokenAt(cs), depth)
			cur = e.tokenAt(ce)
			if isNoOp(c) {
				continue
			}
			emitted = true
			e.block(c, nil, depth+g.shift)
		}
		if !emitted && g.shift > 0 && depth >= 0 {
			e.lines = append(e.lines, pyLine{depth: depth + g.shift, toks: []string{"pass"}})
		}
	}
	e.run(cur, e.tokenAt(end), depth)
}

// group is an open bracket of a run, for the trailing-comma rule.
type group struct {
	open   string
	call   bool // a call, a subscript or a def/class parameter list
	commas int
}

// run emits tokens [from, to) as lines at depth: a NEWLINE or a `;` at
// bracket level 0 ends a line, INDENT and DEDENT are dropped.
func (e *pyEmitter) run(from, to, depth int) {
	if depth < 0 {
		depth = 0
	}
	var cur []string
	var stack []group
	pendingComma := false
	flush := func() {
		if pendingComma {
			cur = append(cur, ",")
			pendingComma = false
		}
		if len(cur) > 0 {
			e.lines = append(e.lines, pyLine{depth: depth, toks: cur})
			cur = nil
		}
	}
	for i := from; i < to; i++ {
		t := e.toks[i]
		switch t.Kind {
		case pyparse.TokenIndent, pyparse.TokenDedent, pyparse.TokenEnd:
			continue
		case pyparse.TokenNewline:
			flush()
			continue
		}
		if t.Kind == pyparse.TokenOp && len(stack) == 0 && t.Text == ";" {
			flush()
			continue
		}
		if t.Kind == pyparse.TokenOp && t.Text == "," {
			if pendingComma {
				cur = append(cur, ",")
			}
			pendingComma = true
			if len(stack) > 0 {
				stack[len(stack)-1].commas++
			}
			continue
		}
		closer := t.Kind == pyparse.TokenOp && (t.Text == ")" || t.Text == "]" || t.Text == "}")
		if r, ok := e.renames[t.Start]; ok && !closer {
			if pendingComma {
				cur = append(cur, ",")
				pendingComma = false
			}
			cur = append(cur, r.canonical)
			for i+1 < to && e.toks[i+1].Start < r.end {
				i++
			}
			continue
		}
		if pendingComma {
			keep := true
			if closer && len(stack) > 0 {
				g := stack[len(stack)-1]
				// A one-element tuple keeps its comma: `(a,)` and the
				// subscript `x[a,]` are not `(a)` and `x[a]`.
				oneTuple := g.commas == 1 && ((g.open == "(" && !g.call) || (g.open == "[" && g.call))
				keep = oneTuple
			}
			if keep {
				cur = append(cur, ",")
			}
			pendingComma = false
		}
		switch t.Kind {
		case pyparse.TokenString, pyparse.TokenFStringStart:
			lit, ok := e.literals[t.Start]
			if !ok {
				// Not reachable for a parsed file; emit as written.
				cur = append(cur, e.src[t.Start:t.End])
				continue
			}
			j := i
			for j < to && e.toks[j].Start < lit.end {
				j++
			}
			if lit.canonical != "" {
				cur = append(cur, lit.canonical)
			} else {
				cur = append(cur, e.pieces(i, j)...)
			}
			i = j - 1
			continue
		case pyparse.TokenNumber:
			cur = append(cur, strings.ToLower(strings.ReplaceAll(e.src[t.Start:t.End], "_", "")))
			continue
		case pyparse.TokenName:
			cur = append(cur, t.Text)
			continue
		}
		// Operators.
		switch {
		case t.Text == "(" || t.Text == "[" || t.Text == "{":
			stack = append(stack, group{open: t.Text, call: t.Text != "{" && callable(cur)})
		case closer && len(stack) > 0:
			stack = stack[:len(stack)-1]
		}
		cur = append(cur, t.Text)
	}
	flush()
}

// pieces are the literal pieces of tokens [from, to) as written: each
// plain string token, and each f-string from its start to its end.
func (e *pyEmitter) pieces(from, to int) []string {
	var out []string
	nest, start := 0, 0
	for i := from; i < to; i++ {
		t := e.toks[i]
		switch t.Kind {
		case pyparse.TokenString:
			if nest == 0 {
				out = append(out, e.src[t.Start:t.End])
			}
		case pyparse.TokenFStringStart:
			if nest == 0 {
				start = t.Start
			}
			nest++
		case pyparse.TokenFStringEnd:
			nest--
			if nest == 0 {
				out = append(out, e.src[start:t.End])
			}
		}
	}
	return out
}

// hardKeywords never precede a call's or subscript's bracket.
var hardKeywords = map[string]bool{
	"False": true, "None": true, "True": true, "and": true, "as": true, "assert": true, "async": true,
	"await": true, "break": true, "class": true, "continue": true, "def": true, "del": true, "elif": true,
	"else": true, "except": true, "finally": true, "for": true, "from": true, "global": true, "if": true,
	"import": true, "in": true, "is": true, "lambda": true, "nonlocal": true, "not": true, "or": true,
	"pass": true, "raise": true, "return": true, "try": true, "while": true, "with": true, "yield": true,
}

// callable reports whether a bracket opened after the emitted tokens is
// a call or subscript (it follows a name, a closing bracket or a
// literal) rather than a tuple, list, set or dict display.
func callable(emitted []string) bool {
	if len(emitted) == 0 {
		return false
	}
	p := emitted[len(emitted)-1]
	switch {
	case p == ")" || p == "]" || p == "}":
		return true
	case strings.HasSuffix(p, `"`) || strings.HasSuffix(p, `'`):
		return true
	case pyparse.IsIdentifier(p):
		// `match (a,):` and `case (1,):` open a tuple, not a call: the
		// soft keywords are treated as keywords here, which at worst
		// keeps a trailing comma in a call of a function named match.
		return !hardKeywords[p] && p != "match" && p != "case"
	}
	return false
}

// quoteLiteral writes a decoded string or bytes value as one canonical
// double-quoted literal: printable ASCII as is (but `\` and `"`), the
// rest escaped.
func quoteLiteral(v string, bytesLit bool) string {
	var b strings.Builder
	if bytesLit {
		b.WriteByte('b')
	}
	b.WriteByte('"')
	for i := 0; i < len(v); {
		c := v[i]
		if c == '\\' || c == '"' {
			b.WriteByte('\\')
			b.WriteByte(c)
			i++
			continue
		}
		if c >= 0x20 && c < 0x7f {
			b.WriteByte(c)
			i++
			continue
		}
		if bytesLit || c < 0x80 {
			fmt.Fprintf(&b, `\x%02x`, c)
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(v[i:])
		i += size
		if r <= 0xffff {
			fmt.Fprintf(&b, `\u%04x`, r)
		} else {
			fmt.Fprintf(&b, `\U%08x`, r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
