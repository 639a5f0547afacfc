package pyclosure

import (
	"fmt"

	"github.com/cacheon/engine/kernels/pyparse"
)

// The dynamic-import ban: code in the closure may only import what its
// import statements say, or the closure (and so the selected payload)
// would not be the code that runs.

// ban finds what the dynamic-import ban refuses in one file, statement by
// statement, in the order the tree is walked, with positions and no path.
// Each node the walk visits is also handed to visit (when set), so a
// caller that needs another pass over the tree shares this one.
//
// The cute.compile carve-out depends on how often the whole file binds
// `cute` (cuteCount), which is known only at the end of the file, so
// the walk also counts those bindings: a finding the carve-out would
// allow is recorded with the others, and findings drops it when the
// binding qualifies.
type ban struct {
	visit     func(*pyparse.File, pyparse.Node)
	walker    pyparse.Walker
	cute      cuteCount
	carved    map[*pyparse.Attribute]bool // the functions of the statement's cute.compile(<callable>, ...) calls
	found     []Problem
	allowable []int // indexes in found of the findings the carve-out allows
	// end is where the text of the statements walked so far ends; full
	// turns the quiet-text shortcut off (see statement), for tests.
	end  int
	full bool
}

// loud marks the bytes one of which every identifier the walk acts on
// contains: m (import, __import__, import_module, compile, load_module,
// spec_from_file_location), v (eval), x (exec, exec_module) and u (cute),
// and every byte of a non-ASCII character, since a non-ASCII identifier
// can normalize (NFKC) to any of them.
var loud = func() (t [256]bool) {
	for _, c := range "mvxu" {
		t[c] = true
	}
	for c := 0x80; c < 0x100; c++ {
		t[c] = true
	}
	return t
}()

// quiet reports whether text holds no loud byte. The walk of a statement
// whose text is quiet would find nothing: every node it acts on (an
// import, a banned or loader name or attribute, a binding of cute, a
// cute.compile call) is spelled with a loud byte. Strings and comments
// are read too, so a loud byte in one only costs the walk.
//
// It reads eight bytes at a time: a word has a loud byte when it has a
// byte with the high bit set or a byte equal to m, u, v or x, that is a
// zero byte in the word XORed with that byte repeated, and
// (y - 0x01…01) &^ y & 0x80…80 is nonzero exactly when y has a zero byte.
func quiet(text string) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for len(text) >= 8 {
		w := uint64(text[0]) | uint64(text[1])<<8 | uint64(text[2])<<16 | uint64(text[3])<<24 |
			uint64(text[4])<<32 | uint64(text[5])<<40 | uint64(text[6])<<48 | uint64(text[7])<<56
		m, u, v, x := w^(ones*'m'), w^(ones*'u'), w^(ones*'v'), w^(ones*'x')
		if (w|(m-ones)&^m|(u-ones)&^u|(v-ones)&^v|(x-ones)&^x)&highs != 0 {
			return false
		}
		text = text[8:]
	}
	for i := 0; i < len(text); i++ {
		if loud[text[i]] {
			return false
		}
	}
	return true
}

// statement walks one top-level statement. It keeps no node: the parser
// may reuse their memory once it returns.
//
// The walk is skipped when the statement's text, from where the previous
// statement ended to where this one ends (decorators, comments and any
// ';' before it included), is quiet: nothing in it is banned, binds
// cute or imports (so b.visit, which only collects imports, would be
// handed nothing it keeps either).
func (b *ban) statement(pf *pyparse.File, st pyparse.Stmt) {
	from := b.end
	_, end := st.Span()
	if end >= from && end <= len(pf.Src) {
		b.end = end
		if !b.full && quiet(pf.Src[from:end]) {
			return
		}
	}
	report := func(n pyparse.Node, format string, args ...any) {
		s, _ := n.Span()
		line, col := position(pf, s)
		b.found = append(b.found, Problem{Line: line, Col: col, Reason: fmt.Sprintf(format, args...)})
	}
	clear(b.carved)
	b.walker.Inspect(st, func(n pyparse.Node) bool {
		if b.visit != nil {
			b.visit(pf, n)
		}
		switch x := n.(type) {
		case *pyparse.Call:
			if isCuteCompile(x) {
				if b.carved == nil {
					b.carved = map[*pyparse.Attribute]bool{}
				}
				b.carved[x.Func.(*pyparse.Attribute)] = true
			}
		case *pyparse.Import:
			b.cute.add(n)
			for _, a := range x.Names {
				switch r := root(a.Name.Name); {
				case bannedModule(r):
					report(a, "dynamic import: module %q is import machinery", a.Name.Name)
				case harnessModule(r):
					report(a, "harness import: module %q is the validator's own code", a.Name.Name)
				}
			}
		case *pyparse.ImportFrom:
			b.cute.add(n)
			if x.Level == 0 && x.Module != nil && bannedModule(root(x.Module.Name)) {
				report(x, "dynamic import: module %q is import machinery", x.Module.Name)
				return true
			}
			if x.Level == 0 && x.Module != nil && harnessModule(root(x.Module.Name)) {
				report(x, "harness import: module %q is the validator's own code", x.Module.Name)
				return true
			}
			for _, a := range x.Names {
				if bannedName(a.Name.Name) || loaderAttribute(a.Name.Name) {
					report(a, "dynamic import: imports %q", a.Name.Name)
				}
			}
		case *pyparse.Name:
			b.cute.add(n)
			if bannedName(x.ID) {
				report(x, "dynamic import: name %q", x.ID)
			}
		case *pyparse.Attribute:
			switch {
			case bannedName(x.Attr.Name):
				if b.carved[x] {
					b.allowable = append(b.allowable, len(b.found))
				}
				report(x.Attr, "dynamic import: attribute %q", x.Attr.Name)
			case loaderAttribute(x.Attr.Name):
				report(x.Attr, "dynamic import: loader call %q", x.Attr.Name)
			}
		case *pyparse.Constant:
			// Binds nothing and is never banned: the commonest leaf.
		default:
			b.cute.add(n)
		}
		return true
	})
}

// findings returns every finding once the whole file has been walked.
func (b *ban) findings() []Problem {
	if len(b.allowable) == 0 || !b.cute.bound() {
		return b.found
	}
	var kept []Problem // nil when nothing is left, as when nothing was found
	allowable := b.allowable
	for i, p := range b.found {
		if len(allowable) > 0 && allowable[0] == i {
			allowable = allowable[1:]
			continue
		}
		kept = append(kept, p)
	}
	return kept
}

// bannedName reports whether a name may not be referenced at all, by
// name or as an attribute (importlib.import_module, torch.compile).
func bannedName(s string) bool {
	switch s {
	case "__import__", "compile", "eval", "exec", "import_module":
		return true
	}
	return false
}

// loaderAttribute reports whether a name is one of the import system's
// loader entry points.
func loaderAttribute(s string) bool {
	switch s {
	case "load_module", "exec_module", "spec_from_file_location":
		return true
	}
	return false
}

// bannedModule reports whether a top-level module is the import
// machinery or the builtins module, through which every banned name is
// reachable by another spelling.
func bannedModule(s string) bool {
	switch s {
	case "importlib", "builtins", "imp":
		return true
	}
	return false
}

// harnessModule reports whether a top-level module is one of the
// validator's own packages, which the worker puts on the candidate's
// sys.path: its harness, its reference semantics and the serving
// substrate. Code that imports one can replace the checks made in its
// own process (what a call changed, the input digests, the graph gate)
// and so choose its own verdict; no kernel needs them, since a kernel is
// given everything as its call's arguments. The string forms
// (__import__, import_module) are refused above whatever they name.
func harnessModule(s string) bool {
	switch s {
	case "cacheon_worker", "cacheon_reference", "cacheon_substrate":
		return true
	}
	return false
}

// isCuteCompile matches cute.compile(<callable>, ...): the CuTe DSL's
// kernel compiler, whose first argument is the kernel function itself,
// named directly or by a dotted path.
func isCuteCompile(c *pyparse.Call) bool {
	attr, ok := c.Func.(*pyparse.Attribute)
	if !ok || attr.Attr.Name != "compile" {
		return false
	}
	if base, ok := attr.Value.(*pyparse.Name); !ok || base.ID != "cute" {
		return false
	}
	if len(c.Args) == 0 {
		return false
	}
	return isCallableRef(c.Args[0])
}

func isCallableRef(e pyparse.Expr) bool {
	for {
		switch x := e.(type) {
		case *pyparse.Name:
			return true
		case *pyparse.Attribute:
			e = x.Value
		default:
			return false
		}
	}
}

// cuteCount counts, over the nodes of a file, the bindings of the name
// `cute`: bound() reports whether it is bound exactly once, by
// `import cutlass.cute as cute` or `from cutlass import cute`. Any other
// binding (an assignment, a parameter, a second import) could make
// cute.compile mean something else, so the carve-out then does not apply.
type cuteCount struct {
	count       int
	fromCutlass bool
}

func (c *cuteCount) bound() bool { return c.count == 1 && c.fromCutlass }

// add counts the bindings of `cute` node n makes.
func (c *cuteCount) add(n pyparse.Node) {
	switch x := n.(type) {
	case *pyparse.Import:
		for _, a := range x.Names {
			bound := root(a.Name.Name)
			if a.AsName != nil {
				bound = a.AsName.Name
			}
			if bound == "cute" {
				c.count++
				c.fromCutlass = a.Name.Name == "cutlass.cute" && a.AsName != nil
			}
		}
	case *pyparse.ImportFrom:
		for _, a := range x.Names {
			bound := a.Name.Name
			if a.AsName != nil {
				bound = a.AsName.Name
			}
			if bound == "cute" || a.Name.Name == "*" {
				c.count++
				c.fromCutlass = x.Level == 0 && x.Module != nil && x.Module.Name == "cutlass" && a.Name.Name == "cute"
			}
		}
	default:
		if bindsName(n, "cute") {
			c.count++
		}
	}
}

// bindsName reports whether node n (other than an import) binds name.
func bindsName(n pyparse.Node, name string) bool {
	is := func(id *pyparse.Ident) bool { return id != nil && id.Name == name }
	switch x := n.(type) {
	case *pyparse.Name:
		return x.ID == name && x.Ctx != pyparse.Load
	case *pyparse.Arg:
		return is(x.Name)
	case *pyparse.FunctionDef:
		return is(x.Name)
	case *pyparse.ClassDef:
		return is(x.Name)
	case *pyparse.ExceptHandler:
		return is(x.Name)
	case *pyparse.MatchAs:
		return is(x.Name)
	case *pyparse.MatchStar:
		return is(x.Name)
	case *pyparse.MatchMapping:
		return is(x.Rest)
	case *pyparse.Global:
		for _, id := range x.Names {
			if is(id) {
				return true
			}
		}
	case *pyparse.Nonlocal:
		for _, id := range x.Names {
			if is(id) {
				return true
			}
		}
	}
	return false
}
