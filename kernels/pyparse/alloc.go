package pyparse

// A file of a hundred thousand lines makes hundreds of thousands of
// nodes. The commonest kinds are taken from arrays allocated a batch at a
// time instead of one allocation each: a tree's nodes live and die
// together, so an array is freed with the tree that uses it.

// slab hands out zeroed values of one type from arrays it allocates in
// batches, growing from a few (a small file pays for little it does not
// use) to maxSlab.
type slab[T any] struct {
	free []T
	next int
}

const minSlab, maxSlab = 8, 256

func (s *slab[T]) new() *T {
	if len(s.free) == 0 {
		s.next = min(max(2*s.next, minSlab), maxSlab)
		s.free = make([]T, s.next)
	}
	x := &s.free[0]
	s.free = s.free[1:]
	return x
}

// nodes are the parser's slabs.
type nodes struct {
	names     slab[Name]
	consts    slab[Constant]
	idents    slab[Ident]
	attrs     slab[Attribute]
	calls     slab[Call]
	subs      slab[Subscript]
	binops    slab[BinOp]
	assigns   slab[Assign]
	exprStmts slab[ExprStmt]
	// exprs backs short expression lists: each is cut with its capacity
	// set to its length, so appending to one never writes into the next.
	exprs     []Expr
	exprsNext int
}

func (p *parser) newName(loc Loc, id string, ctx Context) *Name {
	n := p.nodes.names.new()
	*n = Name{loc, id, ctx}
	return n
}

func (p *parser) newConstant(c Constant) *Constant {
	n := p.nodes.consts.new()
	*n = c
	return n
}

func (p *parser) newIdent(loc Loc, name string) *Ident {
	n := p.nodes.idents.new()
	*n = Ident{Loc: loc, Name: name}
	return n
}

// exprList returns an empty list with room for n expressions.
func (p *parser) exprList(n int) []Expr {
	if len(p.nodes.exprs) < n {
		p.nodes.exprsNext = min(max(2*p.nodes.exprsNext, minSlab), maxSlab)
		p.nodes.exprs = make([]Expr, max(n, p.nodes.exprsNext))
	}
	l := p.nodes.exprs[:0:n]
	p.nodes.exprs = p.nodes.exprs[n:]
	return l
}
