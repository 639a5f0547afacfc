package pyparse

import (
	"strings"
)

// Expression parsing follows the precedence levels of Python's grammar,
// one method per level. Left-associative operators loop instead of
// recursing, so long chains like a+a+...+a cost no stack.

func (p *parser) exprStart() int { return int(p.tok().start) }

// starExpressions is `star_expressions`: a bare tuple when commas occur.
func (p *parser) starExpressions() Expr {
	start := p.exprStart()
	first := p.starExpression()
	if !p.isOp(",") {
		return first
	}
	elts := []Expr{first}
	for p.acceptOp(",") {
		if !p.startsExpression() {
			break
		}
		elts = append(elts, p.starExpression())
	}
	return &Tuple{Loc{start, p.prevEnd()}, elts, Load}
}

func (p *parser) starExpression() Expr {
	if p.isOp("*") {
		start := int(p.advance().start)
		v := p.bitwiseOr()
		return &Starred{Loc{start, p.prevEnd()}, v, Load}
	}
	return p.expression()
}

func (p *parser) starNamedExpression() Expr {
	if p.isOp("*") {
		start := int(p.advance().start)
		v := p.bitwiseOr()
		return &Starred{Loc{start, p.prevEnd()}, v, Load}
	}
	return p.namedExpression()
}

// startsExpression reports whether the current token can begin an
// expression (used after a trailing comma).
func (p *parser) startsExpression() bool {
	t := p.tok()
	switch t.kind {
	case tName:
		if !t.kw {
			return true
		}
		switch p.text(t) {
		case "None", "True", "False", "not", "lambda", "await", "yield":
			return true
		}
		return false
	case tNumber, tString, tFStart:
		return true
	case tOp:
		switch p.text(t) {
		case "(", "[", "{", "-", "+", "~", "*", "...":
			return true
		}
	}
	return false
}

func (p *parser) namedExpression() Expr {
	t := p.tok()
	if t.isName() && p.opIs(p.peek(1), ":=") {
		id := p.ident()
		p.advance()
		v := p.expression()
		return &NamedExpr{Loc{id.Start, p.prevEnd()}, &Name{id.Loc, id.Name, Store}, v}
	}
	e := p.expression()
	if p.isOp(":=") {
		s, _ := e.Span()
		p.failAt(s, "cannot use assignment expressions with %s", describe(e))
	}
	return e
}

func (p *parser) expression() Expr {
	p.enter()
	defer p.leave()
	if p.isKw("lambda") {
		return p.lambda()
	}
	if p.loneAtom() {
		return p.atom()
	}
	start := p.exprStart()
	body := p.disjunction()
	if p.isKw("if") {
		p.advance()
		test := p.disjunction()
		p.expectKw("else")
		orelse := p.expression()
		return &IfExp{Loc{start, p.prevEnd()}, test, body, orelse}
	}
	return body
}

// loneAtom reports whether the expression at the current token is a
// single name, number or string token followed by a token that no level
// from disjunction down to primary consumes (the operators, keywords,
// trailers and adjacent strings those levels look for). Such an
// expression is what atom returns: every level above it would return its
// operand unchanged, so expression may call atom directly. Keywords are
// left to the full descent (they start their own constructs or fail there,
// with that path's error), and so are f-strings.
func (p *parser) loneAtom() bool {
	t := p.tok()
	switch t.kind {
	case tName:
		if t.kw {
			return false
		}
	case tNumber, tString:
	default:
		return false
	}
	n := p.peek(1)
	switch n.kind {
	case tNewline:
		return true
	case tOp:
		switch p.text(n) {
		case ")", "]", "}", ",", "=", ":", ";":
			return true
		}
	}
	return false
}

func (p *parser) lambda() Expr {
	start := int(p.advance().start)
	args := p.parameters(":", false)
	p.expectOp(":")
	body := p.expression()
	return &Lambda{Loc{start, p.prevEnd()}, args, body}
}

func (p *parser) yieldExpr() Expr {
	start := int(p.advance().start)
	if p.acceptKw("from") {
		v := p.expression()
		return &YieldFrom{Loc{start, p.prevEnd()}, v}
	}
	var v Expr
	if p.startsExpression() {
		v = p.starExpressions()
	}
	return &Yield{Loc{start, p.prevEnd()}, v}
}

func (p *parser) disjunction() Expr {
	start := p.exprStart()
	first := p.conjunction()
	if !p.isKw("or") {
		return first
	}
	vals := []Expr{first}
	for p.acceptKw("or") {
		vals = append(vals, p.conjunction())
	}
	return &BoolOp{Loc{start, p.prevEnd()}, "or", vals}
}

func (p *parser) conjunction() Expr {
	start := p.exprStart()
	first := p.inversion()
	if !p.isKw("and") {
		return first
	}
	vals := []Expr{first}
	for p.acceptKw("and") {
		vals = append(vals, p.inversion())
	}
	return &BoolOp{Loc{start, p.prevEnd()}, "and", vals}
}

func (p *parser) inversion() Expr {
	if p.isKw("not") {
		p.enter()
		defer p.leave()
		start := int(p.advance().start)
		v := p.inversion()
		return &UnaryOp{Loc{start, p.prevEnd()}, "not", v}
	}
	return p.comparison()
}

func (p *parser) compareOp() (string, bool) {
	t := p.tok()
	if t.kind == tOp {
		switch p.text(t) {
		case "==", "!=", "<", "<=", ">", ">=":
			p.advance()
			return p.text(t), true
		}
		return "", false
	}
	switch {
	case p.kwIs(t, "in"):
		p.advance()
		return "in", true
	case p.kwIs(t, "not") && p.kwIs(p.peek(1), "in"):
		p.step()
		p.step()
		return "not in", true
	case p.kwIs(t, "is"):
		p.advance()
		if p.acceptKw("not") {
			return "is not", true
		}
		return "is", true
	}
	return "", false
}

func (p *parser) comparison() Expr {
	start := p.exprStart()
	left := p.bitwiseOr()
	var ops []string
	var comps []Expr
	for {
		op, ok := p.compareOp()
		if !ok {
			break
		}
		ops = append(ops, op)
		comps = append(comps, p.bitwiseOr())
	}
	if len(ops) == 0 {
		return left
	}
	return &Compare{Loc{start, p.prevEnd()}, left, ops, comps}
}

// The six levels of left-associative binary operators, from `|` (level
// 0) to the `*` level (5), are parsed by precedence climbing: an operand
// is parsed once, and only an operator that follows it leads into the
// levels, where recursive descent would call down through all six levels
// (and back) for every operand. The tree, spans and errors are those of
// the descent: each operator takes as its right operand everything of
// higher precedence after it, and an operator of its own level or lower
// ends that operand, so equal operators group to the left.

// binaryLevel is the level of the binary operator t, or -1 when t is
// not one of them.
func (p *parser) binaryLevel(t *token) int {
	if t.kind != tOp {
		return -1
	}
	op := p.src[t.start:t.end]
	switch len(op) {
	case 1:
		switch op[0] {
		case '|':
			return 0
		case '^':
			return 1
		case '&':
			return 2
		case '+', '-':
			return 4
		case '*', '/', '%', '@':
			return 5
		}
	case 2:
		switch op {
		case "<<", ">>":
			return 3
		case "//":
			return 5
		}
	}
	return -1
}

// binaryOperand parses an expression of the levels from lvl up: a factor
// and the operators of level lvl and above after it.
func (p *parser) binaryOperand(lvl int) Expr {
	start := p.exprStart()
	left := p.factor()
	for {
		t := p.tok()
		l := p.binaryLevel(t)
		if l < lvl {
			return left
		}
		op := p.text(t)
		p.advance()
		right := p.binaryOperand(l + 1)
		b := p.nodes.binops.new()
		*b = BinOp{Loc{start, p.prevEnd()}, left, op, right}
		left = b
	}
}

// bitwiseOr is `bitwise_or`, every level of binary operators.
func (p *parser) bitwiseOr() Expr { return p.binaryOperand(0) }

func (p *parser) factor() Expr {
	t := p.tok()
	if t.kind == tOp && (p.text(t) == "-" || p.text(t) == "+" || p.text(t) == "~") {
		p.enter()
		defer p.leave()
		p.advance()
		v := p.factor()
		return &UnaryOp{Loc{int(t.start), p.prevEnd()}, p.text(t), v}
	}
	return p.power()
}

func (p *parser) power() Expr {
	start := p.exprStart()
	base := p.awaitPrimary()
	if p.acceptOp("**") {
		p.enter()
		defer p.leave()
		exp := p.factor()
		b := p.nodes.binops.new()
		*b = BinOp{Loc{start, p.prevEnd()}, base, "**", exp}
		return b
	}
	return base
}

func (p *parser) awaitPrimary() Expr {
	if p.isKw("await") {
		p.enter()
		defer p.leave()
		start := int(p.advance().start)
		v := p.primary()
		return &Await{Loc{start, p.prevEnd()}, v}
	}
	return p.primary()
}

func (p *parser) primary() Expr {
	start := p.exprStart()
	e := p.atom()
	for {
		switch {
		case p.isOp("."):
			p.advance()
			id := p.ident()
			a := p.nodes.attrs.new()
			*a = Attribute{Loc{start, p.prevEnd()}, e, id, Load}
			e = a
		case p.isOp("("):
			p.advance()
			args, kws := p.callArguments()
			p.expectOp(")")
			c := p.nodes.calls.new()
			*c = Call{Loc{start, p.prevEnd()}, e, args, kws}
			e = c
		case p.isOp("["):
			p.advance()
			sl := p.slices()
			p.expectOp("]")
			s := p.nodes.subs.new()
			*s = Subscript{Loc{start, p.prevEnd()}, e, sl, Load}
			e = s
		default:
			return e
		}
	}
}

// callArguments parses call (or class base) arguments up to ')'.
func (p *parser) callArguments() ([]Expr, []*Keyword) {
	var args []Expr
	var kws []*Keyword
	sawKeyword, sawDoubleStar := false, false
	for !p.isOp(")") {
		start := p.exprStart()
		switch {
		case p.isOp("*"):
			if sawDoubleStar {
				p.fail("iterable argument unpacking follows keyword argument unpacking")
			}
			p.advance()
			v := p.expression()
			args = append(args, &Starred{Loc{start, p.prevEnd()}, v, Load})
		case p.isOp("**"):
			p.advance()
			v := p.expression()
			kws = append(kws, &Keyword{Loc{start, p.prevEnd()}, nil, v})
			sawDoubleStar = true
		case p.tok().isName() && p.opIs(p.peek(1), "="):
			id := p.ident()
			p.advance()
			v := p.expression()
			kws = append(kws, &Keyword{Loc{start, p.prevEnd()}, id, v})
			sawKeyword = true
		default:
			e := p.namedExpression()
			if p.isKw("for") || p.isKw("async") {
				gens := p.comprehensions()
				e = &GeneratorExp{Loc{start, p.prevEnd()}, e, gens}
				if len(args) > 0 || len(kws) > 0 || !(p.isOp(")") || p.isOp(",") && p.opIs(p.peek(1), ")")) {
					p.failAt(start, "Generator expression must be parenthesized")
				}
			}
			if p.isOp("=") {
				p.failAt(start, "expression cannot contain assignment, perhaps you meant \"==\"?")
			}
			if sawDoubleStar {
				p.failAt(start, "positional argument follows keyword argument unpacking")
			}
			if sawKeyword {
				p.failAt(start, "positional argument follows keyword argument")
			}
			args = append(args, e)
		}
		if !p.acceptOp(",") {
			break
		}
	}
	return args, kws
}

func (p *parser) slices() Expr {
	start := p.exprStart()
	first := p.slice()
	if !p.isOp(",") {
		if _, ok := first.(*Starred); ok {
			// x[*a] subscripts with a one-element tuple.
			return &Tuple{Loc{start, p.prevEnd()}, []Expr{first}, Load}
		}
		return first
	}
	elts := []Expr{first}
	for p.acceptOp(",") {
		if p.isOp("]") {
			break
		}
		elts = append(elts, p.slice())
	}
	return &Tuple{Loc{start, p.prevEnd()}, elts, Load}
}

func (p *parser) slice() Expr {
	start := p.exprStart()
	if p.isOp("*") {
		return p.starNamedExpression()
	}
	var lower Expr
	if !p.isOp(":") {
		paren := p.isOp("(")
		lower = p.namedExpression()
		if !p.isOp(":") {
			return lower
		}
		if _, ok := lower.(*NamedExpr); ok && !paren {
			p.failAt(start, "invalid syntax")
		}
	}
	p.expectOp(":")
	s := &Slice{Lower: lower}
	if !p.isOp(":") && !p.isOp("]") && !p.isOp(",") {
		s.Upper = p.expression()
	}
	if p.acceptOp(":") {
		if !p.isOp("]") && !p.isOp(",") {
			s.Step = p.expression()
		}
	}
	s.Loc = Loc{start, p.prevEnd()}
	return s
}

func (p *parser) atom() Expr {
	t := p.tok()
	start, end := int(t.start), int(t.end)
	switch t.kind {
	case tName:
		if !t.raw {
			switch p.text(t) {
			case "None":
				p.advance()
				return p.newConstant(Constant{Loc: Loc{start, end}, Kind: ConstNone})
			case "True":
				p.advance()
				return p.newConstant(Constant{Loc: Loc{start, end}, Kind: ConstTrue})
			case "False":
				p.advance()
				return p.newConstant(Constant{Loc: Loc{start, end}, Kind: ConstFalse})
			}
			if t.kw {
				p.invalid()
			}
		}
		p.advance()
		return p.newName(Loc{start, end}, p.text(t), Load)
	case tNumber:
		p.advance()
		return p.newConstant(Constant{Loc: Loc{start, end}, Kind: numberKind(p.f.Src[start:end]), Str: p.f.Src[start:end]})
	case tString, tFStart:
		return p.strings()
	case tOp:
		switch p.text(t) {
		case "...":
			p.advance()
			return &Constant{Loc: Loc{start, end}, Kind: ConstEllipsis}
		case "(":
			return p.parenAtom()
		case "[":
			return p.listAtom()
		case "{":
			return p.braceAtom()
		}
	}
	p.invalid()
	return nil
}

func numberKind(s string) ConstKind {
	l := strings.ToLower(s)
	switch {
	case strings.HasSuffix(l, "j"):
		return ConstComplex
	case strings.HasPrefix(l, "0x") || strings.HasPrefix(l, "0o") || strings.HasPrefix(l, "0b"):
		return ConstInt
	case strings.ContainsAny(l, ".e"):
		return ConstFloat
	}
	return ConstInt
}

func (p *parser) parenAtom() Expr {
	p.enter()
	defer p.leave()
	start := int(p.advance().start)
	if p.isOp(")") {
		p.advance()
		return &Tuple{Loc{start, p.prevEnd()}, nil, Load}
	}
	if p.isKw("yield") {
		e := p.yieldExpr()
		p.expectOp(")")
		return e
	}
	first := p.starNamedExpression()
	if p.isKw("for") || p.isKw("async") {
		if _, ok := first.(*Starred); ok {
			p.failAt(start, "iterable unpacking cannot be used in comprehension")
		}
		gens := p.comprehensions()
		p.expectOp(")")
		return &GeneratorExp{Loc{start, p.prevEnd()}, first, gens}
	}
	if p.acceptOp(")") {
		if _, ok := first.(*Starred); ok {
			p.failAt(start, "cannot use starred expression here")
		}
		return first // a parenthesized expression keeps its inner node
	}
	elts := []Expr{first}
	for p.acceptOp(",") {
		if p.isOp(")") {
			break
		}
		elts = append(elts, p.starNamedExpression())
	}
	p.expectOp(")")
	return &Tuple{Loc{start, p.prevEnd()}, elts, Load}
}

func (p *parser) listAtom() Expr {
	p.enter()
	defer p.leave()
	start := int(p.advance().start)
	if p.acceptOp("]") {
		return &List{Loc{start, p.prevEnd()}, nil, Load}
	}
	first := p.starNamedExpression()
	if p.isKw("for") || p.isKw("async") {
		if _, ok := first.(*Starred); ok {
			p.failAt(start, "iterable unpacking cannot be used in comprehension")
		}
		gens := p.comprehensions()
		p.expectOp("]")
		return &ListComp{Loc{start, p.prevEnd()}, first, gens}
	}
	elts := []Expr{first}
	for p.acceptOp(",") {
		if p.isOp("]") {
			break
		}
		elts = append(elts, p.starNamedExpression())
	}
	p.expectOp("]")
	return &List{Loc{start, p.prevEnd()}, elts, Load}
}

func (p *parser) braceAtom() Expr {
	p.enter()
	defer p.leave()
	start := int(p.advance().start)
	if p.acceptOp("}") {
		return &Dict{Loc: Loc{start, p.prevEnd()}}
	}
	if p.isOp("**") {
		return p.dictRest(start, nil, nil)
	}
	firstParen := p.isOp("(")
	first := p.starNamedExpression()
	if p.acceptOp(":") {
		_, named := first.(*NamedExpr)
		_, starred := first.(*Starred)
		if starred || named && !firstParen {
			s, _ := first.Span()
			p.failAt(s, "invalid syntax")
		}
		value := p.expression()
		if p.isKw("for") || p.isKw("async") {
			gens := p.comprehensions()
			p.expectOp("}")
			return &DictComp{Loc{start, p.prevEnd()}, first, value, gens}
		}
		return p.dictRest(start, []Expr{first}, []Expr{value})
	}
	if p.isKw("for") || p.isKw("async") {
		if _, ok := first.(*Starred); ok {
			p.failAt(start, "iterable unpacking cannot be used in comprehension")
		}
		gens := p.comprehensions()
		p.expectOp("}")
		return &SetComp{Loc{start, p.prevEnd()}, first, gens}
	}
	elts := []Expr{first}
	for p.acceptOp(",") {
		if p.isOp("}") {
			break
		}
		elts = append(elts, p.starNamedExpression())
	}
	p.expectOp("}")
	return &Set{Loc{start, p.prevEnd()}, elts}
}

// dictRest parses the remaining `key: value` and `**mapping` items of a
// dict display whose first items are already parsed.
func (p *parser) dictRest(start int, keys, values []Expr) Expr {
	if len(keys) > 0 && !p.acceptOp(",") {
		p.expectOp("}")
		return &Dict{Loc{start, p.prevEnd()}, keys, values}
	}
	for !p.isOp("}") {
		if p.acceptOp("**") {
			keys = append(keys, nil)
			values = append(values, p.bitwiseOr())
		} else {
			k := p.expression()
			p.expectOp(":")
			keys = append(keys, k)
			values = append(values, p.expression())
		}
		if !p.acceptOp(",") {
			break
		}
	}
	p.expectOp("}")
	return &Dict{Loc{start, p.prevEnd()}, keys, values}
}

func (p *parser) comprehensions() []*Comprehension {
	var out []*Comprehension
	for p.isKw("for") || p.isKw("async") && p.kwIs(p.peek(1), "for") {
		start := p.exprStart()
		c := &Comprehension{}
		if p.acceptKw("async") {
			c.Async = true
		}
		p.expectKw("for")
		c.Target = p.targetTuple(Store)
		p.expectKw("in")
		c.Iter = p.disjunction()
		for p.acceptKw("if") {
			c.Ifs = append(c.Ifs, p.disjunction())
		}
		c.Loc = Loc{start, p.prevEnd()}
		out = append(out, c)
	}
	if len(out) == 0 {
		p.invalid()
	}
	return out
}
