package pyparse

import (
	"fmt"
	"strings"
)

// maxNesting bounds how deeply expressions and blocks may nest. Hostile
// input such as ten thousand opening brackets or unary minus signs fails
// with a syntax error instead of exhausting the stack. CPython gives up on
// such input too ("too many nested parentheses", "too complex").
const maxNesting = 1000

// Parse parses src as a Python 3 module (grammar of 3.8 through 3.12,
// and the 3.13 type parameter defaults) and returns the file with its line
// table and the syntax tree. The source is only read, never imported or
// run. A syntax error is returned as *SyntaxError.
func Parse(name string, src []byte) (*File, *Module, error) {
	return ParseVersion(name, src, Latest)
}

// Version is the minor version of the Python 3 grammar a parse accepts.
type Version int

const (
	Python311 Version = 11
	Python312 Version = 12
	Python313 Version = 13
	// Latest is the grammar Parse accepts.
	Latest = Python313
)

// ParseVersion is Parse against the grammar of one Python version: code
// that interpreter would refuse is a syntax error naming the version the
// construct needs. Below 3.12 that is PEP 695 type parameters and `type`
// statements and the PEP 701 f-strings (the enclosing quote reused inside
// a replacement field, backslashes or comments in one, a single-quoted
// f-string whose field spans lines); below 3.13, type parameter defaults.
func ParseVersion(name string, src []byte, v Version) (*File, *Module, error) {
	return parseFile(NewFile(name, src), v)
}

// ParseString is Parse of source text held in a string. The file and the
// tree share src instead of copying it.
func ParseString(name, src string) (*File, *Module, error) {
	return parseFile(&File{Name: name, Src: src}, Latest)
}

func parseFile(f *File, v Version) (*File, *Module, error) {
	lx, err := newLexer(f, v)
	if err != nil {
		return f, nil, err
	}
	p := &parser{f: f, src: f.Src, lx: lx, version: v}
	mod, err := p.run()
	return f, mod, err
}

// ParseStatements parses src as ParseString does, but instead of building
// the module it hands each top-level statement, in order, to each as soon
// as the statement is parsed. A statement's nodes are only valid during
// that call: the parser reuses their memory for the statements after it,
// so a file is read with the memory of its largest statement rather than
// of its whole tree. The error is the one Parse returns; when there is
// one, the statements already handed out are not a module.
func ParseStatements(name, src string, each func(*File, Stmt)) (*File, error) {
	return ParseStatementsVersion(name, src, Latest, each)
}

// ParseStatementsVersion is ParseStatements for the grammar of Python 3.v,
// refusing newer constructs as ParseVersion does.
func ParseStatementsVersion(name, src string, v Version, each func(*File, Stmt)) (*File, error) {
	f := &File{Name: name, Src: src}
	lx, err := newLexer(f, v)
	if err != nil {
		return f, err
	}
	p := &parser{f: f, src: f.Src, lx: lx, version: v, each: each}
	_, err = p.run()
	return f, err
}

type parser struct {
	f   *File
	src string // f.Src
	lx  *lexer
	// toks is the lexer's token buffer (lx.toks, refreshed when the lexer
	// adds to it) and p the index of the current token in it. Between
	// top-level statements the tokens before the last consumed one are
	// dropped, unless keep is set.
	toks    []token
	p       int
	keep    bool
	depth   int
	version Version
	// lf is the source with normalized line endings, built on first use
	// and only when the source has a '\r' (see lfSpan).
	lf        *lfText
	lfChecked bool
	nodes     nodes
	// each, when set, takes the top-level statements instead of the
	// module (see ParseStatements); stmts is its scratch list.
	each  func(*File, Stmt)
	stmts []Stmt
	// general turns the leafAssign shortcut off, for tests.
	general bool
}

type parseError struct{ err *SyntaxError }

func (p *parser) run() (mod *Module, err error) {
	defer func() {
		if r := recover(); r != nil {
			switch e := r.(type) {
			case lexError:
				mod, err = nil, e.err
			case parseError:
				// A lexical error later in the file is reported first, as
				// when the file was tokenized whole before parsing.
				mod, err = nil, e.err
				if lerr := p.lx.drain(); lerr != nil {
					err = lerr
				}
			default:
				panic(r)
			}
		}
	}()
	mod = &Module{Loc: Loc{0, len(p.f.Src)}}
	p.fill(1)
	for p.tok().kind != tEnd {
		if !p.keep && p.p > tokenWindow {
			// Nothing before the last consumed token is read again.
			p.lx.toks = p.lx.toks[:copy(p.lx.toks, p.lx.toks[p.p-1:])]
			p.toks, p.p = p.lx.toks, 1
		}
		if p.each == nil {
			mod.Body = p.statement(mod.Body)
			continue
		}
		p.stmts = p.statement(p.stmts[:0])
		for _, s := range p.stmts {
			p.each(p.f, s)
		}
		clear(p.stmts)
		p.nodes.reuse()
	}
	return mod, nil
}

// fill has the lexer buffer at least n tokens, and some beyond, unless
// the source ends first (then the last token is the end marker). It is
// kept out of line so that tok and peek, on every token, stay inlined.
//
//go:noinline
func (p *parser) fill(n int) {
	p.lx.more(n + lexAhead)
	p.toks = p.lx.toks
}

// lexAhead is how many tokens the lexer makes beyond those asked for, so
// that it runs in batches.
const lexAhead = 256

func (p *parser) failAt(off int, format string, args ...any) {
	panic(parseError{&SyntaxError{File: p.f.Name, Pos: p.f.Position(off), Msg: fmt.Sprintf(format, args...)}})
}

// fail reports an error at the current token.
func (p *parser) fail(format string, args ...any) {
	p.failAt(int(p.tok().start), format, args...)
}

// requires refuses the construct at off when the target grammar is older
// than v.
func (p *parser) requires(off int, v Version, what string) {
	if p.version < v {
		p.failAt(off, "%s requires Python 3.%d; the target is Python 3.%d", what, v, p.version)
	}
}

func (p *parser) invalid() {
	t := p.tok()
	switch t.kind {
	case tIndent:
		p.fail("unexpected indent")
	case tDedent:
		p.fail("unindent does not match any outer indentation level")
	case tEnd:
		p.fail("unexpected end of file")
	}
	p.fail("invalid syntax")
}

func (p *parser) enter() {
	p.depth++
	if p.depth > maxNesting {
		p.fail("too many nested expressions or blocks")
	}
}

func (p *parser) leave() { p.depth-- }

// tok is the current token. The current token is always buffered (run
// fills the first, step the next), so tok is one load, inlined wherever
// the parser looks at a token.
func (p *parser) tok() *token { return &p.toks[p.p] }

// step moves to the next token, having the lexer make it if need be.
// The end marker is the last token, and the parser never steps past it.
func (p *parser) step() {
	p.p++
	if p.p == len(p.toks) {
		p.fill(p.p + 1)
	}
}

func (p *parser) peek(n int) *token {
	if p.p+n >= len(p.toks) {
		p.fill(p.p + n + 1)
	}
	if p.p+n < len(p.toks) {
		return &p.toks[p.p+n]
	}
	return &p.toks[len(p.toks)-1]
}

func (p *parser) advance() token {
	t := *p.tok()
	if t.kind != tEnd {
		p.step()
	}
	return t
}

// prevEnd is the end offset of the last consumed token.
func (p *parser) prevEnd() int {
	if p.p == 0 {
		return 0
	}
	return int(p.toks[p.p-1].end)
}

// text is a token's text: the NFKC-normalized identifier of a name, the
// operator of an operator, empty for the other kinds.
func (p *parser) text(t *token) string {
	switch {
	case t.raw:
		return p.lx.raws[t.aux]
	case t.kind == tName || t.kind == tOp:
		return p.src[t.start:t.end]
	}
	return ""
}

// spelled reports whether the source of token t is s. A raw name is never
// spelled as a keyword or an operator, which are ASCII.
func (p *parser) spelled(t *token, s string) bool {
	return int(t.end-t.start) == len(s) && p.src[t.start:t.end] == s
}

func (p *parser) isOp(s string) bool { return p.opIs(p.tok(), s) }

func (p *parser) isKw(s string) bool { return p.kwIs(p.tok(), s) }

// kwIs reports whether t is the keyword (hard or soft) s.
func (p *parser) kwIs(t *token, s string) bool {
	return t.kind == tName && !t.raw && p.spelled(t, s)
}

// opIs reports whether t is the operator s.
func (p *parser) opIs(t *token, s string) bool { return t.kind == tOp && p.spelled(t, s) }

func (p *parser) acceptOp(s string) bool {
	if p.isOp(s) {
		p.step()
		return true
	}
	return false
}

func (p *parser) acceptKw(s string) bool {
	if p.isKw(s) {
		p.step()
		return true
	}
	return false
}

func (p *parser) expectOp(s string) token {
	if !p.isOp(s) {
		p.fail("expected '%s'", s)
	}
	return p.advance()
}

func (p *parser) expectKw(s string) token {
	if !p.isKw(s) {
		p.fail("expected '%s'", s)
	}
	return p.advance()
}

// keywords are Python 3's hard keywords; soft keywords (match, case,
// type, _) stay ordinary names outside their statements.
var keywords = map[string]bool{
	"False": true, "None": true, "True": true, "and": true, "as": true, "assert": true,
	"async": true, "await": true, "break": true, "class": true, "continue": true,
	"def": true, "del": true, "elif": true, "else": true, "except": true, "finally": true,
	"for": true, "from": true, "global": true, "if": true, "import": true, "in": true,
	"is": true, "lambda": true, "nonlocal": true, "not": true, "or": true, "pass": true,
	"raise": true, "return": true, "try": true, "while": true, "with": true, "yield": true,
}

// isKeyword reports whether s is a hard keyword (keywords, without a
// map lookup).
func isKeyword(s string) bool {
	switch s {
	case "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class",
		"continue", "def", "del", "elif", "else", "except", "finally", "for", "from", "global",
		"if", "import", "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise",
		"return", "try", "while", "with", "yield":
		return true
	}
	return false
}

// isName reports whether t is a name that is not a hard keyword.
func (t *token) isName() bool { return t.kind == tName && !t.kw }

func (p *parser) ident() *Ident {
	t := p.tok()
	if !t.isName() {
		p.fail("expected a name")
	}
	p.step()
	return p.newIdent(Loc{int(t.start), int(t.end)}, p.text(t))
}

// speculate runs fn and reports whether it parsed; on failure the
// position is restored so another reading can be tried.
func (p *parser) speculate(fn func()) (ok bool) {
	save, depth := p.p, p.depth
	defer func() {
		if r := recover(); r != nil {
			if _, isParse := r.(parseError); !isParse {
				panic(r)
			}
			p.p, p.depth = save, depth
			ok = false
		}
	}()
	fn()
	return true
}

// ---- statements ----

func (p *parser) statement(out []Stmt) []Stmt {
	t := p.tok()
	if t.kind == tIndent {
		p.fail("unexpected indent")
	}
	if t.kind == tDedent {
		p.fail("unindent does not match any outer indentation level")
	}
	if t.kind == tOp && p.text(t) == "@" {
		return append(out, p.decorated())
	}
	// Every statement keyword is a hard keyword but match.
	if t.kind == tName && (t.kw || p.spelled(t, "match")) {
		start := int(t.start)
		switch p.text(t) {
		case "def":
			return append(out, p.funcDef(start, false, nil))
		case "class":
			return append(out, p.classDef(start, nil))
		case "if":
			return append(out, p.ifStmt())
		case "while":
			return append(out, p.whileStmt())
		case "for":
			return append(out, p.forStmt(start, false))
		case "try":
			return append(out, p.tryStmt())
		case "with":
			return append(out, p.withStmt(start, false))
		case "async":
			p.advance()
			switch {
			case p.isKw("def"):
				return append(out, p.funcDef(start, true, nil))
			case p.isKw("for"):
				return append(out, p.forStmt(start, true))
			case p.isKw("with"):
				return append(out, p.withStmt(start, true))
			}
			p.invalid()
		case "match":
			if s := p.matchStmt(); s != nil {
				return append(out, s)
			}
		}
	}
	return p.simpleStmts(out)
}

func (p *parser) simpleStmts(out []Stmt) []Stmt {
	for {
		out = append(out, p.simpleStmt())
		if !p.acceptOp(";") {
			break
		}
		if p.tok().kind == tNewline {
			break
		}
	}
	if p.tok().kind != tNewline {
		p.invalid()
	}
	p.advance()
	return out
}

// block parses the body after a compound statement's ':'.
func (p *parser) block() []Stmt {
	p.expectOp(":")
	if p.tok().kind != tNewline {
		return p.simpleStmts(nil)
	}
	p.advance()
	if p.tok().kind != tIndent {
		p.fail("expected an indented block")
	}
	p.advance()
	p.enter()
	var body []Stmt
	for p.tok().kind != tDedent && p.tok().kind != tEnd {
		body = p.statement(body)
	}
	p.leave()
	if p.tok().kind == tDedent {
		p.advance()
	}
	return body
}

func stmtEnd(body []Stmt, fallback int) int {
	if len(body) == 0 {
		return fallback
	}
	_, e := body[len(body)-1].Span()
	return e
}

func (p *parser) simpleStmt() Stmt {
	t := p.tok()
	start := int(t.start)
	// Every statement keyword is a hard keyword but type.
	if t.kind == tName && (t.kw || p.spelled(t, "type")) {
		switch p.text(t) {
		case "pass":
			p.advance()
			return &Pass{Loc{start, p.prevEnd()}}
		case "break":
			p.advance()
			return &Break{Loc{start, p.prevEnd()}}
		case "continue":
			p.advance()
			return &Continue{Loc{start, p.prevEnd()}}
		case "return":
			p.advance()
			var v Expr
			if !p.atStmtEnd() {
				v = p.starExpressions()
			}
			return &Return{Loc{start, p.prevEnd()}, v}
		case "raise":
			p.advance()
			r := &Raise{}
			if !p.atStmtEnd() {
				r.Exc = p.expression()
				if p.acceptKw("from") {
					r.Cause = p.expression()
				}
			}
			r.Loc = Loc{start, p.prevEnd()}
			return r
		case "global", "nonlocal":
			p.advance()
			var names []*Ident
			for {
				names = append(names, p.ident())
				if !p.acceptOp(",") {
					break
				}
			}
			if p.text(t) == "global" {
				return &Global{Loc{start, p.prevEnd()}, names}
			}
			return &Nonlocal{Loc{start, p.prevEnd()}, names}
		case "del":
			p.advance()
			targets := p.targetList(Del)
			return &Delete{Loc{start, p.prevEnd()}, targets}
		case "assert":
			p.advance()
			a := &Assert{Test: p.expression()}
			if p.acceptOp(",") {
				a.Msg = p.expression()
			}
			a.Loc = Loc{start, p.prevEnd()}
			return a
		case "import":
			return p.importStmt()
		case "from":
			return p.fromImport()
		case "type":
			// `type X = ...` and `type X[T] = ...`; otherwise `type` is a name.
			if n := p.peek(1); n.isName() {
				if nn := p.peek(2); p.opIs(nn, "=") || p.opIs(nn, "[") {
					return p.typeAlias()
				}
			}
		}
	}
	return p.exprOrAssign()
}

func (p *parser) atStmtEnd() bool {
	t := p.tok()
	return t.kind == tNewline || t.kind == tEnd || p.opIs(t, ";")
}

func (p *parser) exprOrAssign() Stmt {
	if !p.general && p.isLeafAssign() {
		return p.leafAssign()
	}
	start := int(p.tok().start)
	parenthesized := p.isOp("(")
	first := p.starExpressionsOrYield()
	switch {
	case p.isOp("="):
		// Room for the usual single target and its value.
		targets := append(p.exprList2(), first)
		for p.acceptOp("=") {
			targets = append(targets, p.starExpressionsOrYield())
		}
		value := targets[len(targets)-1]
		targets = targets[:len(targets)-1]
		for _, t := range targets {
			p.setContext(t, Store)
		}
		a := p.nodes.assigns.new()
		*a = Assign{Loc{start, p.prevEnd()}, targets, value}
		return a
	case p.tok().kind == tOp && augOps[p.text(p.tok())]:
		opTok := p.advance()
		op := p.text(&opTok)
		switch first.(type) {
		case *Name, *Attribute, *Subscript:
		default:
			p.failAt(start, "'%s' is an illegal expression for augmented assignment", describe(first))
		}
		p.setContext(first, Store)
		value := p.starExpressionsOrYield()
		return &AugAssign{Loc{start, p.prevEnd()}, first, op[:len(op)-1], value}
	case p.isOp(":"):
		switch first.(type) {
		case *Name, *Attribute, *Subscript:
		case *Tuple:
			p.failAt(start, "only single target (not tuple) can be annotated")
		case *List:
			p.failAt(start, "only single target (not list) can be annotated")
		default:
			p.failAt(start, "illegal target for annotation")
		}
		p.advance()
		p.setContext(first, Store)
		a := &AnnAssign{Target: first, Annotation: p.expression()}
		_, isName := first.(*Name)
		a.Simple = isName && !parenthesized
		if p.acceptOp("=") {
			a.Value = p.starExpressionsOrYield()
		}
		a.Loc = Loc{start, p.prevEnd()}
		return a
	}
	s := p.nodes.exprStmts.new()
	*s = ExprStmt{Loc{start, p.prevEnd()}, first}
	return s
}

// isLeafAssign reports whether the statement at the current token is
// `name = leaf`: a name (not a keyword), '=', one name (not a keyword),
// number or string token, and the end of the statement (a newline or
// ';'). The commonest statement of data modules, it is what leafAssign
// parses without the descent.
func (p *parser) isLeafAssign() bool {
	if t := p.tok(); t.kind != tName || t.kw || p.depth >= maxNesting {
		return false
	}
	if !p.opIs(p.peek(1), "=") {
		return false
	}
	switch v := p.peek(2); v.kind {
	case tName:
		if v.kw {
			return false
		}
	case tNumber, tString:
	default:
		return false
	}
	n := p.peek(3)
	return n.kind == tNewline || p.opIs(n, ";")
}

// leafAssign parses the statement isLeafAssign found as exprOrAssign
// would, in the same order. There, each side is an expression whose one
// token loneAtom sees followed by '=' or the statement's end, so
// expression hands it to atom (after entering a nesting level, which
// isLeafAssign made sure cannot fail), and every level above returns it
// unchanged; then the target is given the Store context.
func (p *parser) leafAssign() Stmt {
	start := int(p.tok().start)
	first := p.atom()
	targets := append(p.exprList2(), first)
	p.step() // '='
	value := p.atom()
	targets = append(targets, value)[:1] // as exprOrAssign leaves them
	p.setContext(first, Store)
	a := p.nodes.assigns.new()
	*a = Assign{Loc{start, p.prevEnd()}, targets, value}
	return a
}

var augOps = map[string]bool{"+=": true, "-=": true, "*=": true, "/=": true, "//=": true, "%=": true,
	"@=": true, "&=": true, "|=": true, "^=": true, ">>=": true, "<<=": true, "**=": true}

func (p *parser) starExpressionsOrYield() Expr {
	if p.isKw("yield") {
		return p.yieldExpr()
	}
	return p.starExpressions()
}

// dottedName parses `a.b.c`. The name is built in one builder: joining
// piece by piece would copy the growing prefix for every component, and a
// hostile `import a.a.a...` has millions of them.
func (p *parser) dottedName() *DottedName {
	first := p.ident()
	if !p.isOp(".") {
		return &DottedName{first.Loc, first.Name}
	}
	var name strings.Builder
	name.WriteString(first.Name)
	end := first.End
	for p.isOp(".") {
		p.advance()
		id := p.ident()
		name.WriteByte('.')
		name.WriteString(id.Name)
		end = id.End
	}
	return &DottedName{Loc{first.Start, end}, name.String()}
}

func (p *parser) importStmt() Stmt {
	start := int(p.advance().start)
	var names []*Alias
	for {
		dn := p.dottedName()
		a := &Alias{Name: dn}
		if p.acceptKw("as") {
			a.AsName = p.ident()
		}
		a.Loc = Loc{dn.Start, p.prevEnd()}
		names = append(names, a)
		if !p.acceptOp(",") {
			break
		}
	}
	return &Import{Loc{start, p.prevEnd()}, names}
}

func (p *parser) fromImport() Stmt {
	start := int(p.advance().start)
	level := 0
	for {
		if p.acceptOp(".") {
			level++
		} else if p.acceptOp("...") {
			level += 3
		} else {
			break
		}
	}
	var mod *DottedName
	if !p.isKw("import") {
		mod = p.dottedName()
	} else if level == 0 {
		p.fail("expected a module name")
	}
	p.expectKw("import")
	var names []*Alias
	if p.isOp("*") {
		t := p.advance()
		l := Loc{int(t.start), int(t.end)}
		names = []*Alias{{Loc: l, Name: &DottedName{l, "*"}}}
		return &ImportFrom{Loc{start, p.prevEnd()}, mod, level, names}
	}
	paren := p.acceptOp("(")
	for {
		id := p.ident()
		a := &Alias{Name: &DottedName{id.Loc, id.Name}}
		if p.acceptKw("as") {
			a.AsName = p.ident()
		}
		a.Loc = Loc{id.Start, p.prevEnd()}
		names = append(names, a)
		if !p.acceptOp(",") {
			break
		}
		if paren && p.isOp(")") {
			break
		}
		if !paren && p.atStmtEnd() {
			p.fail("trailing comma not allowed without surrounding parentheses")
		}
	}
	if paren {
		p.expectOp(")")
	}
	return &ImportFrom{Loc{start, p.prevEnd()}, mod, level, names}
}

func (p *parser) typeAlias() Stmt {
	start := int(p.advance().start)
	p.requires(start, Python312, "the type statement (PEP 695)")
	id := p.ident()
	ta := &TypeAlias{Name: &Name{Loc: id.Loc, ID: id.Name, Ctx: Store}}
	if p.isOp("[") {
		ta.TypeParams = p.typeParams()
	}
	p.expectOp("=")
	ta.Value = p.expression()
	ta.Loc = Loc{start, p.prevEnd()}
	return ta
}

func (p *parser) typeParams() []TypeParam {
	p.requires(int(p.tok().start), Python312, "a type parameter list (PEP 695)")
	p.expectOp("[")
	var out []TypeParam
	for !p.isOp("]") {
		start := int(p.tok().start)
		switch {
		case p.acceptOp("*"):
			tp := &TypeVarTuple{Name: p.ident()}
			if p.acceptOp("=") {
				p.requires(int(p.toks[p.p-1].start), Python313, "a type parameter default (PEP 696)")
				tp.Default = p.starExpression()
			}
			tp.Loc = Loc{start, p.prevEnd()}
			out = append(out, tp)
		case p.acceptOp("**"):
			tp := &ParamSpec{Name: p.ident()}
			if p.acceptOp("=") {
				p.requires(int(p.toks[p.p-1].start), Python313, "a type parameter default (PEP 696)")
				tp.Default = p.expression()
			}
			tp.Loc = Loc{start, p.prevEnd()}
			out = append(out, tp)
		default:
			tp := &TypeVar{Name: p.ident()}
			if p.acceptOp(":") {
				tp.Bound = p.expression()
			}
			if p.acceptOp("=") {
				p.requires(int(p.toks[p.p-1].start), Python313, "a type parameter default (PEP 696)")
				tp.Default = p.expression()
			}
			tp.Loc = Loc{start, p.prevEnd()}
			out = append(out, tp)
		}
		if !p.acceptOp(",") {
			break
		}
	}
	if len(out) == 0 {
		p.fail("type parameter list cannot be empty")
	}
	p.expectOp("]")
	return out
}

func (p *parser) decorated() Stmt {
	start := int(p.tok().start)
	var decos []Expr
	for p.acceptOp("@") {
		decos = append(decos, p.namedExpression())
		if p.tok().kind != tNewline {
			p.invalid()
		}
		p.advance()
	}
	switch {
	case p.isKw("def"):
		return p.funcDef(start, false, decos)
	case p.isKw("class"):
		return p.classDef(start, decos)
	case p.isKw("async") && p.kwIs(p.peek(1), "def"):
		p.advance()
		return p.funcDef(start, true, decos)
	}
	p.invalid()
	return nil
}

func (p *parser) funcDef(start int, async bool, decos []Expr) Stmt {
	p.expectKw("def")
	fd := &FunctionDef{Async: async, Name: p.ident(), Decorators: decos}
	if p.isOp("[") {
		fd.TypeParams = p.typeParams()
	}
	p.expectOp("(")
	fd.Args = p.parameters(")", true)
	p.expectOp(")")
	if p.acceptOp("->") {
		fd.Returns = p.expression()
	}
	fd.Body = p.block()
	fd.Loc = Loc{start, stmtEnd(fd.Body, p.prevEnd())}
	return fd
}

// parameters parses a def (annotated) or lambda parameter list up to the
// closing token.
func (p *parser) parameters(closer string, annotated bool) *Arguments {
	a := &Arguments{}
	start := int(p.tok().start)
	var defaults []Expr
	star, slash, sawDefault := false, false, false
	param := func(starAnnotation bool) *Arg {
		id := p.ident()
		arg := &Arg{Name: id}
		if annotated && p.acceptOp(":") {
			if starAnnotation && p.isOp("*") {
				arg.Annotation = p.starExpression()
			} else {
				arg.Annotation = p.expression()
			}
		}
		arg.Loc = Loc{id.Start, p.prevEnd()}
		return arg
	}
	for !p.isOp(closer) {
		switch {
		case p.isOp("/"):
			if slash || star {
				p.fail("/ must be ahead of *")
			}
			if len(a.Args) == 0 {
				p.fail("at least one argument must precede /")
			}
			p.advance()
			slash = true
			a.PosOnly, a.Args = a.Args, nil
		case p.isOp("*"):
			if star {
				p.fail("* argument may appear only once")
			}
			p.advance()
			star = true
			if p.isOp(",") || p.isOp(closer) {
				if p.isOp(closer) || p.opIs(p.peek(1), closer) || p.opIs(p.peek(1), "**") {
					p.fail("named arguments must follow bare *")
				}
			} else {
				a.Vararg = param(true)
			}
		case p.isOp("**"):
			p.advance()
			a.Kwarg = param(false)
			if p.isOp("=") {
				p.fail("var-keyword argument cannot have default value")
			}
			p.acceptOp(",")
			if !p.isOp(closer) {
				p.fail("arguments cannot follow var-keyword argument")
			}
			continue
		default:
			arg := param(false)
			var def Expr
			if p.acceptOp("=") {
				def = p.expression()
			}
			if star {
				a.KwOnly = append(a.KwOnly, arg)
				a.KwDefaults = append(a.KwDefaults, def)
			} else {
				a.Args = append(a.Args, arg)
				if def != nil {
					defaults = append(defaults, def)
					sawDefault = true
				} else if sawDefault {
					p.failAt(arg.Start, "parameter without a default follows parameter with a default")
				}
			}
		}
		if !p.acceptOp(",") {
			break
		}
	}
	if star && a.Vararg == nil && len(a.KwOnly) == 0 {
		p.fail("named arguments must follow bare *")
	}
	a.Defaults = defaults
	// An empty list ("lambda  :", "def f( ):") ends before the closer it
	// starts at: it spans nothing there, not backwards to the last token.
	end := p.prevEnd()
	if end < start {
		end = start
	}
	a.Loc = Loc{start, end}
	return a
}

func (p *parser) classDef(start int, decos []Expr) Stmt {
	p.expectKw("class")
	cd := &ClassDef{Name: p.ident(), Decorators: decos}
	if p.isOp("[") {
		cd.TypeParams = p.typeParams()
	}
	if p.acceptOp("(") {
		cd.Bases, cd.Keywords = p.callArguments()
		p.expectOp(")")
	}
	cd.Body = p.block()
	cd.Loc = Loc{start, stmtEnd(cd.Body, p.prevEnd())}
	return cd
}

// ifStmt parses an if statement with its elif and else clauses. Each elif
// nests in the tree as the orelse of the clause before it, but the chain
// is parsed in a loop: a file of a million elif clauses must not recurse a
// million frames deep.
func (p *parser) ifStmt() Stmt {
	var chain []*If
	for len(chain) == 0 || p.isKw("elif") {
		start := int(p.advance().start) // if or elif
		s := &If{Loc: Loc{Start: start}, Test: p.namedExpression()}
		s.Body = p.block()
		if n := len(chain); n > 0 {
			chain[n-1].Orelse = []Stmt{s}
		}
		chain = append(chain, s)
	}
	if p.acceptKw("else") {
		chain[len(chain)-1].Orelse = p.block()
	}
	// Each clause ends where its orelse (the next clause) ends.
	end := p.prevEnd()
	for i := len(chain) - 1; i >= 0; i-- {
		s := chain[i]
		s.End = stmtEnd(s.Orelse, stmtEnd(s.Body, end))
	}
	return chain[0]
}

func (p *parser) whileStmt() Stmt {
	start := int(p.advance().start)
	s := &While{Test: p.namedExpression()}
	s.Body = p.block()
	if p.acceptKw("else") {
		s.Orelse = p.block()
	}
	s.Loc = Loc{start, stmtEnd(s.Orelse, stmtEnd(s.Body, p.prevEnd()))}
	return s
}

func (p *parser) forStmt(start int, async bool) Stmt {
	p.expectKw("for")
	s := &For{Async: async}
	s.Target = p.targetTuple(Store)
	p.expectKw("in")
	s.Iter = p.starExpressions()
	s.Body = p.block()
	if p.acceptKw("else") {
		s.Orelse = p.block()
	}
	s.Loc = Loc{start, stmtEnd(s.Orelse, stmtEnd(s.Body, p.prevEnd()))}
	return s
}

func (p *parser) tryStmt() Stmt {
	start := int(p.advance().start)
	s := &Try{Body: p.block()}
	sawPlain := false
	for p.isKw("except") {
		hstart := int(p.advance().start)
		h := &ExceptHandler{}
		star := p.acceptOp("*")
		if star {
			s.Star = true
		} else {
			sawPlain = true
		}
		if s.Star && sawPlain {
			p.failAt(hstart, "cannot have both 'except' and 'except*' on the same 'try'")
		}
		if !p.isOp(":") {
			h.Type = p.expression()
			if p.isOp(",") {
				p.fail("multiple exception types must be parenthesized")
			}
			if p.acceptKw("as") {
				h.Name = p.ident()
			}
		} else if star {
			p.fail("expected one or more exception types")
		}
		h.Body = p.block()
		h.Loc = Loc{hstart, stmtEnd(h.Body, p.prevEnd())}
		s.Handlers = append(s.Handlers, h)
	}
	if len(s.Handlers) > 0 && p.acceptKw("else") {
		s.Orelse = p.block()
	}
	if p.acceptKw("finally") {
		s.Finalbody = p.block()
	}
	if len(s.Handlers) == 0 && s.Finalbody == nil {
		p.fail("expected 'except' or 'finally' block")
	}
	end := stmtEnd(s.Body, p.prevEnd())
	if len(s.Handlers) > 0 {
		end = s.Handlers[len(s.Handlers)-1].End
	}
	s.Loc = Loc{start, stmtEnd(s.Finalbody, stmtEnd(s.Orelse, end))}
	return s
}

func (p *parser) withStmt(start int, async bool) Stmt {
	p.expectKw("with")
	s := &With{Async: async}
	if p.isOp("(") {
		// `with (a as b, c):` groups items in brackets; `with (a, b) as c:`
		// is a tuple expression. Try the grouped form first, as CPython does.
		var items []*WithItem
		if p.speculate(func() {
			p.advance()
			for {
				items = append(items, p.withItem())
				if !p.acceptOp(",") || p.isOp(")") {
					break
				}
			}
			p.expectOp(")")
			if !p.isOp(":") {
				p.invalid()
			}
		}) {
			s.Items = items
			s.Body = p.block()
			s.Loc = Loc{start, stmtEnd(s.Body, p.prevEnd())}
			return s
		}
	}
	for {
		s.Items = append(s.Items, p.withItem())
		if !p.acceptOp(",") {
			break
		}
	}
	s.Body = p.block()
	s.Loc = Loc{start, stmtEnd(s.Body, p.prevEnd())}
	return s
}

func (p *parser) withItem() *WithItem {
	e := p.expression()
	w := &WithItem{ContextExpr: e}
	if p.acceptKw("as") {
		w.OptionalVars = p.target(Store)
	}
	start, _ := e.Span()
	w.Loc = Loc{start, p.prevEnd()}
	return w
}

// matchStmt parses a match statement, or returns nil (consuming nothing)
// when `match` is an ordinary name here.
func (p *parser) matchStmt() Stmt {
	start := int(p.tok().start)
	var subject Expr
	if !p.speculate(func() {
		p.advance()
		subject = p.matchSubject()
		p.expectOp(":")
		if p.tok().kind != tNewline {
			p.invalid()
		}
	}) {
		return nil
	}
	p.advance() // newline
	if p.tok().kind != tIndent {
		p.fail("expected an indented block")
	}
	p.advance()
	m := &Match{Subject: subject}
	p.enter()
	for p.tok().kind != tDedent && p.tok().kind != tEnd {
		if !p.isKw("case") {
			p.fail("expected 'case'")
		}
		cstart := int(p.advance().start)
		c := &MatchCase{Pattern: p.patterns()}
		if p.acceptKw("if") {
			c.Guard = p.namedExpression()
		}
		c.Body = p.block()
		c.Loc = Loc{cstart, stmtEnd(c.Body, p.prevEnd())}
		m.Cases = append(m.Cases, c)
	}
	p.leave()
	if len(m.Cases) == 0 {
		p.fail("expected 'case'")
	}
	if p.tok().kind == tDedent {
		p.advance()
	}
	m.Loc = Loc{start, m.Cases[len(m.Cases)-1].End}
	return m
}

func (p *parser) isKwTok(t *token, s string) bool { return p.kwIs(t, s) }

func (p *parser) matchSubject() Expr {
	start := int(p.tok().start)
	first := p.starNamedExpression()
	if !p.isOp(",") {
		if _, ok := first.(*Starred); ok {
			p.failAt(start, "invalid syntax")
		}
		return first
	}
	elts := []Expr{first}
	for p.acceptOp(",") {
		if p.isOp(":") {
			break
		}
		elts = append(elts, p.starNamedExpression())
	}
	return &Tuple{Loc{start, p.prevEnd()}, elts, Load}
}

// ---- assignment targets ----

// targetTuple parses `for` targets: comma-separated targets that stop
// before `in`, forming a tuple when there is a comma.
func (p *parser) targetTuple(ctx Context) Expr {
	start := int(p.tok().start)
	first := p.starTarget(ctx)
	if !p.isOp(",") {
		if _, ok := first.(*Starred); ok {
			p.failAt(start, "starred assignment target must be in a list or tuple")
		}
		return first
	}
	elts := []Expr{first}
	for p.acceptOp(",") {
		if p.isKw("in") || p.isOp("=") {
			break
		}
		elts = append(elts, p.starTarget(ctx))
	}
	return &Tuple{Loc{start, p.prevEnd()}, elts, ctx}
}

func (p *parser) starTarget(ctx Context) Expr {
	if p.isOp("*") {
		start := int(p.advance().start)
		v := p.target(ctx)
		return &Starred{Loc{start, p.prevEnd()}, v, ctx}
	}
	return p.target(ctx)
}

// target parses one target at bitwise-or precedence, so comparisons
// (notably `in`) end it.
func (p *parser) target(ctx Context) Expr {
	e := p.bitwiseOr()
	p.setContext(e, ctx)
	return e
}

// targetList parses `del` targets.
func (p *parser) targetList(ctx Context) []Expr {
	var out []Expr
	for {
		out = append(out, p.target(ctx))
		if !p.acceptOp(",") || p.atStmtEnd() {
			break
		}
	}
	return out
}

// setContext marks an expression as an assignment or deletion target and
// rejects expressions that cannot be one, as Python's parser does.
func (p *parser) setContext(e Expr, ctx Context) {
	verb := "assign to"
	if ctx == Del {
		verb = "delete"
	}
	switch x := e.(type) {
	case *Name:
		x.Ctx = ctx
	case *Attribute:
		x.Ctx = ctx
	case *Subscript:
		x.Ctx = ctx
	case *Starred:
		if ctx == Del {
			p.failAt(x.Start, "cannot delete starred")
		}
		x.Ctx = ctx
		p.setContext(x.Value, ctx)
	case *Tuple:
		x.Ctx = ctx
		for _, el := range x.Elts {
			p.setContext(el, ctx)
		}
	case *List:
		x.Ctx = ctx
		for _, el := range x.Elts {
			p.setContext(el, ctx)
		}
	default:
		s, _ := e.Span()
		p.failAt(s, "cannot %s %s", verb, describe(e))
	}
}

// describe names an expression the way CPython's error messages do.
func describe(e Expr) string {
	switch x := e.(type) {
	case *Call:
		return "function call"
	case *Constant:
		switch x.Kind {
		case ConstNone:
			return "None"
		case ConstTrue:
			return "True"
		case ConstFalse:
			return "False"
		case ConstEllipsis:
			return "ellipsis"
		}
		return "literal"
	case *BinOp, *UnaryOp:
		return "expression"
	case *BoolOp:
		return "expression"
	case *Compare:
		return "comparison"
	case *Lambda:
		return "lambda"
	case *IfExp:
		return "conditional expression"
	case *NamedExpr:
		return "named expression"
	case *Dict:
		return "dict literal"
	case *Set:
		return "set display"
	case *ListComp:
		return "list comprehension"
	case *SetComp:
		return "set comprehension"
	case *DictComp:
		return "dict comprehension"
	case *GeneratorExp:
		return "generator expression"
	case *Await:
		return "await expression"
	case *Yield, *YieldFrom:
		return "yield expression"
	case *JoinedStr:
		return "f-string expression"
	case *Tuple:
		return "tuple"
	case *List:
		return "list"
	case *Starred:
		return "starred"
	}
	return "expression"
}
