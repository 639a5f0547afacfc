// Package pyclosure computes the Python import closure of a contribution's
// op sources: every bundle-local module they import, transitively, with the
// package __init__.py files Python would execute on the way. It enforces
// the materializer's rules on that closure (no partially-local,
// bare-namespace or unresolved imports, no clash with a native extension,
// importable path names, no dynamic imports) and records the byte spans of
// every bundle-local import so the materializer can move the files under a
// namespace prefix and rewrite those imports to match.
//
// Module names are bundle-root relative: kernels/util.py is the module
// kernels.util, so it becomes <prefix>.kernels.util once materialized at
// <prefix>/kernels/util.py. Nothing here imports or runs the code.
package pyclosure

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"github.com/cacheon/engine/kernels/bundle"
	"github.com/cacheon/engine/kernels/pyparse"
)

// MaxFileBytes bounds each Python file read (the intake limit for
// inspectable text).
const MaxFileBytes = 8 << 20

// TargetPython is the grammar the closure reads a contribution's Python
// in: the worker's interpreter, 3.11, as the static scan does
// (scan.TargetPython). A construct 3.11 cannot parse (PEP 695 type
// parameters, 3.12 f-strings) is a syntax error here too, so inspection
// never derives a selected delta from source the worker could not import,
// as upstream's inspection refuses it.
const TargetPython = pyparse.Python311

// Options tune closure resolution.
type Options struct {
	// NativeStems are the module names native extensions built from the
	// contribution's CUDA sources will have (see NativeStems). A bundle
	// module with the same top-level name would shadow, or be shadowed by,
	// the extension, so it is refused.
	NativeStems []string
	// Facts, when set, keeps each file's facts by the SHA-256 of its
	// bytes, so a file analyzed before (by this process or, with a
	// DirCache, by an earlier one) is not parsed again. The closure is the
	// same with or without it.
	Facts FactsCache
}

// File is one module of the closure.
type File struct {
	Path      string // bundle-relative path, e.g. "kernels/util.py"
	Module    string // dotted module name, e.g. "kernels.util" ("kernels" for kernels/__init__.py)
	IsPackage bool   // the file is a package's __init__.py
	// Src is the file's bytes; read from a SnapshotFS they are the
	// snapshot's own, so they are never modified.
	Src []byte
	// Imports are the bundle-local absolute imports in this file, in
	// source order: what the namespace rewrite changes.
	Imports []LocalImport
}

// LocalImport is one bundle-local module name inside an import statement.
type LocalImport struct {
	Start, End int    // byte span of the dotted module name in the source
	Module     string // the module name as imported, e.g. "kernels.util"
	// Bare marks `import a.b` without `as`: the statement binds the
	// top-level name a, which the rewrite must keep binding.
	Bare bool
}

// Closure is the set of bundle-local modules reachable from the op sources.
type Closure struct {
	Files []*File // in Python path order
}

// Paths returns the bundle-relative paths of the closure's files.
func (c *Closure) Paths() []string {
	out := make([]string, len(c.Files))
	for i, f := range c.Files {
		out[i] = f.Path
	}
	return out
}

// Problem is one reason the closure is refused, at a place in a file.
type Problem struct {
	Path   string
	Line   int // 0 when the problem is about the whole file
	Col    int
	Reason string
}

func (p Problem) String() string {
	if p.Line == 0 {
		return fmt.Sprintf("%s: %s", p.Path, p.Reason)
	}
	return fmt.Sprintf("%s:%d:%d: %s", p.Path, p.Line, p.Col, p.Reason)
}

// ErrRefused is the class of every closure rejection.
var ErrRefused = errors.New("python closure refused")

// Error lists every problem found; it matches ErrRefused.
type Error struct{ Problems []Problem }

func (e *Error) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return "python closure refused:\n  " + strings.Join(lines, "\n  ")
}

// Is makes errors.Is(err, ErrRefused) hold.
func (e *Error) Is(target error) bool { return target == ErrRefused }

// NativeStems returns the module names of the native extensions built
// from cudaSources: the file name of each .cu without its extension.
func NativeStems(cudaSources []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range cudaSources {
		base := path.Base(s)
		if !strings.HasSuffix(base, ".cu") {
			continue
		}
		stem := strings.TrimSuffix(base, ".cu")
		if !seen[stem] {
			seen[stem] = true
			out = append(out, stem)
		}
	}
	sort.Strings(out)
	return out
}

// Build computes the closure of opSources (bundle-relative paths of the
// op source files) over the bundle tree fsys. Every problem found is
// returned together in an *Error. The caller stages fsys first: links and
// special files must already have been refused (see DirFS).
func Build(fsys fs.FS, opSources []string, opts Options) (*Closure, error) {
	r := &resolver{fsys: fsys, cache: opts.Facts, stems: map[string]bool{}, files: map[string]*File{}}
	for _, s := range opts.NativeStems {
		r.stems[s] = true
	}
	for _, src := range opSources {
		p := path.Clean(src)
		mod, isPkg, ok := r.moduleName(p)
		if !ok {
			continue
		}
		r.enqueue(p, mod, isPkg)
	}
	for len(r.queue) > 0 {
		f := r.queue[0]
		r.queue = r.queue[1:]
		r.process(f)
	}
	if len(r.problems) > 0 {
		sort.SliceStable(r.problems, func(i, j int) bool {
			a, b := r.problems[i], r.problems[j]
			if a.Path != b.Path {
				return bundle.PathLess(a.Path, b.Path)
			}
			if a.Line != b.Line {
				return a.Line < b.Line
			}
			return a.Col < b.Col
		})
		return nil, &Error{Problems: dedupe(r.problems)}
	}
	c := &Closure{}
	for _, f := range r.files {
		c.Files = append(c.Files, f)
	}
	sort.Slice(c.Files, func(i, j int) bool { return bundle.PathLess(c.Files[i].Path, c.Files[j].Path) })
	return c, nil
}

func dedupe(ps []Problem) []Problem {
	var out []Problem
	for i, p := range ps {
		if i > 0 && p == ps[i-1] {
			continue
		}
		out = append(out, p)
	}
	return out
}
