package pyparse

// A file of a hundred thousand lines makes hundreds of thousands of
// nodes. The commonest kinds are taken from arrays allocated a batch at a
// time instead of one allocation each: a tree's nodes live and die
// together, so an array is freed with the tree that uses it. A parse that
// hands out its statements one at a time (ParseStatements) hands out the
// same arrays again for each statement.

// slab hands out values of one type from arrays it allocates in batches,
// growing from a few (a small file pays for little it does not use) to
// maxSlab. A value handed out is overwritten whole by its taker.
type slab[T any] struct {
	cur    []T   // the array being handed out
	used   int   // values handed out of cur
	arrays [][]T // every array, in order; cur is arrays[idx]
	idx    int
}

const minSlab, maxSlab = 8, 256

func (s *slab[T]) new() *T {
	if s.used < len(s.cur) {
		x := &s.cur[s.used]
		s.used++
		return x
	}
	return s.grow()
}

func (s *slab[T]) grow() *T {
	if s.cur != nil {
		s.idx++
	}
	if s.idx == len(s.arrays) {
		n := minSlab
		if s.cur != nil {
			n = min(2*len(s.cur), maxSlab)
		}
		s.arrays = append(s.arrays, make([]T, n))
	}
	s.cur, s.used = s.arrays[s.idx], 1
	return &s.cur[0]
}

// reuse hands out the arrays again from the start.
func (s *slab[T]) reuse() {
	if len(s.arrays) > 0 {
		s.cur, s.used, s.idx = s.arrays[0], 0, 0
	}
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
	exprs slab[Expr]
}

func (n *nodes) reuse() {
	n.names.reuse()
	n.consts.reuse()
	n.idents.reuse()
	n.attrs.reuse()
	n.calls.reuse()
	n.subs.reuse()
	n.binops.reuse()
	n.assigns.reuse()
	n.exprStmts.reuse()
	n.exprs.reuse()
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

// exprList returns an empty list with room for two expressions.
func (p *parser) exprList2() []Expr {
	s := &p.nodes.exprs
	if s.used+2 > len(s.cur) {
		s.grow()
		s.used = 0
	}
	l := s.cur[s.used : s.used : s.used+2]
	s.used += 2
	return l
}
