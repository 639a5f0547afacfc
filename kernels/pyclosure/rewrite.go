package pyclosure

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/cacheon/engine/internal/identity"
	"github.com/cacheon/engine/kernels/pyparse"
)

// NamespacePrefix is the package a contribution's Python files are moved
// under in an engine tree: cacheon_c_<selected delta digest>.
func NamespacePrefix(selectedDeltaDigest string) (string, error) {
	if !identity.IsHex64(selectedDeltaDigest) {
		return "", fmt.Errorf("namespace prefix: %q is not a 64-hex digest", selectedDeltaDigest)
	}
	return "cacheon_c_" + selectedDeltaDigest, nil
}

// Rewrite returns the file's source with its bundle-local imports moved
// under prefix.
func (f *File) Rewrite(prefix string) ([]byte, error) {
	out, err := Rewrite(f.Src, f.Imports, prefix)
	if err != nil {
		return nil, fmt.Errorf("rewrite %s: %w", f.Path, err)
	}
	return out, nil
}

// Rewrite replaces each bundle-local module name in src (at the byte spans
// recorded by the closure) with its name under prefix, touching no other
// byte:
//
//	from kernels.util import f   ->  from P.kernels.util import f
//	import kernels.util as u     ->  import P.kernels.util as u
//	import helpers               ->  import P.helpers as helpers
//	import kernels.util          ->  import P.kernels.util, P.kernels as kernels
//
// The last form keeps binding the top-level name `kernels` to the package,
// as the original statement did (it also binds P itself, which no bundle
// code can name). Relative imports need no change. The result is parsed
// again to make sure it is still Python.
func Rewrite(src []byte, imports []LocalImport, prefix string) ([]byte, error) {
	for _, c := range strings.Split(prefix, ".") {
		if !pyparse.IsIdentifier(c) {
			return nil, fmt.Errorf("namespace prefix %q is not a dotted identifier", prefix)
		}
	}
	edits := append([]LocalImport(nil), imports...)
	sort.Slice(edits, func(i, j int) bool { return edits[i].Start < edits[j].Start })
	var b strings.Builder
	b.Grow(len(src) + len(edits)*(len(prefix)+8))
	prev := 0
	for _, e := range edits {
		if e.Start < prev || e.End < e.Start || e.End > len(src) {
			return nil, fmt.Errorf("import span [%d,%d) overlaps another or lies outside the %d-byte source", e.Start, e.End, len(src))
		}
		if !spanNames(src[e.Start:e.End], e.Module) {
			return nil, fmt.Errorf("import span [%d,%d) holds %q, not module %q", e.Start, e.End, src[e.Start:e.End], e.Module)
		}
		b.Write(src[prev:e.Start])
		switch top := root(e.Module); {
		case e.Bare && top != e.Module:
			fmt.Fprintf(&b, "%s.%s, %s.%s as %s", prefix, e.Module, prefix, top, top)
		case e.Bare:
			// `import helpers` binds helpers; `import P.helpers` would
			// bind P instead.
			fmt.Fprintf(&b, "%s.%s as %s", prefix, e.Module, e.Module)
		default:
			fmt.Fprintf(&b, "%s.%s", prefix, e.Module)
		}
		prev = e.End
	}
	b.Write(src[prev:])
	out := []byte(b.String())
	if _, _, err := pyparse.Parse("rewritten.py", out); err != nil {
		var se *pyparse.SyntaxError
		if errors.As(err, &se) {
			return nil, fmt.Errorf("rewritten source does not parse: %s", se.Msg)
		}
		return nil, err
	}
	return out, nil
}

// spanNames checks that the source bytes spell module: the same names,
// with only spaces, tabs and line continuations around the dots. Non-ASCII
// spellings are NFKC-normalized by the parser and are not compared here.
func spanNames(text []byte, module string) bool {
	var b strings.Builder
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case c == ' ' || c == '\t' || c == '\f' || c == '\\' || c == '\n' || c == '\r':
		case c >= utf8.RuneSelf:
			return true
		default:
			b.WriteByte(c)
		}
	}
	return b.String() == module
}
