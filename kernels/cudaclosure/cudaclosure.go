// Package cudaclosure computes the include closure of a contribution's
// declared CUDA sources without running a preprocessor. Every #include
// must be a literal "..." or <...> name: computed includes, #include_next,
// #import and directives spelled with the %: digraph are refused, since
// their target cannot be known statically. Quoted includes that land in
// the bundle must name a declared header (never a .cu translation unit);
// every other include must be a safe relative system header name.
//
// Source text is read the way the C preprocessor's first phases read it:
// backslash-newline splices are removed, then comments are replaced by a
// space (string, character and raw string literals are kept), so a
// directive split across lines or hidden behind a comment is still seen.
package cudaclosure

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"

	"github.com/cacheon/engine/kernels/bundle"
)

// MaxFileBytes bounds each CUDA file read (the intake limit for
// inspectable text).
const MaxFileBytes = 8 << 20

// Include is one #include directive.
type Include struct {
	File   string // bundle-relative path of the including file
	Line   int    // 1-based line of the directive
	Name   string // the name between the delimiters
	System bool   // written <...>
	// Path is the bundle file a local include resolves to; "" for a
	// system header.
	Path string
}

// Closure is the result of Build.
type Closure struct {
	// Files are the declared CUDA files reached from the .cu sources, in
	// Python path order.
	Files []string
	// Includes are every directive found, in file then line order.
	Includes []Include
	// SystemHeaders are the distinct system header names used, sorted.
	SystemHeaders []string
}

// Problem is one reason the closure is refused.
type Problem struct {
	Path   string
	Line   int
	Reason string
}

func (p Problem) String() string {
	if p.Line == 0 {
		return fmt.Sprintf("%s: %s", p.Path, p.Reason)
	}
	return fmt.Sprintf("%s:%d: %s", p.Path, p.Line, p.Reason)
}

// ErrRefused is the class of every closure rejection.
var ErrRefused = errors.New("cuda include closure refused")

// Error lists every problem found; it matches ErrRefused.
type Error struct{ Problems []Problem }

func (e *Error) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return "cuda include closure refused:\n  " + strings.Join(lines, "\n  ")
}

// Is makes errors.Is(err, ErrRefused) hold.
func (e *Error) Is(target error) bool { return target == ErrRefused }

// Build reads every declared CUDA file (bundle-relative paths, .cu and
// .cuh) from fsys and follows the includes of the .cu sources. It returns
// every problem found in one *Error.
func Build(fsys fs.FS, declared []string) (*Closure, error) {
	b := &builder{fsys: fsys, declared: map[string]bool{}, seen: map[string]bool{}, system: map[string]bool{}}
	var roots []string
	for _, d := range declared {
		p := path.Clean(d)
		b.declared[p] = true
		roots = append(roots, p)
	}
	sort.Slice(roots, func(i, j int) bool { return bundle.PathLess(roots[i], roots[j]) })
	// Every declared file is read and checked, reached or not; the
	// closure lists those reachable from the translation units.
	for _, p := range roots {
		b.visit(p)
	}
	reached := map[string]bool{}
	var walk func(string)
	walk = func(p string) {
		if reached[p] {
			return
		}
		reached[p] = true
		for _, inc := range b.byFile[p] {
			if inc.Path != "" {
				walk(inc.Path)
			}
		}
	}
	for _, p := range roots {
		if strings.HasSuffix(p, ".cu") {
			walk(p)
		}
	}
	if len(b.problems) > 0 {
		sort.SliceStable(b.problems, func(i, j int) bool {
			x, y := b.problems[i], b.problems[j]
			if x.Path != y.Path {
				return bundle.PathLess(x.Path, y.Path)
			}
			return x.Line < y.Line
		})
		return nil, &Error{Problems: b.problems}
	}
	c := &Closure{Includes: b.includes}
	for p := range reached {
		c.Files = append(c.Files, p)
	}
	sort.Slice(c.Files, func(i, j int) bool { return bundle.PathLess(c.Files[i], c.Files[j]) })
	for h := range b.system {
		c.SystemHeaders = append(c.SystemHeaders, h)
	}
	sort.Strings(c.SystemHeaders)
	return c, nil
}

type builder struct {
	fsys     fs.FS
	declared map[string]bool
	seen     map[string]bool
	system   map[string]bool
	includes []Include
	byFile   map[string][]Include
	problems []Problem
}

func (b *builder) report(p string, line int, format string, args ...any) {
	b.problems = append(b.problems, Problem{Path: p, Line: line, Reason: fmt.Sprintf(format, args...)})
}

func (b *builder) visit(p string) {
	if b.seen[p] {
		return
	}
	b.seen[p] = true
	if !strings.HasSuffix(p, ".cu") && !strings.HasSuffix(p, ".cuh") {
		b.report(p, 0, "declared CUDA source is not a .cu or .cuh file")
		return
	}
	src, err := b.read(p)
	if err != nil {
		b.report(p, 0, "cannot be read: %v", err)
		return
	}
	for _, d := range directives(src) {
		b.directive(p, d)
	}
}

func (b *builder) read(p string) ([]byte, error) {
	if !fs.ValidPath(p) {
		return nil, fmt.Errorf("not a bundle-relative path")
	}
	f, err := b.fsys.Open(p)
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

func (b *builder) directive(file string, d directive) {
	if d.digraph {
		b.report(file, d.line, "directive written with the %%: digraph; write # so the include can be checked")
		return
	}
	if d.trigraph {
		b.report(file, d.line, "directive written with the ??= trigraph; write # so the include can be checked")
		return
	}
	switch d.name {
	case "include":
	case "include_next", "import":
		b.report(file, d.line, "#%s is not allowed: only #include with a literal name", d.name)
		return
	default:
		return
	}
	name, system, ok := headerName(d.rest)
	if !ok {
		b.report(file, d.line, "#include of %q: only a literal \"name\" or <name> may be included (no macros, nothing after the name)", strings.TrimSpace(d.rest))
		return
	}
	inc := Include{File: file, Line: d.line, Name: name, System: system}
	if !system {
		if p, found, escapes := b.resolveLocal(file, name); escapes {
			b.report(file, d.line, "#include \"%s\" leaves the bundle", name)
			return
		} else if found {
			switch {
			case strings.HasSuffix(p, ".cu"):
				b.report(file, d.line, "#include \"%s\" names the translation unit %s; only headers may be included", name, p)
				return
			case !b.declared[p]:
				b.report(file, d.line, "#include \"%s\" names %s, which no op declares in cuda_sources", name, p)
				return
			}
			inc.Path = p
			b.add(inc)
			b.visit(p)
			return
		}
	}
	if reason := unsafeSystemName(name); reason != "" {
		b.report(file, d.line, "#include of system header %q: %s", name, reason)
		return
	}
	b.system[name] = true
	b.add(inc)
}

func (b *builder) add(inc Include) {
	b.includes = append(b.includes, inc)
	if b.byFile == nil {
		b.byFile = map[string][]Include{}
	}
	b.byFile[inc.File] = append(b.byFile[inc.File], inc)
}

// resolveLocal looks a quoted include up relative to the including file,
// as the compiler does first.
func (b *builder) resolveLocal(file, name string) (p string, found, escapes bool) {
	if strings.HasPrefix(name, "/") || strings.Contains(name, "\\") {
		return "", false, false // judged as a system name
	}
	joined := path.Join(path.Dir(file), name)
	if joined == ".." || strings.HasPrefix(joined, "../") {
		return "", false, true
	}
	info, err := fs.Stat(b.fsys, joined)
	if err != nil || info.IsDir() {
		return "", false, false
	}
	return joined, true, false
}

// unsafeSystemName says why a header name outside the bundle is refused:
// it must be a plain relative path of ordinary characters.
func unsafeSystemName(name string) string {
	switch {
	case name == "":
		return "empty name"
	case strings.HasPrefix(name, "/"):
		return "absolute paths are not allowed"
	}
	for _, c := range name {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("._-+/", c)
		if !ok {
			return fmt.Sprintf("character %q is not allowed", c)
		}
	}
	for _, part := range strings.Split(name, "/") {
		switch part {
		case "":
			return "empty path component"
		case ".", "..":
			return "relative components are not allowed"
		}
	}
	return ""
}

// headerName parses the operand of #include: a quoted or bracketed name
// followed by nothing but white space.
func headerName(rest string) (name string, system, ok bool) {
	s := strings.TrimLeft(rest, " \t\f\v")
	if s == "" {
		return "", false, false
	}
	var closeCh byte
	switch s[0] {
	case '"':
		closeCh = '"'
	case '<':
		closeCh, system = '>', true
	default:
		return "", false, false
	}
	end := strings.IndexByte(s[1:], closeCh)
	if end < 0 {
		return "", false, false
	}
	name = s[1 : 1+end]
	if strings.TrimRight(s[2+end:], " \t\f\v\r") != "" {
		return "", false, false
	}
	if strings.ContainsAny(name, "\n\"<>") {
		return "", false, false
	}
	return name, system, true
}
