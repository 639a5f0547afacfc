package pyparse

// Patterns of the match statement (PEP 634) have their own grammar:
// literals, captures, dotted value names, sequences, mappings, class
// patterns, alternatives and `as` bindings.

// patterns parses the pattern after `case`: an open sequence when a
// top-level comma occurs.
func (p *parser) patterns() Pattern {
	start := p.exprStart()
	first := p.maybeStarPattern()
	if !p.isOp(",") {
		if _, ok := first.(*MatchStar); ok {
			p.failAt(start, "invalid syntax")
		}
		return first
	}
	pats := []Pattern{first}
	for p.acceptOp(",") {
		if p.isOp(":") || p.isKw("if") {
			break
		}
		pats = append(pats, p.maybeStarPattern())
	}
	return &MatchSequence{Loc{start, p.prevEnd()}, pats}
}

func (p *parser) maybeStarPattern() Pattern {
	if p.isOp("*") {
		start := int(p.advance().start)
		id := p.ident()
		ms := &MatchStar{Loc: Loc{start, p.prevEnd()}}
		if id.Name != "_" {
			ms.Name = id
		}
		return ms
	}
	return p.pattern()
}

func (p *parser) pattern() Pattern {
	p.enter()
	defer p.leave()
	start := p.exprStart()
	or := p.orPattern()
	if p.acceptKw("as") {
		id := p.ident()
		if id.Name == "_" {
			p.failAt(id.Start, "cannot use '_' as a target")
		}
		return &MatchAs{Loc{start, p.prevEnd()}, or, id}
	}
	return or
}

func (p *parser) orPattern() Pattern {
	start := p.exprStart()
	first := p.closedPattern()
	if !p.isOp("|") {
		return first
	}
	pats := []Pattern{first}
	for p.acceptOp("|") {
		pats = append(pats, p.closedPattern())
	}
	return &MatchOr{Loc{start, p.prevEnd()}, pats}
}

func (p *parser) closedPattern() Pattern {
	t := p.tok()
	start := int(t.start)
	switch {
	case p.kwIs(t, "None"), p.kwIs(t, "True"), p.kwIs(t, "False"):
		p.advance()
		k := ConstNone
		switch p.text(t) {
		case "True":
			k = ConstTrue
		case "False":
			k = ConstFalse
		}
		return &MatchSingleton{Loc{start, p.prevEnd()}, k}
	case t.kind == tNumber || p.opIs(t, "-"):
		v := p.signedNumberPattern()
		return &MatchValue{Loc{start, p.prevEnd()}, v}
	case t.kind == tString || t.kind == tFStart:
		e := p.strings()
		if _, ok := e.(*JoinedStr); ok {
			p.failAt(start, "patterns may only match literals and attribute lookups")
		}
		_, end := e.Span()
		return &MatchValue{Loc{start, end}, e}
	case p.opIs(t, "("):
		p.advance()
		if p.acceptOp(")") {
			return &MatchSequence{Loc: Loc{start, p.prevEnd()}}
		}
		first := p.maybeStarPattern()
		if p.acceptOp(")") {
			if _, ok := first.(*MatchStar); ok {
				return &MatchSequence{Loc{start, p.prevEnd()}, []Pattern{first}}
			}
			return first // a group pattern
		}
		pats := []Pattern{first}
		for p.acceptOp(",") {
			if p.isOp(")") {
				break
			}
			pats = append(pats, p.maybeStarPattern())
		}
		p.expectOp(")")
		return &MatchSequence{Loc{start, p.prevEnd()}, pats}
	case p.opIs(t, "["):
		p.advance()
		var pats []Pattern
		for !p.isOp("]") {
			pats = append(pats, p.maybeStarPattern())
			if !p.acceptOp(",") {
				break
			}
		}
		p.expectOp("]")
		return &MatchSequence{Loc{start, p.prevEnd()}, pats}
	case p.opIs(t, "{"):
		return p.mappingPattern()
	case t.isName():
		id := p.ident()
		if !p.isOp(".") && !p.isOp("(") {
			if id.Name == "_" {
				return &MatchAs{Loc: id.Loc}
			}
			return &MatchAs{Loc: id.Loc, Name: id}
		}
		var e Expr = &Name{id.Loc, id.Name, Load}
		for p.acceptOp(".") {
			attr := p.ident()
			e = &Attribute{Loc{start, p.prevEnd()}, e, attr, Load}
		}
		if p.isOp("(") {
			return p.classPattern(start, e)
		}
		return &MatchValue{Loc{start, p.prevEnd()}, e}
	}
	p.invalid()
	return nil
}

// signedNumberPattern parses `-1`, `1.5`, `1 + 2j` or `-1 - 2j`.
func (p *parser) signedNumberPattern() Expr {
	start := p.exprStart()
	number := func() Expr {
		t := p.tok()
		if t.kind != tNumber {
			p.invalid()
		}
		p.advance()
		s := p.f.Src[t.start:t.end]
		return &Constant{Loc: Loc{int(t.start), int(t.end)}, Kind: numberKind(s), Str: s}
	}
	var e Expr
	if p.acceptOp("-") {
		v := number()
		e = &UnaryOp{Loc{start, p.prevEnd()}, "-", v}
	} else {
		e = number()
	}
	if p.isOp("+") || p.isOp("-") {
		opTok := p.advance()
		op := p.text(&opTok)
		r := number()
		if c := r.(*Constant); c.Kind != ConstComplex {
			p.failAt(c.Start, "imaginary number required in complex literal")
		}
		e = &BinOp{Loc{start, p.prevEnd()}, e, op, r}
	}
	return e
}

func (p *parser) mappingPattern() Pattern {
	start := int(p.advance().start)
	m := &MatchMapping{}
	for !p.isOp("}") {
		if p.acceptOp("**") {
			m.Rest = p.ident()
			p.acceptOp(",")
			break
		}
		t := p.tok()
		var key Expr
		switch {
		case t.kind == tNumber || p.opIs(t, "-"):
			key = p.signedNumberPattern()
		case t.kind == tString:
			key = p.strings()
		case p.kwIs(t, "None"), p.kwIs(t, "True"), p.kwIs(t, "False"):
			key = p.atom()
		case t.isName():
			id := p.ident()
			key = &Name{id.Loc, id.Name, Load}
			if !p.isOp(".") {
				p.failAt(id.Start, "mapping pattern keys may only match literals and attribute lookups")
			}
			for p.acceptOp(".") {
				attr := p.ident()
				key = &Attribute{Loc{id.Start, p.prevEnd()}, key, attr, Load}
			}
		default:
			p.invalid()
		}
		p.expectOp(":")
		m.Keys = append(m.Keys, key)
		m.Patterns = append(m.Patterns, p.pattern())
		if !p.acceptOp(",") {
			break
		}
	}
	p.expectOp("}")
	m.Loc = Loc{start, p.prevEnd()}
	return m
}

func (p *parser) classPattern(start int, cls Expr) Pattern {
	p.expectOp("(")
	c := &MatchClass{Cls: cls}
	for !p.isOp(")") {
		if p.tok().isName() && p.opIs(p.peek(1), "=") {
			id := p.ident()
			p.advance()
			c.KwdAttrs = append(c.KwdAttrs, id)
			c.KwdPatterns = append(c.KwdPatterns, p.pattern())
		} else {
			if len(c.KwdAttrs) > 0 {
				p.fail("positional patterns follow keyword patterns")
			}
			c.Patterns = append(c.Patterns, p.pattern())
		}
		if !p.acceptOp(",") {
			break
		}
	}
	p.expectOp(")")
	c.Loc = Loc{start, p.prevEnd()}
	return c
}
