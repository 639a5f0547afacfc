package pyparse

import "sync"

// Inspect walks the tree rooted at n in source order, calling fn for each
// node; when fn returns false the node's children are skipped. The walk
// keeps its own stack: left-associative chains such as a+a+...+a or
// a.b.c... make trees millions of levels deep, which recursion would not
// survive.
func Inspect(n Node, fn func(Node) bool) {
	w, _ := walkers.Get().(*Walker)
	if w == nil {
		w = new(Walker)
	}
	w.Inspect(n, fn)
	if cap(w.stack) <= maxPooledStack {
		walkers.Put(w)
	}
}

// A Walker walks trees as Inspect does and keeps its stack from one walk
// to the next: a reader that walks many small trees (the statements
// ParseStatements hands out, one at a time) walks them without growing a
// stack for each. A Walker holds no node between walks. Its zero value
// is ready to use; it is not safe for concurrent use.
type Walker struct {
	stack []Node
}

// Inspect is Inspect with w's stack.
func (w *Walker) Inspect(n Node, fn func(Node) bool) {
	stack := append(w.stack[:0], n)
	high := len(stack)
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if n == nil || isNilNode(n) || !fn(n) {
			continue
		}
		// Push the children, then reverse them so the first is on top.
		base := len(stack)
		eachChild(n, func(c Node) { stack = append(stack, c) })
		for i, j := base, len(stack)-1; i < j; i, j = i+1, j-1 {
			stack[i], stack[j] = stack[j], stack[i]
		}
		high = max(high, len(stack))
	}
	clear(stack[:high]) // the walker keeps no node alive
	w.stack = stack[:0]
}

// walkers keeps Inspect's Walkers between walks. A module's statements
// are all pushed at once, so walking a file of a hundred thousand
// statements needs a stack that large; reusing one saves growing (and
// faulting in) a new one for every walk.
var walkers sync.Pool

// maxPooledStack bounds the stacks kept (4 MiB of entries).
const maxPooledStack = 1 << 18

// Children returns the direct children of n in source order.
func Children(n Node) []Node {
	var out []Node
	eachChild(n, func(c Node) { out = append(out, c) })
	return out
}

func isNilNode(n Node) bool {
	switch x := n.(type) {
	case *Ident:
		return x == nil
	case *DottedName:
		return x == nil
	case *Arguments:
		return x == nil
	case *JoinedStr:
		return x == nil
	}
	return false
}

// kids hands each child to a visitor without building a slice, so a walk
// allocates nothing per node.
type kids struct{ visit func(Node) }

func (k kids) add(n Node) { k.visit(n) }

func (k kids) expr(es ...Expr) {
	for _, e := range es {
		if e != nil {
			k.visit(e)
		}
	}
}

func (k kids) stmts(ss []Stmt) {
	for _, s := range ss {
		k.visit(s)
	}
}

func (k kids) ident(ids ...*Ident) {
	for _, id := range ids {
		if id != nil {
			k.visit(id)
		}
	}
}

func (k kids) pat(p Pattern) {
	if p != nil {
		k.visit(p)
	}
}

func (k kids) pats(ps []Pattern) {
	for _, p := range ps {
		k.pat(p)
	}
}

func (k kids) typeParams(tps []TypeParam) {
	for _, t := range tps {
		k.visit(t)
	}
}

func (k kids) args(a *Arguments) {
	if a != nil {
		k.visit(a)
	}
}

func (k kids) comps(cs []*Comprehension) {
	for _, c := range cs {
		k.visit(c)
	}
}

// eachChild calls visit with each direct child of n in source order.
func eachChild(n Node, visit func(Node)) {
	k := kids{visit}
	switch x := n.(type) {
	case *Module:
		k.stmts(x.Body)
	case *FunctionDef:
		k.expr(x.Decorators...)
		k.ident(x.Name)
		k.typeParams(x.TypeParams)
		k.args(x.Args)
		k.expr(x.Returns)
		k.stmts(x.Body)
	case *ClassDef:
		k.expr(x.Decorators...)
		k.ident(x.Name)
		k.typeParams(x.TypeParams)
		k.expr(x.Bases...)
		for _, kw := range x.Keywords {
			k.add(kw)
		}
		k.stmts(x.Body)
	case *Return:
		k.expr(x.Value)
	case *Delete:
		k.expr(x.Targets...)
	case *Assign:
		k.expr(x.Targets...)
		k.expr(x.Value)
	case *AugAssign:
		k.expr(x.Target, x.Value)
	case *AnnAssign:
		k.expr(x.Target, x.Annotation, x.Value)
	case *TypeAlias:
		k.expr(x.Name)
		k.typeParams(x.TypeParams)
		k.expr(x.Value)
	case *For:
		k.expr(x.Target, x.Iter)
		k.stmts(x.Body)
		k.stmts(x.Orelse)
	case *While:
		k.expr(x.Test)
		k.stmts(x.Body)
		k.stmts(x.Orelse)
	case *If:
		k.expr(x.Test)
		k.stmts(x.Body)
		k.stmts(x.Orelse)
	case *With:
		for _, it := range x.Items {
			k.add(it)
		}
		k.stmts(x.Body)
	case *WithItem:
		k.expr(x.ContextExpr, x.OptionalVars)
	case *Match:
		k.expr(x.Subject)
		for _, c := range x.Cases {
			k.add(c)
		}
	case *MatchCase:
		k.pat(x.Pattern)
		k.expr(x.Guard)
		k.stmts(x.Body)
	case *Raise:
		k.expr(x.Exc, x.Cause)
	case *Try:
		k.stmts(x.Body)
		for _, h := range x.Handlers {
			k.add(h)
		}
		k.stmts(x.Orelse)
		k.stmts(x.Finalbody)
	case *ExceptHandler:
		k.expr(x.Type)
		k.ident(x.Name)
		k.stmts(x.Body)
	case *Assert:
		k.expr(x.Test, x.Msg)
	case *Import:
		for _, a := range x.Names {
			k.add(a)
		}
	case *ImportFrom:
		if x.Module != nil {
			k.add(x.Module)
		}
		for _, a := range x.Names {
			k.add(a)
		}
	case *Alias:
		k.add(x.Name)
		k.ident(x.AsName)
	case *Global:
		k.ident(x.Names...)
	case *Nonlocal:
		k.ident(x.Names...)
	case *ExprStmt:
		k.expr(x.Value)
	case *Arguments:
		for _, a := range x.PosOnly {
			k.add(a)
		}
		for _, a := range x.Args {
			k.add(a)
		}
		k.expr(x.Defaults...)
		if x.Vararg != nil {
			k.add(x.Vararg)
		}
		for i, a := range x.KwOnly {
			k.add(a)
			k.expr(x.KwDefaults[i])
		}
		if x.Kwarg != nil {
			k.add(x.Kwarg)
		}
	case *Arg:
		k.ident(x.Name)
		k.expr(x.Annotation)
	case *Keyword:
		k.ident(x.Arg)
		k.expr(x.Value)
	case *TypeVar:
		k.ident(x.Name)
		k.expr(x.Bound, x.Default)
	case *TypeVarTuple:
		k.ident(x.Name)
		k.expr(x.Default)
	case *ParamSpec:
		k.ident(x.Name)
		k.expr(x.Default)
	case *BoolOp:
		k.expr(x.Values...)
	case *NamedExpr:
		k.expr(x.Target, x.Value)
	case *BinOp:
		k.expr(x.Left, x.Right)
	case *UnaryOp:
		k.expr(x.Operand)
	case *Lambda:
		k.args(x.Args)
		k.expr(x.Body)
	case *IfExp:
		k.expr(x.Body, x.Test, x.Orelse)
	case *Dict:
		for i := range x.Keys {
			k.expr(x.Keys[i], x.Values[i])
		}
	case *Set:
		k.expr(x.Elts...)
	case *ListComp:
		k.expr(x.Elt)
		k.comps(x.Generators)
	case *SetComp:
		k.expr(x.Elt)
		k.comps(x.Generators)
	case *DictComp:
		k.expr(x.Key, x.Value)
		k.comps(x.Generators)
	case *GeneratorExp:
		k.expr(x.Elt)
		k.comps(x.Generators)
	case *Comprehension:
		k.expr(x.Target, x.Iter)
		k.expr(x.Ifs...)
	case *Await:
		k.expr(x.Value)
	case *Yield:
		k.expr(x.Value)
	case *YieldFrom:
		k.expr(x.Value)
	case *Compare:
		k.expr(x.Left)
		k.expr(x.Comparators...)
	case *Call:
		k.expr(x.Func)
		k.expr(x.Args...)
		for _, kw := range x.Keywords {
			k.add(kw)
		}
	case *FormattedValue:
		k.expr(x.Value)
		if x.FormatSpec != nil {
			k.add(x.FormatSpec)
		}
	case *JoinedStr:
		k.expr(x.Values...)
	case *Attribute:
		k.expr(x.Value)
		k.ident(x.Attr)
	case *Subscript:
		k.expr(x.Value, x.Slice)
	case *Starred:
		k.expr(x.Value)
	case *List:
		k.expr(x.Elts...)
	case *Tuple:
		k.expr(x.Elts...)
	case *Slice:
		k.expr(x.Lower, x.Upper, x.Step)
	case *MatchValue:
		k.expr(x.Value)
	case *MatchSequence:
		k.pats(x.Patterns)
	case *MatchMapping:
		for i := range x.Keys {
			k.expr(x.Keys[i])
			k.pat(x.Patterns[i])
		}
		k.ident(x.Rest)
	case *MatchClass:
		k.expr(x.Cls)
		k.pats(x.Patterns)
		for i := range x.KwdAttrs {
			k.ident(x.KwdAttrs[i])
			k.pat(x.KwdPatterns[i])
		}
	case *MatchStar:
		k.ident(x.Name)
	case *MatchAs:
		k.pat(x.Pattern)
		k.ident(x.Name)
	case *MatchOr:
		k.pats(x.Patterns)
	}
}
