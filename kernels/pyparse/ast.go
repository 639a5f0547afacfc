package pyparse

// The node types mirror the names and fields of Python's own ast module
// (3.12) so that a reader who knows `ast.dump` can read ours, and so that
// the differential tests can compare our trees with CPython's field by
// field. Every node records the byte span it covers in the source.

// Node is any syntax tree node.
type Node interface {
	// Span returns the byte offsets [start, end) of the node in the source.
	Span() (start, end int)
}

// Expr is an expression node.
type Expr interface {
	Node
	exprNode()
}

// Stmt is a statement node.
type Stmt interface {
	Node
	stmtNode()
}

// Pattern is a match-statement pattern node.
type Pattern interface {
	Node
	patternNode()
}

// Loc is the byte span shared by every node.
type Loc struct {
	Start, End int
}

// Span implements Node.
func (l Loc) Span() (int, int) { return l.Start, l.End }

// Context says whether a name, attribute, subscript, starred, list or
// tuple expression is read, assigned or deleted.
type Context uint8

// Expression contexts, as in Python's ast.
const (
	Load Context = iota
	Store
	Del
)

func (c Context) String() string {
	switch c {
	case Store:
		return "Store"
	case Del:
		return "Del"
	}
	return "Load"
}

// Module is a parsed source file.
type Module struct {
	Loc
	Body []Stmt
}

// ---- statements ----

// FunctionDef is `def` or `async def`.
type FunctionDef struct {
	Loc
	Async      bool
	Name       *Ident
	TypeParams []TypeParam
	Args       *Arguments
	Returns    Expr // may be nil
	Decorators []Expr
	Body       []Stmt
}

// ClassDef is a class statement.
type ClassDef struct {
	Loc
	Name       *Ident
	TypeParams []TypeParam
	Bases      []Expr
	Keywords   []*Keyword
	Decorators []Expr
	Body       []Stmt
}

// Return is a return statement; Value may be nil.
type Return struct {
	Loc
	Value Expr
}

// Delete is a del statement.
type Delete struct {
	Loc
	Targets []Expr
}

// Assign is `t1 = t2 = value`.
type Assign struct {
	Loc
	Targets []Expr
	Value   Expr
}

// AugAssign is `target op= value`.
type AugAssign struct {
	Loc
	Target Expr
	Op     string // the operator without '=', e.g. "+", "//"
	Value  Expr
}

// AnnAssign is `target: annotation [= value]`.
type AnnAssign struct {
	Loc
	Target     Expr
	Annotation Expr
	Value      Expr // may be nil
	Simple     bool // target is a bare name, not parenthesized
}

// TypeAlias is the 3.12 `type Name[params] = value` statement.
type TypeAlias struct {
	Loc
	Name       *Name
	TypeParams []TypeParam
	Value      Expr
}

// For is `for` or `async for`.
type For struct {
	Loc
	Async  bool
	Target Expr
	Iter   Expr
	Body   []Stmt
	Orelse []Stmt
}

// While is a while loop.
type While struct {
	Loc
	Test   Expr
	Body   []Stmt
	Orelse []Stmt
}

// If is an if statement; elif chains nest in Orelse.
type If struct {
	Loc
	Test   Expr
	Body   []Stmt
	Orelse []Stmt
}

// With is `with` or `async with`.
type With struct {
	Loc
	Async bool
	Items []*WithItem
	Body  []Stmt
}

// WithItem is one `expr [as target]` of a with statement.
type WithItem struct {
	Loc
	ContextExpr  Expr
	OptionalVars Expr // may be nil
}

// Match is a match statement.
type Match struct {
	Loc
	Subject Expr
	Cases   []*MatchCase
}

// MatchCase is one case block.
type MatchCase struct {
	Loc
	Pattern Pattern
	Guard   Expr // may be nil
	Body    []Stmt
}

// Raise is a raise statement.
type Raise struct {
	Loc
	Exc   Expr // may be nil
	Cause Expr // may be nil
}

// Try is try/except/else/finally; Star marks `except*` (TryStar in Python).
type Try struct {
	Loc
	Star      bool
	Body      []Stmt
	Handlers  []*ExceptHandler
	Orelse    []Stmt
	Finalbody []Stmt
}

// ExceptHandler is one except clause.
type ExceptHandler struct {
	Loc
	Type Expr   // may be nil
	Name *Ident // may be nil
	Body []Stmt
}

// Assert is an assert statement.
type Assert struct {
	Loc
	Test Expr
	Msg  Expr // may be nil
}

// Import is `import a.b as c, d`.
type Import struct {
	Loc
	Names []*Alias
}

// ImportFrom is `from [.]*module import names`. Module is nil for
// `from . import x`; Names holds a single "*" alias for a star import.
type ImportFrom struct {
	Loc
	Module *DottedName
	Level  int
	Names  []*Alias
}

// Global is a global statement.
type Global struct {
	Loc
	Names []*Ident
}

// Nonlocal is a nonlocal statement.
type Nonlocal struct {
	Loc
	Names []*Ident
}

// ExprStmt is an expression used as a statement (Expr in Python's ast).
type ExprStmt struct {
	Loc
	Value Expr
}

// Pass, Break and Continue are the bare keyword statements.
type Pass struct{ Loc }

// Break is a break statement.
type Break struct{ Loc }

// Continue is a continue statement.
type Continue struct{ Loc }

// ---- statement helpers ----

// Ident is an identifier with its span. Name is NFKC-normalized, as
// Python normalizes identifiers, so `ｅｖａｌ` reads as "eval".
type Ident struct {
	Loc
	Name string
}

// DottedName is a dotted module path such as `a.b.c` with its span.
type DottedName struct {
	Loc
	Name string
}

// Alias is one imported name: Name is a dotted module path in Import and
// a plain name (or "*") in ImportFrom; AsName may be nil.
type Alias struct {
	Loc
	Name   *DottedName
	AsName *Ident
}

// Arguments is a parameter list of a def or lambda.
type Arguments struct {
	Loc
	PosOnly    []*Arg
	Args       []*Arg
	Vararg     *Arg // may be nil
	KwOnly     []*Arg
	KwDefaults []Expr // parallel to KwOnly; nil entries have no default
	Kwarg      *Arg   // may be nil
	Defaults   []Expr // defaults of the last len(Defaults) of PosOnly+Args
}

// Arg is one parameter.
type Arg struct {
	Loc
	Name       *Ident
	Annotation Expr // may be nil
}

// Keyword is `name=value` in a call or class bases, or `**value` when Arg is nil.
type Keyword struct {
	Loc
	Arg   *Ident // nil for **kwargs
	Value Expr
}

// TypeParam is a PEP 695 type parameter.
type TypeParam interface {
	Node
	typeParamNode()
}

// TypeVar is `T` or `T: bound`.
type TypeVar struct {
	Loc
	Name    *Ident
	Bound   Expr // may be nil
	Default Expr // 3.13 `= default`, may be nil
}

// TypeVarTuple is `*Ts`.
type TypeVarTuple struct {
	Loc
	Name    *Ident
	Default Expr
}

// ParamSpec is `**P`.
type ParamSpec struct {
	Loc
	Name    *Ident
	Default Expr
}

// ---- expressions ----

// BoolOp is `a and b and c` or `a or b`.
type BoolOp struct {
	Loc
	Op     string // "and" or "or"
	Values []Expr
}

// NamedExpr is the walrus `target := value`.
type NamedExpr struct {
	Loc
	Target *Name
	Value  Expr
}

// BinOp is a binary operation.
type BinOp struct {
	Loc
	Left  Expr
	Op    string
	Right Expr
}

// UnaryOp is `not x`, `-x`, `+x` or `~x`.
type UnaryOp struct {
	Loc
	Op      string
	Operand Expr
}

// Lambda is a lambda expression.
type Lambda struct {
	Loc
	Args *Arguments
	Body Expr
}

// IfExp is `body if test else orelse`.
type IfExp struct {
	Loc
	Test, Body, Orelse Expr
}

// Dict is a dict display; a nil key marks `**value`.
type Dict struct {
	Loc
	Keys   []Expr
	Values []Expr
}

// Set is a set display.
type Set struct {
	Loc
	Elts []Expr
}

// ListComp is a list comprehension.
type ListComp struct {
	Loc
	Elt        Expr
	Generators []*Comprehension
}

// SetComp is a set comprehension.
type SetComp struct {
	Loc
	Elt        Expr
	Generators []*Comprehension
}

// DictComp is a dict comprehension.
type DictComp struct {
	Loc
	Key, Value Expr
	Generators []*Comprehension
}

// GeneratorExp is a generator expression.
type GeneratorExp struct {
	Loc
	Elt        Expr
	Generators []*Comprehension
}

// Comprehension is one `[async] for target in iter [if cond]*` clause.
type Comprehension struct {
	Loc
	Async  bool
	Target Expr
	Iter   Expr
	Ifs    []Expr
}

// Await is `await value`.
type Await struct {
	Loc
	Value Expr
}

// Yield is `yield [value]`.
type Yield struct {
	Loc
	Value Expr // may be nil
}

// YieldFrom is `yield from value`.
type YieldFrom struct {
	Loc
	Value Expr
}

// Compare is a comparison chain `left op1 c1 op2 c2`.
type Compare struct {
	Loc
	Left        Expr
	Ops         []string // "==", "not in", "is not", ...
	Comparators []Expr
}

// Call is a call `func(args, keywords)`.
type Call struct {
	Loc
	Func     Expr
	Args     []Expr // may contain *Starred
	Keywords []*Keyword
}

// FormattedValue is one `{value!conv:spec}` field of an f-string.
type FormattedValue struct {
	Loc
	Value      Expr
	Conversion rune       // 0, 's', 'r' or 'a'
	FormatSpec *JoinedStr // may be nil
}

// JoinedStr is an f-string (possibly concatenated with plain strings).
type JoinedStr struct {
	Loc
	Values []Expr // *Constant strings and *FormattedValue
}

// ConstKind says what a Constant holds.
type ConstKind uint8

// Constant kinds.
const (
	ConstNone ConstKind = iota
	ConstTrue
	ConstFalse
	ConstEllipsis
	ConstStr
	ConstBytes
	ConstInt
	ConstFloat
	ConstComplex
)

// Constant is a literal. Str holds the decoded value of a string or bytes
// literal (concatenated, as Python concatenates adjacent literals) and the
// source text of a number.
type Constant struct {
	Loc
	Kind ConstKind
	Str  string
	// Inexact is set when a string value could not be decoded exactly
	// (a \N{...} escape, whose name table we do not carry). Callers that
	// need the exact value must treat such a literal as unknown.
	Inexact bool
}

// Attribute is `value.attr`.
type Attribute struct {
	Loc
	Value Expr
	Attr  *Ident
	Ctx   Context
}

// Subscript is `value[slice]`.
type Subscript struct {
	Loc
	Value Expr
	Slice Expr
	Ctx   Context
}

// Starred is `*value`.
type Starred struct {
	Loc
	Value Expr
	Ctx   Context
}

// Name is an identifier used as an expression.
type Name struct {
	Loc
	ID  string // NFKC-normalized
	Ctx Context
}

// List is a list display.
type List struct {
	Loc
	Elts []Expr
	Ctx  Context
}

// Tuple is a tuple display.
type Tuple struct {
	Loc
	Elts []Expr
	Ctx  Context
}

// Slice is `lower:upper:step` inside a subscript.
type Slice struct {
	Loc
	Lower, Upper, Step Expr // each may be nil
}

// ---- patterns ----

// MatchValue is a value pattern (a literal or dotted name).
type MatchValue struct {
	Loc
	Value Expr
}

// MatchSingleton is None, True or False.
type MatchSingleton struct {
	Loc
	Value ConstKind
}

// MatchSequence is `[p, q]` or `(p, q)` or `p, q`.
type MatchSequence struct {
	Loc
	Patterns []Pattern
}

// MatchMapping is `{key: p, **rest}`.
type MatchMapping struct {
	Loc
	Keys     []Expr
	Patterns []Pattern
	Rest     *Ident // may be nil
}

// MatchClass is `Cls(p, kw=q)`.
type MatchClass struct {
	Loc
	Cls         Expr
	Patterns    []Pattern
	KwdAttrs    []*Ident
	KwdPatterns []Pattern
}

// MatchStar is `*name` or `*_` in a sequence pattern.
type MatchStar struct {
	Loc
	Name *Ident // nil for *_
}

// MatchAs is a capture `name`, wildcard `_` (both nil) or `p as name`.
type MatchAs struct {
	Loc
	Pattern Pattern // may be nil
	Name    *Ident  // may be nil
}

// MatchOr is `p | q`.
type MatchOr struct {
	Loc
	Patterns []Pattern
}

func (*FunctionDef) stmtNode() {}
func (*ClassDef) stmtNode()    {}
func (*Return) stmtNode()      {}
func (*Delete) stmtNode()      {}
func (*Assign) stmtNode()      {}
func (*AugAssign) stmtNode()   {}
func (*AnnAssign) stmtNode()   {}
func (*TypeAlias) stmtNode()   {}
func (*For) stmtNode()         {}
func (*While) stmtNode()       {}
func (*If) stmtNode()          {}
func (*With) stmtNode()        {}
func (*Match) stmtNode()       {}
func (*Raise) stmtNode()       {}
func (*Try) stmtNode()         {}
func (*Assert) stmtNode()      {}
func (*Import) stmtNode()      {}
func (*ImportFrom) stmtNode()  {}
func (*Global) stmtNode()      {}
func (*Nonlocal) stmtNode()    {}
func (*ExprStmt) stmtNode()    {}
func (*Pass) stmtNode()        {}
func (*Break) stmtNode()       {}
func (*Continue) stmtNode()    {}

func (*BoolOp) exprNode()         {}
func (*NamedExpr) exprNode()      {}
func (*BinOp) exprNode()          {}
func (*UnaryOp) exprNode()        {}
func (*Lambda) exprNode()         {}
func (*IfExp) exprNode()          {}
func (*Dict) exprNode()           {}
func (*Set) exprNode()            {}
func (*ListComp) exprNode()       {}
func (*SetComp) exprNode()        {}
func (*DictComp) exprNode()       {}
func (*GeneratorExp) exprNode()   {}
func (*Await) exprNode()          {}
func (*Yield) exprNode()          {}
func (*YieldFrom) exprNode()      {}
func (*Compare) exprNode()        {}
func (*Call) exprNode()           {}
func (*FormattedValue) exprNode() {}
func (*JoinedStr) exprNode()      {}
func (*Constant) exprNode()       {}
func (*Attribute) exprNode()      {}
func (*Subscript) exprNode()      {}
func (*Starred) exprNode()        {}
func (*Name) exprNode()           {}
func (*List) exprNode()           {}
func (*Tuple) exprNode()          {}
func (*Slice) exprNode()          {}

func (*MatchValue) patternNode()     {}
func (*MatchSingleton) patternNode() {}
func (*MatchSequence) patternNode()  {}
func (*MatchMapping) patternNode()   {}
func (*MatchClass) patternNode()     {}
func (*MatchStar) patternNode()      {}
func (*MatchAs) patternNode()        {}
func (*MatchOr) patternNode()        {}

func (*TypeVar) typeParamNode()      {}
func (*TypeVarTuple) typeParamNode() {}
func (*ParamSpec) typeParamNode()    {}
