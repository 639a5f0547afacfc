package manifest

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
