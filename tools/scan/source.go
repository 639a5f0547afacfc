package scan

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cacheon/engine/tools/pyparse"
)

// The rule tables. The first group is upstream's (defense in depth, not a
// sandbox); the second closes bypasses of it.
var (
	bannedImportRoots = set("socket", "ssl", "asyncio", "selectors", "subprocess", "multiprocessing",
		"concurrent", "ctypes", "cffi", "_ctypes", "builtins", "requests", "urllib", "urllib2", "urllib3",
		"http", "httplib", "ftplib", "smtplib", "telnetlib", "poplib", "imaplib", "xmlrpc", "pickle",
		"dill", "marshal", "shelve", "cloudpickle", "importlib", "imp", "runpy", "pkg_resources",
		"pkgutil", "shutil", "tempfile", "pathlib", "glob", "fileinput", "pty", "fcntl", "termios",
		"resource", "signal", "mmap", "webbrowser", "wsgiref", "paramiko", "fabric")

	bannedCalls = set("eval", "exec", "compile", "__import__", "open", "input", "breakpoint",
		"globals", "vars", "locals")

	dynamicAttrFuncs = set("getattr", "setattr", "delattr")

	namespaceNames = set("__builtins__", "__globals__", "__dict__")

	bannedAttributes = set("system", "popen", "fork", "forkpty",
		"execv", "execve", "execvp", "execvpe", "execl", "execle", "execlp", "execlpe",
		"spawnv", "spawnve", "spawnl", "spawnle", "spawnlp", "spawnlpe",
		"kill", "killpg", "putenv", "setuid", "setgid", "dlopen", "LoadLibrary", "WinDLL", "CDLL",
		"check_output", "check_call", "Popen", "urlopen",
		// ext: the same process primitives under their other names.
		"posix_spawn", "posix_spawnp", "startfile", "spawnvp", "spawnvpe")

	pickleBases = set("pickle", "cpickle", "_pickle", "dill", "marshal", "cloudpickle", "joblib", "torch")

	dunderAttributes = set("__globals__", "__builtins__", "__subclasses__", "__bases__", "__mro__",
		"__code__", "__loader__", "__dict__", "__class__", "__subclasshook__", "__getattribute__", "__base__")

	// ext: frame and module-table introspection reaches the same globals
	// and builtins the dunder rule guards.
	introspectionAttributes = set("f_globals", "f_locals", "f_builtins", "f_back", "f_code",
		"gi_frame", "gi_code", "cr_frame", "ag_frame", "tb_frame", "_getframe")
	introspectionNames = set("__builtins__", "__loader__", "__spec__")

	// ext: star imports from these bring process primitives or pickle
	// loaders in under bare names the attribute rules cannot see.
	starImportRoots = set("os", "posix", "nt", "sys")

	// ext: builtins whose bare reference (aliasing `e = eval`) is flagged
	// unless the file binds the name itself.
	aliasableBuiltins = set("eval", "exec", "compile", "__import__", "open", "breakpoint",
		"globals", "vars", "locals", "getattr", "setattr", "delattr")
)

func set(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// Source parses one Python file and applies every source rule and the
// compilability heuristic. A file that does not parse yields a single
// syntax-error finding. Findings come back in source order.
func Source(path string, src []byte) []Finding {
	f, mod, err := pyparse.Parse(path, src)
	if err != nil {
		var se *pyparse.SyntaxError
		if errors.As(err, &se) {
			return []Finding{{Path: path, Line: se.Pos.Line, Col: se.Pos.Col, Rule: RuleSyntax,
				Message: "file does not parse as Python 3: " + se.Msg}}
		}
		return []Finding{{Path: path, Rule: RuleSyntax, Message: err.Error()}}
	}
	s := &sourceScan{path: path, file: f, aliases: importAliases(mod), bound: boundNames(mod), direct: map[pyparse.Node]bool{}}
	pyparse.Inspect(mod, s.visit)
	s.compilability(mod)
	sortFindings(s.out)
	return s.out
}

type sourceScan struct {
	path    string
	file    *pyparse.File
	aliases map[string][]string // local name -> module paths it may be bound to
	bound   map[string]bool     // names the file binds itself
	direct  map[pyparse.Node]bool
	roots   map[*pyparse.Attribute]*pyparse.Name // chainRoot's memory
	out     []Finding
}

func (s *sourceScan) add(n pyparse.Node, rule Rule, format string, args ...any) {
	start, _ := n.Span()
	p := s.file.Position(start)
	s.out = append(s.out, Finding{Path: s.path, Line: p.Line, Col: p.Col, Rule: rule, Message: fmt.Sprintf(format, args...)})
}

func root(module string) string {
	r, _, _ := strings.Cut(module, ".")
	return r
}

func (s *sourceScan) visit(n pyparse.Node) bool {
	switch x := n.(type) {
	case *pyparse.Import:
		for _, a := range x.Names {
			if r := root(a.Name.Name); bannedImportRoots[r] {
				s.add(a, RuleBannedImport, "import of %q: module %q is banned", a.Name.Name, r)
			}
		}
	case *pyparse.ImportFrom:
		s.importFrom(x)
	case *pyparse.Call:
		s.call(x)
	case *pyparse.Subscript:
		if nm, ok := x.Value.(*pyparse.Name); ok && namespaceNames[nm.ID] {
			s.direct[nm] = true
			s.add(x, RuleNamespaceSubscript, "subscript of %s reaches names the scan cannot see", nm.ID)
		}
	case *pyparse.Attribute:
		s.attribute(x)
	case *pyparse.Name:
		s.name(x)
	}
	return true
}

func (s *sourceScan) importFrom(x *pyparse.ImportFrom) {
	if x.Level > 0 || x.Module == nil {
		return // relative imports name bundle-local modules
	}
	mod := x.Module.Name
	r := root(mod)
	if bannedImportRoots[r] {
		s.add(x, RuleBannedImport, "import from %q: module %q is banned", mod, r)
		return
	}
	for _, a := range x.Names {
		name := a.Name.Name
		switch {
		case name == "*":
			if starImportRoots[r] || pickleBases[strings.ToLower(r)] {
				s.add(a, RuleStarImport, "star import from %q brings process or loader primitives in under bare names", mod)
			}
		case bannedAttributes[name]:
			s.add(a, RuleBannedImportName, "import of %q from %q: the name is banned as an attribute", name, mod)
		case dunderAttributes[name]:
			s.add(a, RuleBannedImportName, "import of %q from %q: the name is banned as an attribute", name, mod)
		case (name == "load" || name == "loads") && pickleBases[strings.ToLower(r)]:
			s.add(a, RulePickleLoad, "import of %q from %q: unpickling loaders are banned", name, mod)
		}
	}
}

func (s *sourceScan) call(x *pyparse.Call) {
	fn, ok := x.Func.(*pyparse.Name)
	if !ok {
		return
	}
	s.direct[fn] = true
	switch {
	case bannedCalls[fn.ID]:
		s.add(x, RuleBannedCall, "call of builtin %s()", fn.ID)
	case dynamicAttrFuncs[fn.ID]:
		if len(x.Args) < 2 {
			s.add(x, RuleDynamicAttribute, "%s() without a literal attribute name", fn.ID)
			return
		}
		c, ok := x.Args[1].(*pyparse.Constant)
		if !ok || c.Kind != pyparse.ConstStr || c.Inexact {
			s.add(x, RuleDynamicAttribute, "%s() with a computed attribute name; only string literals are allowed", fn.ID)
			return
		}
		// ext: a literal name is still the banned attribute it names.
		s.attributeName(x, c.Str, "via "+fn.ID+"()")
	}
}

func (s *sourceScan) attribute(x *pyparse.Attribute) {
	name := x.Attr.Name
	if (name == "load" || name == "loads") && s.pickleBase(x.Value) {
		s.add(x, RulePickleLoad, "%s.%s: unpickling loaders are banned", baseText(x.Value), name)
		return
	}
	if name == "modules" {
		if b, ok := x.Value.(*pyparse.Name); ok && s.resolvesTo(b.ID, "sys") {
			s.add(x, RuleIntrospection, "sys.modules reaches modules without importing them")
			return
		}
	}
	s.attributeName(x, name, "")
}

// attributeName applies the attribute-name rules to a name reached by
// attribute syntax or by a getattr-family call with a literal.
func (s *sourceScan) attributeName(n pyparse.Node, name, how string) {
	suffix := ""
	if how != "" {
		suffix = " " + how
	}
	switch {
	case bannedAttributes[name]:
		s.add(n, RuleBannedAttribute, "attribute %q is a process or loader primitive%s", name, suffix)
	case dunderAttributes[name]:
		s.add(n, RuleDunderAttribute, "attribute %q reaches interpreter internals%s", name, suffix)
	case introspectionAttributes[name]:
		s.add(n, RuleIntrospection, "attribute %q reaches interpreter frames%s", name, suffix)
	}
}

func (s *sourceScan) name(x *pyparse.Name) {
	if x.Ctx != pyparse.Load {
		return
	}
	if introspectionNames[x.ID] && !namespaceNames[x.ID] {
		s.add(x, RuleIntrospection, "name %s reaches the interpreter's loader state", x.ID)
		return
	}
	if x.ID == "__builtins__" && !s.direct[x] {
		// A subscript of it is reported by the namespace rule; any other
		// use (`__builtins__.eval`) is reported here.
		s.add(x, RuleIntrospection, "name __builtins__ reaches every builtin")
		return
	}
	if aliasableBuiltins[x.ID] && !s.direct[x] && !s.bound[x.ID] {
		s.add(x, RuleBannedBuiltinRef, "builtin %s referenced without being called (aliasing)", x.ID)
	}
}

// pickleBase reports whether an expression names a pickle-like module:
// directly (torch.load), through a submodule (torch.serialization.load) or
// through an import alias (import torch as t; t.load).
func (s *sourceScan) pickleBase(e pyparse.Expr) bool {
	b := s.chainRoot(e)
	if b == nil {
		return false
	}
	if pickleBases[strings.ToLower(b.ID)] {
		return true
	}
	for _, mod := range s.aliases[b.ID] {
		if pickleBases[strings.ToLower(root(mod))] {
			return true
		}
	}
	return false
}

func (s *sourceScan) resolvesTo(name, module string) bool {
	if name == module {
		return true
	}
	for _, m := range s.aliases[name] {
		if m == module {
			return true
		}
	}
	return false
}

// chainRoot returns the name at the base of an attribute chain a.b.c, or
// nil when the chain does not start at a name. The walk visits every link
// of a chain, and a hostile file can make one chain a million links long,
// so each link's root is remembered: the whole file costs one pass over
// each chain, not one per link.
func (s *sourceScan) chainRoot(e pyparse.Expr) *pyparse.Name {
	var path []*pyparse.Attribute
	var root *pyparse.Name
walk:
	for {
		switch x := e.(type) {
		case *pyparse.Name:
			root = x
			break walk
		case *pyparse.Attribute:
			if r, ok := s.roots[x]; ok {
				root = r
				break walk
			}
			path = append(path, x)
			e = x.Value
		default:
			break walk
		}
	}
	if s.roots == nil {
		s.roots = map[*pyparse.Attribute]*pyparse.Name{}
	}
	for _, a := range path {
		s.roots[a] = root
	}
	return root
}

// baseText spells an attribute chain for a message, shortened when long.
func baseText(e pyparse.Expr) string {
	var parts []string
	for len(parts) < 8 {
		switch x := e.(type) {
		case *pyparse.Name:
			parts = append(parts, x.ID)
			e = nil
		case *pyparse.Attribute:
			parts = append(parts, x.Attr.Name)
			e = x.Value
			continue
		default:
			parts = append(parts, "(...)")
			e = nil
		}
		break
	}
	if e != nil {
		parts = append(parts, "...")
	}
	for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
		parts[i], parts[j] = parts[j], parts[i]
	}
	return strings.Join(parts, ".")
}

// importAliases maps each name an import statement binds to the module
// path it may stand for. The map is flow-insensitive: a name imported in
// two places maps to both modules.
func importAliases(mod *pyparse.Module) map[string][]string {
	out := map[string][]string{}
	pyparse.Inspect(mod, func(n pyparse.Node) bool {
		switch x := n.(type) {
		case *pyparse.Import:
			for _, a := range x.Names {
				if a.AsName != nil {
					out[a.AsName.Name] = append(out[a.AsName.Name], a.Name.Name)
				} else {
					r := root(a.Name.Name)
					out[r] = append(out[r], r)
				}
			}
		case *pyparse.ImportFrom:
			if x.Level > 0 || x.Module == nil {
				return true
			}
			for _, a := range x.Names {
				if a.Name.Name == "*" {
					continue
				}
				local := a.Name.Name
				if a.AsName != nil {
					local = a.AsName.Name
				}
				out[local] = append(out[local], x.Module.Name+"."+a.Name.Name)
			}
		}
		return true
	})
	return out
}

// boundNames collects every name the file binds anywhere: assignment
// targets, parameters, imports, definitions, loop and with targets,
// exception names and match captures.
func boundNames(mod *pyparse.Module) map[string]bool {
	out := map[string]bool{}
	add := func(id *pyparse.Ident) {
		if id != nil {
			out[id.Name] = true
		}
	}
	pyparse.Inspect(mod, func(n pyparse.Node) bool {
		switch x := n.(type) {
		case *pyparse.Name:
			if x.Ctx != pyparse.Load {
				out[x.ID] = true
			}
		case *pyparse.Arg:
			add(x.Name)
		case *pyparse.FunctionDef:
			add(x.Name)
		case *pyparse.ClassDef:
			add(x.Name)
		case *pyparse.ExceptHandler:
			add(x.Name)
		case *pyparse.Alias:
			if x.AsName != nil {
				add(x.AsName)
			} else if x.Name.Name != "*" {
				out[root(x.Name.Name)] = true
			}
		case *pyparse.MatchAs:
			add(x.Name)
		case *pyparse.MatchStar:
			add(x.Name)
		case *pyparse.MatchMapping:
			add(x.Rest)
		case *pyparse.Global:
			for _, id := range x.Names {
				add(id)
			}
		}
		return true
	})
	return out
}
