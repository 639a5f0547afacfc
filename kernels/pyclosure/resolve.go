package pyclosure

import (
	"crypto/sha256"
	"fmt"
	"io"
	"io/fs"
	"path"
	"runtime"
	"strings"

	"github.com/cacheon/engine/kernels/pyparse"
)

type resolver struct {
	fsys     fs.FS
	cache    FactsCache
	stems    map[string]bool
	files    map[string]*File
	queue    []*File
	problems []Problem
	// analyses are the facts of the queued files, being found while the
	// resolver works through the queue (see analyze); seen holds, when
	// there is a cache, the analysis of each content digest met so far.
	analyses map[*File]*analysis
	seen     map[[32]byte]*analysis
}

// where is a place in a file, for problems (line 0: the whole file).
type where struct {
	path      string
	line, col int
}

func (r *resolver) report(w where, format string, args ...any) {
	r.problems = append(r.problems, Problem{Path: w.path, Line: w.line, Col: w.col, Reason: fmt.Sprintf(format, args...)})
}

func (r *resolver) isFile(p string) bool {
	info, err := fs.Stat(r.fsys, p)
	return err == nil && info.Mode().IsRegular()
}

func (r *resolver) isDir(p string) bool {
	if p == "" {
		return true
	}
	info, err := fs.Stat(r.fsys, p)
	return err == nil && info.IsDir()
}

func join(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// moduleName derives the module name of a bundle file from its path.
// Every component must be an identifier: the file becomes importable as
// <prefix>.<components>.
func (r *resolver) moduleName(p string) (mod string, isPkg, ok bool) {
	w := where{path: p}
	if !strings.HasSuffix(p, ".py") || !fs.ValidPath(p) {
		r.report(w, "op source is not a bundle-relative .py file")
		return "", false, false
	}
	parts := strings.Split(strings.TrimSuffix(p, ".py"), "/")
	if parts[len(parts)-1] == "__init__" {
		parts = parts[:len(parts)-1]
		isPkg = true
	}
	for _, c := range parts {
		if !pyparse.IsIdentifier(c) {
			r.report(w, "path component %q is not a Python identifier, so the file cannot be imported under the namespace prefix", c)
			return "", false, false
		}
	}
	return strings.Join(parts, "."), isPkg, true
}

// enqueue adds a file to the closure, with the __init__.py of every
// directory above it (Python runs them when it imports the file under the
// namespace prefix).
func (r *resolver) enqueue(p, mod string, isPkg bool) {
	if _, seen := r.files[p]; seen {
		return
	}
	f := &File{Path: p, Module: mod, IsPackage: isPkg}
	r.files[p] = f
	src, err := r.read(p)
	if err != nil {
		r.report(where{path: p}, "cannot be read: %v", err)
		return
	}
	f.Src = src
	r.queue = append(r.queue, f)
	r.analyze(f)
	dir := path.Dir(p)
	if isPkg {
		dir = path.Dir(dir)
	}
	for {
		if dir == "." {
			dir = ""
		}
		init := join(dir, "__init__.py")
		if init != p && r.isFile(init) {
			r.enqueue(init, strings.ReplaceAll(dir, "/", "."), true)
			break // that file's own enqueue walks further up
		}
		if dir == "" {
			break
		}
		dir = path.Dir(dir)
	}
}

func (r *resolver) read(p string) ([]byte, error) {
	if s, ok := r.fsys.(SnapshotFS); ok {
		if data, ok := s.Bytes(p); ok {
			if len(data) > MaxFileBytes {
				return nil, fmt.Errorf("larger than %d bytes", MaxFileBytes)
			}
			return data, nil
		}
	}
	f, err := r.fsys.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("larger than %d bytes", MaxFileBytes)
	}
	return data, nil
}

// process applies the facts of one closure file (its parse, the
// dynamic-import ban) and follows its imports.
func (r *resolver) process(f *File) {
	facts := r.facts(f)
	for _, p := range facts.Refusals {
		p.Path = f.Path
		r.problems = append(r.problems, p)
	}
	for i := range facts.Imports {
		s := &facts.Imports[i]
		if !s.From {
			for _, a := range s.Names {
				if _, ok := r.absolute(where{f.Path, a.Line, a.Col}, a.Name.Name); ok {
					f.Imports = append(f.Imports, LocalImport{Start: a.Name.Start, End: a.Name.End, Module: a.Name.Name, Bare: !a.As})
				}
			}
			continue
		}
		w := where{f.Path, s.Line, s.Col}
		if s.Level > 0 {
			r.relative(w, f, s)
			continue
		}
		if target, ok := r.absolute(w, s.Module.Name); ok {
			f.Imports = append(f.Imports, LocalImport{Start: s.Module.Start, End: s.Module.End, Module: s.Module.Name})
			r.fromNames(w, target, s)
		}
	}
}

func root(module string) string {
	r, _, _ := strings.Cut(module, ".")
	return r
}

// target is a resolved bundle module: its file and, for a package, its
// directory.
type target struct {
	file string
	dir  string // "" unless a package (or the bundle root)
	pkg  bool
}

// absolute resolves an absolute import. It reports ok for a bundle-local
// module (and enqueues its files); a module outside the bundle returns
// false without a problem.
func (r *resolver) absolute(w where, module string) (target, bool) {
	top := root(module)
	local := r.isFile(top+".py") || r.isDir(top)
	if r.stems[top] {
		if local {
			r.report(w, "bundle module %q has the name of the native extension built from %s.cu", top, top)
		}
		return target{}, false
	}
	if !local {
		return target{}, false
	}
	return r.walk(w, "", strings.Split(module, "."), module)
}

// walk resolves the components parts below directory dir, enqueueing each
// package's __init__.py and the final module.
func (r *resolver) walk(w where, dir string, parts []string, module string) (target, bool) {
	for i, part := range parts {
		last := i == len(parts)-1
		sub := join(dir, part)
		name := strings.ReplaceAll(sub, "/", ".")
		pkgInit := join(sub, "__init__.py")
		isPkg := r.isDir(sub) && r.isFile(pkgInit)
		isMod := r.isFile(sub + ".py")
		switch {
		case isPkg && isMod:
			r.report(w, "import of %q is ambiguous: both %s/ and %s.py exist", module, sub, sub)
			return target{}, false
		case isPkg:
			r.enqueue(pkgInit, name, true)
			dir = sub
			if last {
				return target{file: pkgInit, dir: sub, pkg: true}, true
			}
		case isMod:
			if !last {
				r.report(w, "import of %q: %s is a module, not a package, so %q is not a bundle module (partially-local import)", module, sub+".py", module)
				return target{}, false
			}
			r.enqueue(sub+".py", name, false)
			return target{file: sub + ".py"}, true
		case r.isDir(sub):
			r.report(w, "import of %q goes through %s/, which has no __init__.py: namespace packages are not supported", module, sub)
			return target{}, false
		default:
			r.report(w, "import of %q starts in the bundle but %q is not a bundle module (partially-local import)", module, name)
			return target{}, false
		}
	}
	return target{dir: dir, pkg: true}, true
}

// fromNames follows `from <package> import a, b`: names that are
// submodules of a bundle package join the closure.
func (r *resolver) fromNames(w where, t target, x *ImportStmt) {
	if !t.pkg {
		return // names of a plain module are its attributes
	}
	for _, a := range x.Names {
		name := a.Name.Name
		if name == "*" {
			r.report(w, "star import from bundle package %q: import the modules it needs by name", moduleOf(t.dir))
			continue
		}
		r.submodule(w, t.dir, name, false)
	}
}

func moduleOf(dir string) string {
	if dir == "" {
		return "(bundle root)"
	}
	return strings.ReplaceAll(dir, "/", ".")
}

// submodule adds dir/name as a module when it is one. required makes a
// name that is neither a module nor possibly defined by the package's
// __init__.py a problem.
func (r *resolver) submodule(w where, dir, name string, required bool) {
	sub := join(dir, name)
	isPkg := r.isDir(sub) && r.isFile(join(sub, "__init__.py"))
	isMod := r.isFile(sub + ".py")
	switch {
	case isPkg && isMod:
		r.report(w, "import of %q from %s is ambiguous: both %s/ and %s.py exist", name, moduleOf(dir), sub, sub)
	case isPkg:
		r.enqueue(join(sub, "__init__.py"), strings.ReplaceAll(sub, "/", "."), true)
	case isMod:
		r.enqueue(sub+".py", strings.ReplaceAll(sub, "/", "."), false)
	case r.isDir(sub):
		r.report(w, "import of %q from %s names %s/, which has no __init__.py: namespace packages are not supported", name, moduleOf(dir), sub)
	case required && !r.isFile(join(dir, "__init__.py")):
		r.report(w, "unresolved relative import: %q is not a module of %s, and %s has no __init__.py that could define it", name, moduleOf(dir), moduleOf(dir))
	}
}

// relative resolves `from .x import y` against the importing file's
// package. The bundle root is the top package (it becomes the namespace
// prefix), so a relative import may climb to it but not above.
func (r *resolver) relative(w where, f *File, x *ImportStmt) {
	var pkg []string
	if f.Module != "" {
		pkg = strings.Split(f.Module, ".")
	}
	if !f.IsPackage && len(pkg) > 0 {
		pkg = pkg[:len(pkg)-1]
	}
	up := x.Level - 1
	if up > len(pkg) {
		r.report(w, "unresolved relative import: %d leading dots climb above the bundle's top-level package", x.Level)
		return
	}
	base := strings.Join(pkg[:len(pkg)-up], "/")
	if x.Module == nil {
		for _, a := range x.Names {
			if a.Name.Name == "*" {
				r.report(w, "star import from bundle package %s: import the modules it needs by name", moduleOf(base))
				continue
			}
			r.submodule(w, base, a.Name.Name, true)
		}
		return
	}
	parts := strings.Split(x.Module.Name, ".")
	first := join(base, parts[0])
	if !r.isFile(first+".py") && !r.isDir(first) {
		r.report(w, "unresolved relative import: %s%s is not a bundle module", strings.Repeat(".", x.Level), x.Module.Name)
		return
	}
	t, ok := r.walk(w, base, parts, strings.Repeat(".", x.Level)+x.Module.Name)
	if ok {
		r.fromNames(w, t, x)
	}
}

// The files of a closure are independent until their facts are read, so
// their analyses run concurrently: each file's starts when it is queued,
// on one of a few slots shared by every closure of the process (bundles
// are inspected concurrently too), and the resolver reads the results in
// queue order, so the closure and its problems are those of a serial run.
// The cache is only used from the resolver's goroutine, as a serial run
// uses it: a file's facts are looked up when it is queued (or, when a file
// of the same content was queued before it, when its turn comes, after
// that file's facts were stored) and stored when its turn comes.

// analysisSlots bounds the analyses running at once: one per processor.
var analysisSlots = make(chan struct{}, runtime.GOMAXPROCS(0))

// analysis is the facts of one queued file, found or being found.
type analysis struct {
	sum      [32]byte // the content digest, when there is a cache
	done     chan struct{}
	facts    *Facts
	err      error
	panicked any  // a panic of the parser, raised again where the facts are read
	cached   bool // the facts came from the cache
	// same is the analysis of an earlier file of the same content: this
	// file is looked up in the cache in its turn, and takes same's facts
	// on a miss instead of parsing the same bytes again.
	same *analysis
}

// wait returns the facts, or the parser's failure, once they are found.
func (a *analysis) wait() (*Facts, error) {
	<-a.done
	if a.panicked != nil {
		panic(a.panicked)
	}
	return a.facts, a.err
}

// analyze starts finding the facts of a file as it is queued.
func (r *resolver) analyze(f *File) {
	if r.analyses == nil {
		r.analyses = map[*File]*analysis{}
	}
	a := &analysis{}
	r.analyses[f] = a
	if r.cache != nil {
		a.sum = r.sum(f)
		if same, ok := r.seen[a.sum]; ok {
			a.same = same
			return
		}
		if r.seen == nil {
			r.seen = map[[32]byte]*analysis{}
		}
		r.seen[a.sum] = a
		if facts, ok := r.cache.Load(a.sum); ok {
			a.facts, a.cached = facts, true
			a.done = doneAlready
			return
		}
	}
	a.done = make(chan struct{})
	go func() {
		defer close(a.done)
		analysisSlots <- struct{}{}
		defer func() { <-analysisSlots }()
		defer func() { a.panicked = recover() }()
		a.facts, a.err = Analyze(f.Src)
	}()
}

// doneAlready is the done channel of facts found when the file is queued.
var doneAlready = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// facts returns the facts of a closure file: from the cache when one is
// set and holds the file's bytes, else from a parse (which the cache then
// keeps). A parser failure other than a syntax error is a problem of the
// file, never cached.
func (r *resolver) facts(f *File) *Facts {
	a := r.analyses[f]
	var facts *Facts
	var err error
	switch {
	case a.same != nil:
		if cached, ok := r.cache.Load(a.sum); ok {
			return cached
		}
		facts, err = a.same.wait()
	case a.cached:
		return a.facts
	default:
		facts, err = a.wait()
	}
	if err != nil {
		return &Facts{Refusals: []Problem{{Reason: err.Error()}}}
	}
	if r.cache != nil {
		r.cache.Store(a.sum, facts)
	}
	return facts
}

// sum is the SHA-256 of a closure file's bytes: the one the bundle
// snapshot took when it read the file, or computed here.
func (r *resolver) sum(f *File) [32]byte {
	if s, ok := r.fsys.(SnapshotFS); ok {
		if sum, ok := s.Sum256(f.Path); ok {
			return sum
		}
	}
	return sha256.Sum256(f.Src)
}
