package verify

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/cacheon/engine/kernels/bundle"
	"github.com/cacheon/engine/tools/identity"
)

// stageBundle copies the files of the bundle at src that its content hash
// covers into dst (which must not exist), read-only, and returns their
// content hash. Workers import only this copy, and the scan reads it: what
// is scanned, hashed and executed are the same bytes. The files are read
// once (bundle.OpenHashed, whose guarded read refuses a file swapped,
// grown or rewritten while read) and the hash is of those bytes, the ones
// written. Everything the hash leaves out stays behind: symbolic links,
// special files, __pycache__ directories and .pyc files, which Python
// would otherwise load in place of the scanned source (an unchecked-hash
// .pyc is never compared with its .py).
func stageBundle(src, dst string) (identity.Digest, error) {
	snap, err := bundle.OpenHashed(src)
	if err != nil {
		return identity.Digest{}, fmt.Errorf("staging the bundle: %w", err)
	}
	hash, err := snap.ContentHash(false)
	if err != nil {
		return identity.Digest{}, fmt.Errorf("staging the bundle: %w", err)
	}
	if err := os.Mkdir(dst, 0o700); err != nil {
		return identity.Digest{}, fmt.Errorf("staging the bundle: %w", err)
	}
	if err := snap.WriteTo(dst); err != nil {
		return identity.Digest{}, fmt.Errorf("staging the bundle: %w", err)
	}
	if err := readOnly(dst); err != nil {
		return identity.Digest{}, fmt.Errorf("staging the bundle: %w", err)
	}
	return hash, nil
}

// readOnly makes the staged tree readable by everyone and writable by no
// one: files 0444, then directories 0555, deepest first.
func readOnly(root string) error {
	var dirs []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir():
			dirs = append(dirs, p)
			return nil
		}
		return os.Chmod(p, 0o444)
	})
	if err != nil {
		return err
	}
	sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
	for _, d := range dirs {
		if err := os.Chmod(d, 0o555); err != nil {
			return err
		}
	}
	return nil
}
