package bundle

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// checkRelPath applies the lexical path rules to a declared bundle path:
// relative, POSIX, free of NUL, and still inside the bundle once "." and
// ".." are resolved. Load then checks the file itself.
func checkRelPath(rel string) error {
	switch {
	case rel == "":
		return errors.New("path must be non-empty")
	case strings.ContainsRune(rel, 0):
		return fmt.Errorf("path %q contains a NUL byte", rel)
	case strings.HasPrefix(rel, "/"):
		return fmt.Errorf("path %q must be relative to the bundle root", rel)
	}
	clean := path.Clean(rel)
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return fmt.Errorf("path %q escapes the bundle root", rel)
	}
	if clean == "." {
		return fmt.Errorf("path %q names the bundle root, not a file", rel)
	}
	return nil
}

// CleanPath returns the normalized bundle-relative form of a declared
// path ("./kernels//a.py" → "kernels/a.py"). Declared paths are kept as
// written for identities; comparisons with tree paths use this form.
func CleanPath(rel string) string { return path.Clean(rel) }

// openContained checks that rel names a regular file inside root without
// following any symbolic link on the way: every component is examined
// with Lstat, so a link anywhere (even one pointing back inside the
// bundle) is refused rather than resolved.
func openContained(root, rel string) (fs.FileInfo, error) {
	if err := checkRelPath(rel); err != nil {
		return nil, err
	}
	parts := strings.Split(path.Clean(rel), "/")
	cur := root
	for i, part := range parts {
		cur = filepath.Join(cur, part)
		info, err := os.Lstat(cur)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("%q not found in the bundle", rel)
			}
			return nil, fmt.Errorf("%q: %w", rel, err)
		}
		if info.Mode()&fs.ModeSymlink != 0 {
			return nil, fmt.Errorf("%q: %q is a symbolic link; links are never followed", rel, strings.Join(parts[:i+1], "/"))
		}
		last := i == len(parts)-1
		if !last && !info.IsDir() {
			return nil, fmt.Errorf("%q: %q is not a directory", rel, strings.Join(parts[:i+1], "/"))
		}
		if last && !info.Mode().IsRegular() {
			return nil, fmt.Errorf("%q must be a regular file", rel)
		}
		if last {
			return info, nil
		}
	}
	panic("unreachable")
}

// CheckLogicalPath reports whether rel is a canonical bundle path as
// identities record it: relative POSIX with no empty, "." or ".."
// component, no backslash or NUL, and nothing the content hash skips
// (__pycache__ or .git components, .pyc/.pyo files, "._" names). Parse
// accepts any contained spelling ("./k.py"); a selected payload names
// files only by their canonical path.
func CheckLogicalPath(rel string) error {
	if rel == "" || strings.HasPrefix(rel, "/") {
		return fmt.Errorf("%q is not a non-empty relative path", rel)
	}
	if strings.ContainsAny(rel, "\\\x00") {
		return fmt.Errorf("%q is not canonical POSIX syntax", rel)
	}
	parts := strings.Split(rel, "/")
	for _, p := range parts {
		switch p {
		case "", ".", "..":
			return fmt.Errorf("%q is not a canonical relative path", rel)
		case "__pycache__", ".git":
			return fmt.Errorf("%q uses a reserved ignored directory", rel)
		}
	}
	name := parts[len(parts)-1]
	if strings.HasSuffix(name, ".pyc") || strings.HasSuffix(name, ".pyo") || strings.HasPrefix(name, "._") {
		return fmt.Errorf("%q uses a reserved ignored file name", rel)
	}
	return nil
}
