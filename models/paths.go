package models

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// cacheComponent is the path component that hub downloaders use for
// mutable bookkeeping (locks, partial downloads, metadata). It never
// belongs in a sealed tree.
const cacheComponent = ".cache"

// checkRelPath checks a receipt path: a clean, relative POSIX path of
// UTF-8 components, none of them ".", ".." or ".cache".
func checkRelPath(p string) error {
	if p == "" {
		return fmt.Errorf("%w: empty path", ErrInvalidPath)
	}
	if !utf8.ValidString(p) {
		return fmt.Errorf("%w: %q is not valid UTF-8", ErrInvalidPath, p)
	}
	if strings.HasPrefix(p, "/") {
		return fmt.Errorf("%w: %q is absolute", ErrInvalidPath, p)
	}
	for _, c := range strings.Split(p, "/") {
		switch c {
		case "", ".", "..":
			return fmt.Errorf("%w: %q is not a clean relative path", ErrInvalidPath, p)
		case cacheComponent:
			return fmt.Errorf("%w: %q", ErrCachePath, p)
		}
		if strings.IndexByte(c, 0) >= 0 {
			return fmt.Errorf("%w: %q contains a NUL byte", ErrInvalidPath, p)
		}
	}
	return nil
}

// collision is two distinct paths of a tree that name the same entry once
// Unicode-normalized or case-folded, or one path used both as a file and
// as a directory.
type collision struct {
	a, b   string
	err    error // ErrUnicodeCollision or ErrCaseCollision
	reason string
}

// findCollision checks that the files, and every directory above them,
// stay distinct under Unicode canonical caseless matching: NFC
// normalization (macOS file systems store names normalized, so a
// decomposed and a precomposed "é" are one file there) and full case
// folding (as Python's str.casefold), so the tree unpacks to the same
// files on a normalizing or case-insensitive file system. files must be
// sorted.
func findCollision(files []string) *collision {
	fold := cases.Fold()
	caseless := func(p string) string { return norm.NFC.String(fold.String(norm.NFD.String(p))) }
	// seen maps a folded path to the original spelling and whether it is
	// a directory.
	type entry struct {
		path string
		dir  bool
	}
	seen := make(map[string]entry)
	add := func(p string, dir bool) *collision {
		key := caseless(p)
		prev, ok := seen[key]
		if !ok {
			seen[key] = entry{p, dir}
			return nil
		}
		if prev.path != p {
			if norm.NFC.String(prev.path) == norm.NFC.String(p) {
				return &collision{prev.path, p, ErrUnicodeCollision, "paths are equal after Unicode NFC normalization"}
			}
			return &collision{prev.path, p, ErrCaseCollision, "paths collide when case-folded"}
		}
		if prev.dir != dir {
			return &collision{prev.path, p, ErrCaseCollision, "path is both a file and a directory"}
		}
		return nil
	}
	for _, f := range files {
		for i := 0; i < len(f); i++ {
			if f[i] == '/' {
				if c := add(f[:i], true); c != nil {
					return c
				}
			}
		}
		if c := add(f, false); c != nil {
			return c
		}
	}
	return nil
}
