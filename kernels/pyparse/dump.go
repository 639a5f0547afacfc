package pyparse

import (
	"fmt"
	"strings"
	"unicode/utf16"
)

// Dump renders a tree in the shape of Python's `ast.dump` (class and field
// names as in Python 3.12), without positions. Strings are JSON-quoted
// with non-ASCII escaped and numbers show only their type, so the same
// text can be produced from CPython's tree for differential testing.
// Dump recurses over the tree: it is for tests and debugging, not for
// hostile input (use Inspect, which keeps its own stack).
func Dump(n Node) string {
	var b strings.Builder
	d := dumper{&b}
	d.node(n)
	return b.String()
}

type dumper struct{ b *strings.Builder }

type field struct {
	name string
	val  any
}

func (d dumper) obj(typ string, fields ...field) {
	d.b.WriteString(typ)
	d.b.WriteByte('(')
	for i, f := range fields {
		if i > 0 {
			d.b.WriteString(", ")
		}
		d.b.WriteString(f.name)
		d.b.WriteByte('=')
		d.value(f.val)
	}
	d.b.WriteByte(')')
}

func (d dumper) value(v any) {
	switch x := v.(type) {
	case nil:
		d.b.WriteString("None")
	case string:
		d.b.WriteString(quoteASCII(x))
	case int:
		fmt.Fprintf(d.b, "%d", x)
	case bool:
		if x {
			d.b.WriteString("1")
		} else {
			d.b.WriteString("0")
		}
	case raw:
		d.b.WriteString(string(x))
	case Node:
		if isNilNode(x) || isNilPtr(x) {
			d.b.WriteString("None")
			return
		}
		d.node(x)
	case []Node:
		d.b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				d.b.WriteString(", ")
			}
			d.value(e)
		}
		d.b.WriteByte(']')
	case []string:
		d.b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				d.b.WriteString(", ")
			}
			d.b.WriteString(quoteASCII(e))
		}
		d.b.WriteByte(']')
	default:
		panic(fmt.Sprintf("dump: unexpected %T", v))
	}
}

// raw is preformatted dump text.
type raw string

func isNilPtr(n Node) bool {
	switch x := n.(type) {
	case *Arg:
		return x == nil
	case *Name:
		return x == nil
	}
	return false
}

func exprs[T Node](xs []T) []Node {
	out := make([]Node, 0, len(xs))
	for _, x := range xs {
		out = append(out, x)
	}
	return out
}

func idName(id *Ident) any {
	if id == nil {
		return nil
	}
	return id.Name
}

func identNames(ids []*Ident) []string {
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		out = append(out, id.Name)
	}
	return out
}

func opName(op string, unary bool) raw {
	if unary {
		return raw(map[string]string{"-": "USub()", "+": "UAdd()", "~": "Invert()", "not": "Not()"}[op])
	}
	return raw(map[string]string{"+": "Add()", "-": "Sub()", "*": "Mult()", "@": "MatMult()", "/": "Div()",
		"%": "Mod()", "**": "Pow()", "<<": "LShift()", ">>": "RShift()", "|": "BitOr()", "^": "BitXor()",
		"&": "BitAnd()", "//": "FloorDiv()", "and": "And()", "or": "Or()"}[op])
}

var cmpNames = map[string]string{"==": "Eq()", "!=": "NotEq()", "<": "Lt()", "<=": "LtE()", ">": "Gt()",
	">=": "GtE()", "is": "Is()", "is not": "IsNot()", "in": "In()", "not in": "NotIn()"}

func ctx(c Context) raw { return raw(c.String() + "()") }

func (d dumper) node(n Node) {
	switch x := n.(type) {
	case *Module:
		d.obj("Module", field{"body", exprs(x.Body)})
	case *FunctionDef:
		name := "FunctionDef"
		if x.Async {
			name = "AsyncFunctionDef"
		}
		d.obj(name, field{"name", x.Name.Name}, field{"args", x.Args}, field{"body", exprs(x.Body)},
			field{"decorator_list", exprs(x.Decorators)}, field{"returns", x.Returns}, field{"type_params", exprs(x.TypeParams)})
	case *ClassDef:
		d.obj("ClassDef", field{"name", x.Name.Name}, field{"bases", exprs(x.Bases)}, field{"keywords", exprs(x.Keywords)},
			field{"body", exprs(x.Body)}, field{"decorator_list", exprs(x.Decorators)}, field{"type_params", exprs(x.TypeParams)})
	case *Return:
		d.obj("Return", field{"value", x.Value})
	case *Delete:
		d.obj("Delete", field{"targets", exprs(x.Targets)})
	case *Assign:
		d.obj("Assign", field{"targets", exprs(x.Targets)}, field{"value", x.Value})
	case *AugAssign:
		d.obj("AugAssign", field{"target", x.Target}, field{"op", opName(x.Op, false)}, field{"value", x.Value})
	case *AnnAssign:
		d.obj("AnnAssign", field{"target", x.Target}, field{"annotation", x.Annotation}, field{"value", x.Value}, field{"simple", x.Simple})
	case *TypeAlias:
		d.obj("TypeAlias", field{"name", x.Name}, field{"type_params", exprs(x.TypeParams)}, field{"value", x.Value})
	case *For:
		name := "For"
		if x.Async {
			name = "AsyncFor"
		}
		d.obj(name, field{"target", x.Target}, field{"iter", x.Iter}, field{"body", exprs(x.Body)}, field{"orelse", exprs(x.Orelse)})
	case *While:
		d.obj("While", field{"test", x.Test}, field{"body", exprs(x.Body)}, field{"orelse", exprs(x.Orelse)})
	case *If:
		d.obj("If", field{"test", x.Test}, field{"body", exprs(x.Body)}, field{"orelse", exprs(x.Orelse)})
	case *With:
		name := "With"
		if x.Async {
			name = "AsyncWith"
		}
		d.obj(name, field{"items", exprs(x.Items)}, field{"body", exprs(x.Body)})
	case *WithItem:
		d.obj("withitem", field{"context_expr", x.ContextExpr}, field{"optional_vars", x.OptionalVars})
	case *Match:
		d.obj("Match", field{"subject", x.Subject}, field{"cases", exprs(x.Cases)})
	case *MatchCase:
		d.obj("match_case", field{"pattern", x.Pattern}, field{"guard", x.Guard}, field{"body", exprs(x.Body)})
	case *Raise:
		d.obj("Raise", field{"exc", x.Exc}, field{"cause", x.Cause})
	case *Try:
		name := "Try"
		if x.Star {
			name = "TryStar"
		}
		d.obj(name, field{"body", exprs(x.Body)}, field{"handlers", exprs(x.Handlers)}, field{"orelse", exprs(x.Orelse)}, field{"finalbody", exprs(x.Finalbody)})
	case *ExceptHandler:
		d.obj("ExceptHandler", field{"type", x.Type}, field{"name", idName(x.Name)}, field{"body", exprs(x.Body)})
	case *Assert:
		d.obj("Assert", field{"test", x.Test}, field{"msg", x.Msg})
	case *Import:
		d.obj("Import", field{"names", exprs(x.Names)})
	case *ImportFrom:
		var mod any
		if x.Module != nil {
			mod = x.Module.Name
		}
		d.obj("ImportFrom", field{"module", mod}, field{"names", exprs(x.Names)}, field{"level", x.Level})
	case *Alias:
		d.obj("alias", field{"name", x.Name.Name}, field{"asname", idName(x.AsName)})
	case *Global:
		d.obj("Global", field{"names", identNames(x.Names)})
	case *Nonlocal:
		d.obj("Nonlocal", field{"names", identNames(x.Names)})
	case *ExprStmt:
		d.obj("Expr", field{"value", x.Value})
	case *Pass:
		d.obj("Pass")
	case *Break:
		d.obj("Break")
	case *Continue:
		d.obj("Continue")
	case *Arguments:
		var kwd []Node
		for _, e := range x.KwDefaults {
			if e == nil {
				kwd = append(kwd, nil)
			} else {
				kwd = append(kwd, e)
			}
		}
		if kwd == nil {
			kwd = []Node{}
		}
		d.obj("arguments", field{"posonlyargs", exprs(x.PosOnly)}, field{"args", exprs(x.Args)}, field{"vararg", argNode(x.Vararg)},
			field{"kwonlyargs", exprs(x.KwOnly)}, field{"kw_defaults", kwd}, field{"kwarg", argNode(x.Kwarg)}, field{"defaults", exprs(x.Defaults)})
	case *Arg:
		d.obj("arg", field{"arg", x.Name.Name}, field{"annotation", x.Annotation})
	case *Keyword:
		d.obj("keyword", field{"arg", idName(x.Arg)}, field{"value", x.Value})
	case *TypeVar:
		d.obj("TypeVar", field{"name", x.Name.Name}, field{"bound", x.Bound})
	case *TypeVarTuple:
		d.obj("TypeVarTuple", field{"name", x.Name.Name})
	case *ParamSpec:
		d.obj("ParamSpec", field{"name", x.Name.Name})
	case *BoolOp:
		d.obj("BoolOp", field{"op", opName(x.Op, false)}, field{"values", exprs(x.Values)})
	case *NamedExpr:
		d.obj("NamedExpr", field{"target", x.Target}, field{"value", x.Value})
	case *BinOp:
		d.obj("BinOp", field{"left", x.Left}, field{"op", opName(x.Op, false)}, field{"right", x.Right})
	case *UnaryOp:
		d.obj("UnaryOp", field{"op", opName(x.Op, true)}, field{"operand", x.Operand})
	case *Lambda:
		d.obj("Lambda", field{"args", x.Args}, field{"body", x.Body})
	case *IfExp:
		d.obj("IfExp", field{"test", x.Test}, field{"body", x.Body}, field{"orelse", x.Orelse})
	case *Dict:
		keys := make([]Node, len(x.Keys))
		for i, k := range x.Keys {
			if k != nil {
				keys[i] = k
			}
		}
		d.obj("Dict", field{"keys", keys}, field{"values", exprs(x.Values)})
	case *Set:
		d.obj("Set", field{"elts", exprs(x.Elts)})
	case *ListComp:
		d.obj("ListComp", field{"elt", x.Elt}, field{"generators", exprs(x.Generators)})
	case *SetComp:
		d.obj("SetComp", field{"elt", x.Elt}, field{"generators", exprs(x.Generators)})
	case *DictComp:
		d.obj("DictComp", field{"key", x.Key}, field{"value", x.Value}, field{"generators", exprs(x.Generators)})
	case *GeneratorExp:
		d.obj("GeneratorExp", field{"elt", x.Elt}, field{"generators", exprs(x.Generators)})
	case *Comprehension:
		d.obj("comprehension", field{"target", x.Target}, field{"iter", x.Iter}, field{"ifs", exprs(x.Ifs)}, field{"is_async", x.Async})
	case *Await:
		d.obj("Await", field{"value", x.Value})
	case *Yield:
		d.obj("Yield", field{"value", x.Value})
	case *YieldFrom:
		d.obj("YieldFrom", field{"value", x.Value})
	case *Compare:
		ops := make([]Node, 0)
		var b strings.Builder
		b.WriteByte('[')
		for i, op := range x.Ops {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(cmpNames[op])
		}
		b.WriteByte(']')
		_ = ops
		d.obj("Compare", field{"left", x.Left}, field{"ops", raw(b.String())}, field{"comparators", exprs(x.Comparators)})
	case *Call:
		d.obj("Call", field{"func", x.Func}, field{"args", exprs(x.Args)}, field{"keywords", exprs(x.Keywords)})
	case *FormattedValue:
		conv := -1
		if x.Conversion != 0 {
			conv = int(x.Conversion)
		}
		var spec any
		if x.FormatSpec != nil {
			spec = x.FormatSpec
		}
		d.obj("FormattedValue", field{"value", x.Value}, field{"conversion", conv}, field{"format_spec", spec})
	case *JoinedStr:
		d.obj("JoinedStr", field{"values", exprs(x.Values)})
	case *Constant:
		d.b.WriteString("Constant(")
		switch x.Kind {
		case ConstNone:
			d.b.WriteString("None")
		case ConstTrue:
			d.b.WriteString("True")
		case ConstFalse:
			d.b.WriteString("False")
		case ConstEllipsis:
			d.b.WriteString("Ellipsis")
		case ConstInt:
			d.b.WriteString("int")
		case ConstFloat:
			d.b.WriteString("float")
		case ConstComplex:
			d.b.WriteString("complex")
		case ConstStr:
			d.b.WriteString("str " + quoteASCII(x.Str))
		case ConstBytes:
			d.b.WriteString("bytes " + quoteLatin1(x.Str))
		}
		d.b.WriteByte(')')
	case *Attribute:
		d.obj("Attribute", field{"value", x.Value}, field{"attr", x.Attr.Name}, field{"ctx", ctx(x.Ctx)})
	case *Subscript:
		d.obj("Subscript", field{"value", x.Value}, field{"slice", x.Slice}, field{"ctx", ctx(x.Ctx)})
	case *Starred:
		d.obj("Starred", field{"value", x.Value}, field{"ctx", ctx(x.Ctx)})
	case *Name:
		d.obj("Name", field{"id", x.ID}, field{"ctx", ctx(x.Ctx)})
	case *List:
		d.obj("List", field{"elts", exprs(x.Elts)}, field{"ctx", ctx(x.Ctx)})
	case *Tuple:
		d.obj("Tuple", field{"elts", exprs(x.Elts)}, field{"ctx", ctx(x.Ctx)})
	case *Slice:
		d.obj("Slice", field{"lower", x.Lower}, field{"upper", x.Upper}, field{"step", x.Step})
	case *MatchValue:
		d.obj("MatchValue", field{"value", x.Value})
	case *MatchSingleton:
		v := map[ConstKind]string{ConstNone: "None", ConstTrue: "True", ConstFalse: "False"}[x.Value]
		d.obj("MatchSingleton", field{"value", raw(v)})
	case *MatchSequence:
		d.obj("MatchSequence", field{"patterns", exprs(x.Patterns)})
	case *MatchMapping:
		d.obj("MatchMapping", field{"keys", exprs(x.Keys)}, field{"patterns", exprs(x.Patterns)}, field{"rest", idName(x.Rest)})
	case *MatchClass:
		d.obj("MatchClass", field{"cls", x.Cls}, field{"patterns", exprs(x.Patterns)}, field{"kwd_attrs", identNames(x.KwdAttrs)}, field{"kwd_patterns", exprs(x.KwdPatterns)})
	case *MatchStar:
		d.obj("MatchStar", field{"name", idName(x.Name)})
	case *MatchAs:
		var pat any
		if x.Pattern != nil {
			pat = x.Pattern
		}
		d.obj("MatchAs", field{"pattern", pat}, field{"name", idName(x.Name)})
	case *MatchOr:
		d.obj("MatchOr", field{"patterns", exprs(x.Patterns)})
	default:
		panic(fmt.Sprintf("dump: unexpected node %T", n))
	}
}

func argNode(a *Arg) any {
	if a == nil {
		return nil
	}
	return a
}

// quoteASCII quotes s as JSON with every non-ASCII character escaped
// (UTF-16 surrogate pairs above the BMP), matching Python's json.dumps.
func quoteASCII(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		writeJSONRune(&b, r)
	}
	b.WriteByte('"')
	return b.String()
}

// quoteLatin1 quotes a byte string, reading each byte as one character.
func quoteLatin1(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		writeJSONRune(&b, rune(s[i]))
	}
	b.WriteByte('"')
	return b.String()
}

func writeJSONRune(b *strings.Builder, r rune) {
	switch r {
	case '"':
		b.WriteString(`\"`)
	case '\\':
		b.WriteString(`\\`)
	case '\n':
		b.WriteString(`\n`)
	case '\r':
		b.WriteString(`\r`)
	case '\t':
		b.WriteString(`\t`)
	case '\b':
		b.WriteString(`\b`)
	case '\f':
		b.WriteString(`\f`)
	default:
		switch {
		case r < 0x20 || r >= 0x7f && r < 0x10000:
			fmt.Fprintf(b, `\u%04x`, r)
		case r >= 0x10000:
			r1, r2 := utf16.EncodeRune(r)
			fmt.Fprintf(b, `\u%04x\u%04x`, r1, r2)
		default:
			b.WriteRune(r)
		}
	}
}
