package scan

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/cacheon/engine/kernels/pyparse"
)

// The rule tables. The first group is upstream's (defense in depth, not a
// sandbox); the second closes bypasses of it.
var (
	bannedImportRoots = set("socket", "ssl", "asyncio", "selectors", "subprocess", "multiprocessing",
		"concurrent", "ctypes", "cffi", "_ctypes", "builtins", "requests", "urllib", "urllib2", "urllib3",
		"http", "httplib", "ftplib", "smtplib", "telnetlib", "poplib", "imaplib", "xmlrpc", "pickle",
		"dill", "marshal", "shelve", "cloudpickle", "importlib", "imp", "runpy", "pkg_resources",
		"pkgutil", "shutil", "tempfile", "pathlib", "glob", "fileinput", "pty", "fcntl", "termios",
		"resource", "signal", "mmap", "webbrowser", "wsgiref", "paramiko", "fabric",
		// ext: whole families upstream misses. Each root's C-accelerated
		// twin (_socket, _pickle, _multiprocessing, ...) is banned with it,
		// see bannedModule.
		//
		// Helpers that run a string, a file or a docstring as code.
		"timeit", "bdb", "pdb", "cProfile", "profile", "trace", "code", "codeop", "pydoc", "doctest",
		"unittest", "rlcompleter", "zipimport", "compileall", "py_compile", "site", "_imp",
		"_frozen_importlib", "_frozen_importlib_external", "_xxsubinterpreters", "_xxinterpchannels",
		"_testcapi", "_testinternalcapi", "__builtin__", "cPickle", "joblib",
		// Processes and the raw process layer under os and subprocess.
		"posix", "nt", "_posixsubprocess", "_winapi", "msvcrt", "distutils", "setuptools", "_posixshmem",
		"_osx_support", "_aix_support", "antigravity",
		// Networking beside socket, http and urllib.
		"socketserver", "select", "asyncore", "asynchat", "smtpd", "nntplib",
		// File access under names the pathlib and open rules do not cover.
		"_io", "dbm", "sqlite3", "zipfile", "tarfile", "gzip", "bz2", "lzma", "zipapp", "linecache",
		// Foreign functions beside ctypes and cffi.
		"_cffi_backend")

	// ext: dotted families inside packages a kernel may import: libc
	// through numpy, processes through torch, C++ compiled and loaded at
	// run time, code fetched from the network, strings run as benchmark
	// statements, dotted names resolved from a logging config.
	bannedModulePrefixes = set("numpy.ctypeslib", "numpy.f2py", "numpy.distutils", "torch.multiprocessing",
		"torch.utils.cpp_extension", "torch.utils.benchmark", "torch.hub", "torch.package", "logging.config",
		"logging.handlers")

	bannedCalls = set("eval", "exec", "compile", "__import__", "open", "input", "breakpoint",
		"globals", "vars", "locals",
		// ext: help("subprocess") imports any module by its name.
		"help")

	dynamicAttrFuncs = set("getattr", "setattr", "delattr")

	namespaceNames = set("__builtins__", "__globals__", "__dict__")

	bannedAttributes = set("system", "popen", "fork", "forkpty",
		"execv", "execve", "execvp", "execvpe", "execl", "execle", "execlp", "execlpe",
		"spawnv", "spawnve", "spawnl", "spawnle", "spawnlp", "spawnlpe",
		"kill", "killpg", "putenv", "setuid", "setgid", "dlopen", "LoadLibrary", "WinDLL", "CDLL",
		"check_output", "check_call", "Popen", "urlopen",
		// ext: the same process primitives under their other names.
		"posix_spawn", "posix_spawnp", "startfile", "spawnvp", "spawnvpe",
		// ext: processes, libraries and code strings reached from
		// modules that are allowed or reached without an import.
		"fork_exec", "load_library", "load_inline", "import_module", "load_module", "exec_module", "resolve_name",
		// Private stdlib helpers that run a command: os's own exec and
		// spawn workers, uuid's and platform's command runners.
		"_execvpe", "_spawnvef", "_get_command_stdout", "_syscmd_file", "_syscmd_ver", "_read_output",
		// string.Formatter().get_field("0.system", (os,), {}) fetches a
		// dotted attribute path given as a string.
		"get_field")

	// ext: attributes that run a string as code: interpreters and
	// compilers reached without their module, and the typing helpers that
	// evaluate string annotations.
	codeAttributes = set("run_string", "runsource", "runcode", "compile_command",
		"get_type_hints", "ForwardRef", "_evaluate", "_eval_type")

	// ext: file writes through objects reached without importing their
	// module (pathlib paths, numpy arrays).
	fileAttributes = set("write_text", "write_bytes", "symlink_to", "hardlink_to", "tofile")

	pickleBases = set("pickle", "cpickle", "_pickle", "dill", "marshal", "cloudpickle", "joblib", "torch")

	// ext: unpickling under other names than load and loads.
	pickleAttributes = set("Unpickler", "read_pickle")

	dunderAttributes = set("__globals__", "__builtins__", "__subclasses__", "__bases__", "__mro__",
		"__code__", "__loader__", "__dict__", "__class__", "__subclasshook__", "__getattribute__", "__base__")

	// ext: frame and module-table introspection reaches the same globals
	// and builtins the dunder rule guards; the heap walkers reach every
	// object; code and function objects built by hand run what they hold.
	introspectionAttributes = set("f_globals", "f_locals", "f_builtins", "f_back", "f_code",
		"gi_frame", "gi_code", "cr_frame", "ag_frame", "tb_frame", "_getframe",
		"get_referrers", "get_referents", "get_objects", "CodeType", "FunctionType", "LambdaType",
		"_current_frames", "currentframe")
	introspectionNames = set("__builtins__", "__loader__", "__spec__")

	// ext: attribute names that are banned modules themselves, so that a
	// module reached as an attribute of an allowed one is caught without
	// an import: torch.multiprocessing, np.ctypeslib.ctypes, m.subprocess.
	moduleAttributeNames = set("subprocess", "multiprocessing", "ctypes", "_ctypes", "ctypeslib", "cffi",
		"socket", "_socket", "pickle", "_pickle", "cPickle", "marshal", "builtins", "__builtin__",
		"importlib", "runpy", "_posixsubprocess", "posix", "pty", "cloudpickle", "dill", "shutil",
		"cpp_extension", "timeit", "cProfile", "pdb", "bdb", "codeop", "pydoc", "doctest", "_imp",
		"_xxsubinterpreters", "_io", "concurrent", "asyncio", "_asyncio", "ssl", "_ssl", "urllib", "urllib3",
		"requests", "http", "socketserver", "xmlrpc", "ftplib", "smtplib", "telnetlib", "paramiko")

	// ext: attributes banned only on the module they belong to (matched
	// on the last name of the base, so torch.os.open is os.open): file
	// access, tracing hooks, import hooks and frame access under names
	// too common to ban everywhere.
	moduleAttributes = map[string]map[string]bool{
		"os": set("open", "fdopen", "openpty", "remove", "unlink", "rename", "renames", "replace", "rmdir",
			"removedirs", "mkdir", "makedirs", "chmod", "chown", "lchown", "symlink", "link", "truncate",
			"mkfifo", "mknod", "chdir", "chroot", "write", "pwrite", "writev", "sendfile", "memfd_create",
			"register_at_fork", "unsetenv", "add_dll_directory"),
		"io":       set("open", "open_code", "FileIO"),
		"codecs":   set("open"),
		"tokenize": set("open"),
		"inspect":  set("stack", "trace", "getouterframes", "getinnerframes"),
		"sys": set("modules", "settrace", "setprofile", "addaudithook", "meta_path", "path_hooks", "path_importer_cache",
			"call_tracing", "breakpointhook"),
		"numpy": set("fromfile", "memmap", "save", "savez", "savez_compressed", "savetxt", "loadtxt", "genfromtxt"),
		"torch": set("save", "from_file"),
	}

	// ext: helpers that fetch attributes by name, as getattr does: with
	// literal names the names are checked like getattr's; anything else is
	// a dynamic attribute. getmembers returns every attribute at once.
	attrNameHelpers  = map[string]int{"attrgetter": 0, "methodcaller": 0, "getattr_static": 1}
	allMemberHelpers = set("getmembers", "getmembers_static")
	helperModules    = set("operator", "_operator", "inspect")

	// ext: star imports from these bring process primitives or pickle
	// loaders in under bare names the attribute rules cannot see.
	starImportRoots = set("os", "posix", "nt", "sys", "numpy", "typing", "io", "inspect", "gc", "types", "operator", "_operator")

	// ext: the validator's own packages, which the worker puts on the
	// candidate's sys.path: the harness that runs and checks the call
	// (cacheon_worker), the slots' generators and comparisons
	// (cacheon_reference) and the serving substrate (cacheon_substrate).
	// A kernel that imports one can replace the checks its own process
	// makes (Call.violations, the input digests, the graph gate) and
	// forge a clean call; no kernel needs them, since everything a
	// kernel is given arrives as its call's arguments.
	harnessRoots = set("cacheon_worker", "cacheon_reference", "cacheon_substrate")

	// ext: builtins whose bare reference (aliasing `e = eval`) is flagged,
	// and whose name may not be bound: see binding.
	aliasableBuiltins = set("eval", "exec", "compile", "__import__", "open", "breakpoint",
		"globals", "vars", "locals", "getattr", "setattr", "delattr", "help")
)

func set(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// TargetPython is the interpreter bundle code runs under in the worker.
// Source is parsed for its grammar: code only a newer Python accepts
// would fail there, and code the scan reads differently from the
// interpreter is code the scan does not see.
const TargetPython = pyparse.Python311

// Source parses one Python file and applies every source rule and the
// compilability heuristic. A file that does not parse for TargetPython
// yields a single syntax-error finding. Findings come back in source
// order.
func Source(path string, src []byte) []Finding {
	f, mod, err := pyparse.ParseVersion(path, src, TargetPython)
	if err != nil {
		var se *pyparse.SyntaxError
		if errors.As(err, &se) {
			return []Finding{{Path: path, Line: se.Pos.Line, Col: se.Pos.Col, Rule: RuleSyntax,
				Message: fmt.Sprintf("file does not parse as Python 3.%d: %s", TargetPython, se.Msg)}}
		}
		return []Finding{{Path: path, Rule: RuleSyntax, Message: err.Error()}}
	}
	aliases, binds := importAliases(mod)
	s := &sourceScan{path: path, file: f, mods: moduleAliases(aliases), direct: map[pyparse.Node]bool{}}
	s.indexAliases(aliases)
	s.assignedModules(binds)
	pyparse.Inspect(mod, s.visit)
	s.compilability(mod)
	sortFindings(s.out)
	return s.out
}

type sourceScan struct {
	path        string
	file        *pyparse.File
	aliases     map[string]map[string]bool // local name -> module paths it may be bound to
	pickled     map[string]bool            // local names some import binds to a pickle-like module
	mods        map[string][]string        // aliases cut down to the paths the module rules match, each once
	direct      map[pyparse.Node]bool
	roots       map[*pyparse.Attribute]*pyparse.Name // chainRoot's memory
	pickleRoots map[*pyparse.Name]bool               // pickleBase's memory
	out         []Finding
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

func lastName(module string) string {
	return module[strings.LastIndexByte(module, '.')+1:]
}

// bannedModule reports the banned family a module path belongs to: its
// root is banned, or the root is the C-accelerated twin of a banned root
// (_socket, _pickle, _multiprocessing, _ssl, _asyncio, ...), or the path
// lies under a banned dotted prefix (numpy.ctypeslib, torch.hub, ...).
func bannedModule(path string) (string, bool) {
	r := root(path)
	if bannedImportRoots[r] {
		return r, true
	}
	if t := strings.TrimLeft(r, "_"); t != r && bannedImportRoots[t] {
		return r, true
	}
	// The prefixes have at most maxPrefixNames names; a path of a million
	// names is cut there rather than hashed at every dot.
	for i, n := 0, 0; n < maxPrefixNames; n++ {
		j := strings.IndexByte(path[i:], '.')
		if j < 0 {
			if bannedModulePrefixes[path] {
				return path, true
			}
			break
		}
		i += j
		if bannedModulePrefixes[path[:i]] {
			return path[:i], true
		}
		i++
	}
	return "", false
}

// maxPrefixNames is the most names a bannedModulePrefixes entry has.
const maxPrefixNames = 3

// longestPrefix is the length of the longest bannedModulePrefixes entry.
var longestPrefix = func() int {
	n := 0
	for p := range bannedModulePrefixes {
		n = max(n, len(p))
	}
	return n
}()

// prefixEnds holds the last names of the bannedModulePrefixes (hub,
// ctypeslib, config, ...): what a helper fetching attributes by name from
// an unknown object may complete one with.
var prefixEnds = func() map[string]bool {
	out := map[string]bool{}
	for p := range bannedModulePrefixes {
		out[lastName(p)] = true
	}
	return out
}()

// prefixStarts holds the proper prefixes of the bannedModulePrefixes
// (numpy, torch, torch.utils, logging): the module paths an attribute
// chain can start from to spell one.
var prefixStarts = func() map[string]bool {
	out := map[string]bool{}
	for p := range bannedModulePrefixes {
		for i := 0; i < len(p); i++ {
			if p[i] == '.' {
				out[p[:i]] = true
			}
		}
	}
	return out
}()

// moduleAttributeAnywhere reports whether some moduleAttributes module
// bans the attribute name.
func moduleAttributeAnywhere(name string) bool {
	for _, attrs := range moduleAttributes {
		if attrs[name] {
			return true
		}
	}
	return false
}

func bannedPrefix(path string) bool {
	_, ok := bannedModule(path)
	return ok
}

func (s *sourceScan) visit(n pyparse.Node) bool {
	switch x := n.(type) {
	case *pyparse.Import:
		for _, a := range x.Names {
			if harnessRoots[root(a.Name.Name)] {
				s.add(a, RuleHarnessImport, "import of %q: %s is the validator's harness, which a kernel may not reach",
					clip(a.Name.Name), root(a.Name.Name))
			} else if fam, ok := bannedModule(a.Name.Name); ok {
				s.add(a, RuleBannedImport, "import of %q: module %q is banned", a.Name.Name, fam)
			}
			s.importBinding(a, root(a.Name.Name))
		}
	case *pyparse.ImportFrom:
		for _, a := range x.Names {
			if a.Name.Name != "*" {
				s.importBinding(a, a.Name.Name)
			}
		}
		s.importFrom(x)
	case *pyparse.Arg:
		s.binding(x.Name, "a parameter")
	case *pyparse.FunctionDef:
		s.binding(x.Name, "a def")
	case *pyparse.ClassDef:
		s.binding(x.Name, "a class")
	case *pyparse.ExceptHandler:
		s.binding(x.Name, "an except clause")
	case *pyparse.Global:
		for _, id := range x.Names {
			s.binding(id, "a global declaration")
		}
	case *pyparse.Nonlocal:
		for _, id := range x.Names {
			s.binding(id, "a nonlocal declaration")
		}
	case *pyparse.MatchAs:
		s.binding(x.Name, "a match capture")
	case *pyparse.MatchStar:
		s.binding(x.Name, "a match capture")
	case *pyparse.MatchMapping:
		s.binding(x.Rest, "a match capture")
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
	if r := root(mod); harnessRoots[r] {
		s.add(x, RuleHarnessImport, "import from %q: %s is the validator's harness, which a kernel may not reach", clip(mod), r)
		return
	}
	if fam, ok := bannedModule(mod); ok {
		s.add(x, RuleBannedImport, "import from %q: module %q is banned", clip(mod), clip(fam))
		return
	}
	// One statement may import a million names from a module path
	// megabytes long: what depends on the path alone is worked out once,
	// and messages carry it clipped.
	r := root(mod)
	text := clip(mod)
	pickle := pickleBases[strings.ToLower(r)]
	star := starImportRoots[r] || pickle
	attrs := moduleAttributes[lastName(mod)]
	prefix := len(mod) < longestPrefix // mod.name may spell a banned dotted prefix
	for _, a := range x.Names {
		name := a.Name.Name
		switch {
		case name == "*":
			if star {
				s.add(a, RuleStarImport, "star import from %q brings process or loader primitives in under bare names", text)
			}
		case bannedAttributes[name] || dunderAttributes[name] || introspectionAttributes[name] ||
			codeAttributes[name] || fileAttributes[name] || moduleAttributeNames[name] || attrs[name]:
			s.add(a, RuleBannedImportName, "import of %q from %q: the name is banned as an attribute", clip(name), text)
		case prefix && bannedPrefix(mod+"."+name):
			s.add(a, RuleBannedImport, "import of %q from %q: module %q is banned", name, mod, mod+"."+name)
		case (name == "load" || name == "loads") && pickle, pickleAttributes[name]:
			s.add(a, RulePickleLoad, "import of %q from %q: unpickling loaders are banned", name, text)
		}
	}
}

// clip shortens a name for a message. A hostile file's names can be
// megabytes long, and a message per finding must not copy one each time.
func clip(s string) string {
	const max = 64
	if len(s) <= max {
		return s
	}
	i := max
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "..."
}

func (s *sourceScan) call(x *pyparse.Call) {
	for _, k := range x.Keywords {
		// numpy.load(f, allow_pickle=True) and every reader that takes the
		// flag unpickles; only a literal False is safe.
		if k.Arg != nil && k.Arg.Name == "allow_pickle" {
			if c, ok := k.Value.(*pyparse.Constant); !ok || c.Kind != pyparse.ConstFalse {
				s.add(k, RulePickleLoad, "allow_pickle= other than a literal False unpickles")
			}
		}
		// inspect.get_annotations(f, eval_str=True) evals annotations.
		if k.Arg != nil && k.Arg.Name == "eval_str" {
			if c, ok := k.Value.(*pyparse.Constant); !ok || c.Kind != pyparse.ConstFalse {
				s.add(k, RuleBannedCall, "eval_str= other than a literal False evaluates annotation strings as code")
			}
		}
		// The same flag spelled as a **{...} literal.
		if d, ok := k.Value.(*pyparse.Dict); ok && k.Arg == nil {
			for _, key := range d.Keys {
				if c, ok := key.(*pyparse.Constant); ok && c.Kind == pyparse.ConstStr && (c.Str == "allow_pickle" || c.Inexact) {
					s.add(k, RulePickleLoad, "allow_pickle passed through **{...} unpickles")
				}
			}
		}
	}
	if h := s.helper(x.Func); h != "" {
		s.direct[x.Func] = true
		s.helperCall(x, h)
		return
	}
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
		if m := s.baseModule(x.Args[0], c.Str); m != "" {
			s.add(x, RuleBannedAttribute, "%s.%s is banned: file access, tracing or import hooks via %s()", m, c.Str, fn.ID)
			return
		}
		if p := s.bannedPath(x.Args[0], c.Str); p != "" {
			s.add(x, RuleBannedAttribute, "%s() reaches banned module %q without importing it", fn.ID, p)
			return
		}
		s.attributeName(x, c.Str, "via "+fn.ID+"()")
	}
}

func (s *sourceScan) attribute(x *pyparse.Attribute) {
	name := x.Attr.Name
	if (name == "load" || name == "loads") && s.pickleBase(x.Value) || pickleAttributes[name] {
		s.add(x, RulePickleLoad, "%s.%s: unpickling loaders are banned", baseText(x.Value), name)
		return
	}
	if name == "modules" {
		if b, ok := x.Value.(*pyparse.Name); ok && s.resolvesTo(b.ID, "sys") {
			s.add(x, RuleIntrospection, "sys.modules reaches modules without importing them")
			return
		}
	}
	if h := s.helper(x); h != "" {
		if !s.direct[x] {
			s.add(x, RuleDynamicAttribute, "%s referenced without being called fetches attributes the scan cannot see", h)
		}
		return
	}
	if m := s.baseModule(x.Value, name); m != "" {
		s.add(x, RuleBannedAttribute, "%s.%s is banned: file access, tracing or import hooks", m, name)
		return
	}
	if p := s.bannedPath(x.Value, name); p != "" {
		s.add(x, RuleBannedAttribute, "%s reaches banned module %q without importing it", baseText(x), p)
		return
	}
	s.attributeName(x, name, "")
}

// baseModule returns the module of moduleAttributes whose attribute name
// the expression base.name fetches, or "". The base is matched by its
// last name (torch.os.open is os.open) or, for a bare name, by the
// modules the file imports under it.
func (s *sourceScan) baseModule(base pyparse.Expr, name string) string {
	switch b := base.(type) {
	case *pyparse.Attribute:
		if moduleAttributes[b.Attr.Name][name] {
			return b.Attr.Name
		}
	case *pyparse.Name:
		if moduleAttributes[b.ID][name] {
			return b.ID
		}
		for _, m := range s.mods[b.ID] {
			if moduleAttributes[lastName(m)][name] {
				return m
			}
		}
	}
	return ""
}

// bannedPath returns the banned dotted prefix that base.name spells
// exactly (np.ctypeslib, torch.utils.cpp_extension, with the chain's root
// read through the file's imports), or "". Only the link that completes
// the prefix is reported, and only chains no longer than the longest
// prefix are spelled out, so each link costs constant work.
func (s *sourceScan) bannedPath(base pyparse.Expr, name string) string {
	var names [maxPrefixNames]string
	names[0] = name
	n := 1
	e := base
	for n < maxPrefixNames {
		a, ok := e.(*pyparse.Attribute)
		if !ok {
			break
		}
		names[n] = a.Attr.Name
		n++
		e = a.Value
	}
	b, ok := e.(*pyparse.Name)
	if !ok || !prefixStarts[b.ID] && len(s.mods[b.ID]) == 0 {
		return ""
	}
	var tail strings.Builder
	for i := n - 1; i >= 0; i-- {
		tail.WriteString(".")
		tail.WriteString(names[i])
	}
	if p := b.ID + tail.String(); bannedModulePrefixes[p] {
		return p
	}
	for _, m := range s.mods[b.ID] {
		if p := m + tail.String(); bannedModulePrefixes[p] {
			return p
		}
	}
	return ""
}

// helper returns the attribute-fetching helper (operator.attrgetter,
// operator.methodcaller, inspect.getattr_static, inspect.getmembers) an
// expression names, or "". Attributes are matched by name on any base;
// bare names by what the file imports under them.
func (s *sourceScan) helper(e pyparse.Expr) string {
	switch x := e.(type) {
	case *pyparse.Attribute:
		if _, ok := attrNameHelpers[x.Attr.Name]; ok || allMemberHelpers[x.Attr.Name] {
			return x.Attr.Name
		}
	case *pyparse.Name:
		for _, m := range s.mods[x.ID] {
			h := lastName(m)
			if _, ok := attrNameHelpers[h]; (ok || allMemberHelpers[h]) && helperModules[lastName(strings.TrimSuffix(m, "."+h))] {
				return h
			}
		}
	}
	return ""
}

// helperCall checks a call of an attribute-fetching helper like a getattr
// call: every name must be a string literal, and is then checked as the
// attribute it names (attrgetter's dotted names link by link).
func (s *sourceScan) helperCall(x *pyparse.Call, h string) {
	if allMemberHelpers[h] {
		s.add(x, RuleDynamicAttribute, "%s() returns every attribute, banned ones included", h)
		return
	}
	first := attrNameHelpers[h]
	names := x.Args[min(first, len(x.Args)):]
	if h != "attrgetter" && len(names) > 0 {
		names = names[:1]
	}
	if len(names) == 0 {
		s.add(x, RuleDynamicAttribute, "%s() without a literal attribute name", h)
		return
	}
	for _, arg := range names {
		c, ok := arg.(*pyparse.Constant)
		if !ok || c.Kind != pyparse.ConstStr || c.Inexact {
			s.add(x, RuleDynamicAttribute, "%s() with a computed attribute name; only string literals are allowed", h)
			return
		}
		for _, part := range strings.Split(c.Str, ".") {
			// The object is not known here, so a name some module's
			// table bans (os "open") counts whatever the object.
			if moduleAttributeAnywhere(part) || prefixEnds[part] {
				s.add(x, RuleBannedAttribute, "attribute %q is banned on a module via %s()", part, h)
				continue
			}
			s.attributeName(x, part, "via "+h+"()")
		}
	}
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
	case moduleAttributeNames[name]:
		s.add(n, RuleBannedAttribute, "attribute %q reaches a banned module without importing it%s", name, suffix)
	case codeAttributes[name]:
		s.add(n, RuleBannedAttribute, "attribute %q runs a string as code%s", name, suffix)
	case fileAttributes[name]:
		s.add(n, RuleBannedAttribute, "attribute %q writes files%s", name, suffix)
	case pickleAttributes[name]:
		s.add(n, RulePickleLoad, "attribute %q unpickles%s", name, suffix)
	case dunderAttributes[name]:
		s.add(n, RuleDunderAttribute, "attribute %q reaches interpreter internals%s", name, suffix)
	case introspectionAttributes[name]:
		s.add(n, RuleIntrospection, "attribute %q reaches interpreter frames%s", name, suffix)
	}
}

// binding flags a binding of a banned builtin's name: an assignment, a
// loop, with or walrus target, a parameter, a def, a class, an import, an
// except or match capture, and `global`/`nonlocal` of it (which binds it
// for a whole scope). Once a name like getattr or exec may be rebound, what
// a later getattr(o, "weight") or bare exec means depends on which
// binding ran first, and the scan does not follow control flow: `eval =
// eval` or `def f(exec=exec)` would turn the builtin into a local that
// looks bound by the file itself. So the scan does not try to tell a
// harmless shadow from a capture: the name is simply not rebindable. input
// stays out of the set (aliasableBuiltins), being the usual name of a
// kernel's input tensor.
func (s *sourceScan) binding(id *pyparse.Ident, how string) {
	if id != nil && aliasableBuiltins[id.Name] {
		s.add(id, RuleBannedBuiltinBind, "%s rebinds the name of builtin %s; its meaning would then depend on control flow", how, id.Name)
	}
}

// importBinding is binding for an import alias, which binds its as-name
// or else name (an `import a.b` binds a).
func (s *sourceScan) importBinding(a *pyparse.Alias, name string) {
	if a.AsName != nil {
		s.binding(a.AsName, "an import")
		return
	}
	if aliasableBuiltins[name] {
		s.add(a, RuleBannedBuiltinBind, "an import rebinds the name of builtin %s; its meaning would then depend on control flow", name)
	}
}

func (s *sourceScan) name(x *pyparse.Name) {
	if x.Ctx != pyparse.Load {
		// An assignment, augmented assignment, for, with, walrus or
		// comprehension target, or a del.
		if aliasableBuiltins[x.ID] {
			s.add(x, RuleBannedBuiltinBind, "a target of an assignment, for, with, walrus or del rebinds the name of builtin %s; its meaning would then depend on control flow", x.ID)
		}
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
	if h := s.helper(x); h != "" && !s.direct[x] {
		s.add(x, RuleDynamicAttribute, "%s referenced without being called fetches attributes the scan cannot see", h)
		return
	}
	// Every use of the name but a direct call (which call judges) is a
	// finding, whatever the file binds: a default value (`def f(e=eval)`),
	// a right-hand side, a loop iterable, a lambda body. The bindings that
	// could make such a use mean something else are findings themselves.
	if aliasableBuiltins[x.ID] && !s.direct[x] {
		s.add(x, RuleBannedBuiltinRef, "builtin %s referenced without being called (aliasing)", x.ID)
	}
}

// pickleBase reports whether an expression names a pickle-like module:
// directly (torch.load), through a submodule (torch.serialization.load) or
// through an import alias (import torch as t; t.load).
//
// Every .load link of one chain shares its root, whose name may be
// megabytes long, so the answer is remembered per root: the name is
// lowered and hashed once per chain, not once per link.
func (s *sourceScan) pickleBase(e pyparse.Expr) bool {
	b := s.chainRoot(e)
	if b == nil {
		return false
	}
	if v, ok := s.pickleRoots[b]; ok {
		return v
	}
	v := pickleBases[strings.ToLower(b.ID)] || s.pickled[b.ID]
	if s.pickleRoots == nil {
		s.pickleRoots = map[*pyparse.Name]bool{}
	}
	s.pickleRoots[b] = v
	return v
}

func (s *sourceScan) resolvesTo(name, module string) bool {
	return name == module || s.aliases[name][module]
}

// indexAliases turns the import aliases into the sets the rules look
// names up in. A file may import a thousand modules under one name; a
// use of the name then costs one lookup, not one per import.
func (s *sourceScan) indexAliases(aliases map[string][]string) {
	s.aliases = make(map[string]map[string]bool, len(aliases))
	s.pickled = map[string]bool{}
	for name, paths := range aliases {
		set := make(map[string]bool, len(paths))
		for _, m := range paths {
			set[m] = true
			if pickleBases[strings.ToLower(root(m))] {
				s.pickled[name] = true
			}
		}
		s.aliases[name] = set
	}
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
			parts = append(parts, clip(x.ID))
			e = nil
		case *pyparse.Attribute:
			parts = append(parts, clip(x.Attr.Name))
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
// two places maps to both modules. The same walk collects the plain
// assignments of one name to another, for assignedModules.
func importAliases(mod *pyparse.Module) (map[string][]string, []nameBinding) {
	out := map[string][]string{}
	var binds []nameBinding
	bind := func(target, value pyparse.Expr) {
		if t, ok := target.(*pyparse.Name); ok {
			if v, ok := value.(*pyparse.Name); ok && t.ID != v.ID {
				binds = append(binds, nameBinding{t.ID, v.ID})
			}
		}
	}
	pyparse.Inspect(mod, func(n pyparse.Node) bool {
		switch x := n.(type) {
		case *pyparse.Assign:
			for _, t := range x.Targets {
				bind(t, x.Value)
			}
		case *pyparse.AnnAssign:
			if x.Value != nil {
				bind(x.Target, x.Value)
			}
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
			base := aliasBase(x.Module.Name)
			for _, a := range x.Names {
				if a.Name.Name == "*" {
					continue
				}
				local := a.Name.Name
				if a.AsName != nil {
					local = a.AsName.Name
				}
				out[local] = append(out[local], base+"."+a.Name.Name)
			}
		}
		return true
	})
	return out, binds
}

// nameBinding is a plain assignment `target = value` of two names.
type nameBinding struct{ target, value string }

// maxAliasPath bounds the module path a from-import alias records. The
// rules only ever ask about short paths, and a statement importing a
// million names from a path megabytes long must not copy the path once
// per name.
const maxAliasPath = 256

// aliasBase is the module path a from-import's aliases record: the path
// itself, or for a longer one its root (which the pickle rule reads)
// followed by a name no rule matches.
func aliasBase(mod string) string {
	if len(mod) <= maxAliasPath {
		return mod
	}
	if r := root(mod); len(r) <= maxAliasPath {
		return r + ".(long)"
	}
	return "(long)"
}

// moduleAliases keeps, for each imported name, only the module paths the
// module rules can match, each once: prefixes of a banned dotted prefix,
// paths ending in a moduleAttributes module, and the helper functions.
// The lists are then bounded by the size of those tables, so a file that
// imports a thousand modules under one name pays for its imports once,
// not once per use of the name.
func moduleAliases(aliases map[string][]string) map[string][]string {
	out := map[string][]string{}
	for name, paths := range aliases {
		seen := map[string]bool{}
		for _, m := range paths {
			keep := ""
			last := lastName(m)
			_, h := attrNameHelpers[last]
			switch {
			case prefixStarts[m]:
				keep = m
			case moduleAttributes[last] != nil:
				keep = last
			case (h || allMemberHelpers[last]) && helperModules[lastName(strings.TrimSuffix(m, "."+last))]:
				keep = "operator." + last
			}
			if keep != "" && !seen[keep] {
				seen[keep] = true
				out[name] = append(out[name], keep)
			}
		}
	}
	return out
}

// assignedModules extends the module aliases by plain assignments of a
// module name (`o = os`, `o: object = io`): o.open is then os.open, and
// t.load after `t = torch` is torch.load. One level only and
// flow-insensitive, like the import aliases; a module reached through any
// other expression ([os][0], a call) is not seen.
func (s *sourceScan) assignedModules(binds []nameBinding) {
	for _, b := range binds {
		add := append([]string{}, s.mods[b.value]...)
		if moduleAttributes[b.value] != nil || prefixStarts[b.value] {
			add = append(add, b.value)
		}
		for _, m := range add {
			if !slices.Contains(s.mods[b.target], m) {
				s.mods[b.target] = append(s.mods[b.target], m)
			}
		}
		if s.pickled[b.value] || pickleBases[strings.ToLower(b.value)] {
			s.pickled[b.target] = true
		}
	}
}
