package pyclosure

import (
	"fmt"

	"github.com/cacheon/engine/kernels/pyparse"
)

// The dynamic-import ban: code in the closure may only import what its
// import statements say, or the closure (and so the selected payload)
// would not be the code that runs.
var (
	// bannedNames may not be referenced at all, by name or as an
	// attribute (importlib.import_module, torch.compile).
	bannedNames = map[string]bool{"__import__": true, "compile": true, "eval": true, "exec": true, "import_module": true}
	// loaderAttributes are the import-system loader entry points.
	loaderAttributes = map[string]bool{"load_module": true, "exec_module": true, "spec_from_file_location": true}
	// bannedModules are the import machinery and the builtins module,
	// through which every banned name is reachable by another spelling.
	bannedModules = map[string]bool{"importlib": true, "builtins": true, "imp": true}
)

// dynamicImports returns every finding of the ban in one parsed file, in
// the order the tree is walked, with positions and no path. Each node the
// walk visits is also handed to visit (when set), so a caller that needs
// another pass over the tree shares this one.
func dynamicImports(pf *pyparse.File, mod *pyparse.Module, visit func(pyparse.Node)) []Problem {
	cute := cuteBinding(mod)
	allowed := map[*pyparse.Attribute]bool{}
	var found []Problem
	report := func(n pyparse.Node, format string, args ...any) {
		s, _ := n.Span()
		line, col := position(pf, s)
		found = append(found, Problem{Line: line, Col: col, Reason: fmt.Sprintf(format, args...)})
	}
	pyparse.Inspect(mod, func(n pyparse.Node) bool {
		if visit != nil {
			visit(n)
		}
		switch x := n.(type) {
		case *pyparse.Call:
			if cute && isCuteCompile(x) {
				allowed[x.Func.(*pyparse.Attribute)] = true
			}
		case *pyparse.Import:
			for _, a := range x.Names {
				if bannedModules[root(a.Name.Name)] {
					report(a, "dynamic import: module %q is import machinery", a.Name.Name)
				}
			}
		case *pyparse.ImportFrom:
			if x.Level == 0 && x.Module != nil && bannedModules[root(x.Module.Name)] {
				report(x, "dynamic import: module %q is import machinery", x.Module.Name)
				return true
			}
			for _, a := range x.Names {
				if bannedNames[a.Name.Name] || loaderAttributes[a.Name.Name] {
					report(a, "dynamic import: imports %q", a.Name.Name)
				}
			}
		case *pyparse.Name:
			if bannedNames[x.ID] {
				report(x, "dynamic import: name %q", x.ID)
			}
		case *pyparse.Attribute:
			switch {
			case allowed[x]:
			case bannedNames[x.Attr.Name]:
				report(x.Attr, "dynamic import: attribute %q", x.Attr.Name)
			case loaderAttributes[x.Attr.Name]:
				report(x.Attr, "dynamic import: loader call %q", x.Attr.Name)
			}
		}
		return true
	})
	return found
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

// cuteBinding reports whether the name `cute` is bound exactly once in the
// file, by `import cutlass.cute as cute` or `from cutlass import cute`.
// Any other binding (an assignment, a parameter, a second import) could
// make cute.compile mean something else, so the carve-out then does not apply.
func cuteBinding(mod *pyparse.Module) bool {
	count, fromCutlass := 0, false
	pyparse.Inspect(mod, func(n pyparse.Node) bool {
		switch x := n.(type) {
		case *pyparse.Import:
			for _, a := range x.Names {
				bound := root(a.Name.Name)
				if a.AsName != nil {
					bound = a.AsName.Name
				}
				if bound == "cute" {
					count++
					fromCutlass = a.Name.Name == "cutlass.cute" && a.AsName != nil
				}
			}
		case *pyparse.ImportFrom:
			for _, a := range x.Names {
				bound := a.Name.Name
				if a.AsName != nil {
					bound = a.AsName.Name
				}
				if bound == "cute" || a.Name.Name == "*" {
					count++
					fromCutlass = x.Level == 0 && x.Module != nil && x.Module.Name == "cutlass" && a.Name.Name == "cute"
				}
			}
		default:
			if bindsName(n, "cute") {
				count++
			}
		}
		return true
	})
	return count == 1 && fromCutlass
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
