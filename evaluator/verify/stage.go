package verify

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/cacheon/engine/kernels/bundle"
)

// stageBundle copies the files of the bundle at src that its content hash
// covers into dst (which must not exist), read-only, and returns the
// staged copy's content hash. Workers import only this copy, and the scan
// reads it: what is scanned, hashed and executed are the same bytes.
// Everything the hash leaves out stays behind: symbolic links, special
// files, __pycache__ directories and .pyc files, which Python would
// otherwise load in place of the scanned source (an unchecked-hash .pyc is
// never compared with its .py).
func stageBundle(src, dst string) (string, error) {
	files, err := bundle.Files(src)
	if err != nil {
		return "", fmt.Errorf("staging the bundle: %w", err)
	}
	if err := os.Mkdir(dst, 0o755); err != nil {
		return "", fmt.Errorf("staging the bundle: %w", err)
	}
	dirs := map[string]bool{dst: true}
	for _, f := range files {
		target := filepath.Join(dst, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return "", fmt.Errorf("staging the bundle: %w", err)
		}
		for d := filepath.Dir(target); d != dst && !dirs[d]; d = filepath.Dir(d) {
			dirs[d] = true
		}
		if err := stageFile(filepath.Join(src, filepath.FromSlash(f.Path)), target, f.Size); err != nil {
			return "", err
		}
	}
	// Directories become read-only last, deepest first.
	order := make([]string, 0, len(dirs))
	for d := range dirs {
		order = append(order, d)
	}
	sort.Slice(order, func(i, j int) bool { return len(order[i]) > len(order[j]) })
	for _, d := range order {
		if err := os.Chmod(d, 0o555); err != nil {
			return "", fmt.Errorf("staging the bundle: %w", err)
		}
	}
	hash, err := bundle.ContentHash(dst)
	if err != nil {
		return "", fmt.Errorf("staging the bundle: %w", err)
	}
	return hash, nil
}

// stageFile copies exactly size bytes of the regular file src, refusing a
// file that became a link, a FIFO or another size since it was listed.
func stageFile(src, dst string, size int64) error {
	in, fi, err := bundle.OpenRegular(src)
	if err != nil {
		return fmt.Errorf("staging %s: changed while staged: %w", src, err)
	}
	defer in.Close()
	if fi.Size() != size {
		return fmt.Errorf("staging %s: changed while staged (now %d bytes, listed %d)", src, fi.Size(), size)
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("staging %s: %w", src, err)
	}
	n, err := io.Copy(out, io.LimitReader(in, size+1))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil && n != size {
		err = fmt.Errorf("changed while staged (%d bytes, listed %d)", n, size)
	}
	if err == nil {
		err = os.Chmod(dst, fs.FileMode(0o444))
	}
	if err != nil {
		return fmt.Errorf("staging %s: %w", src, err)
	}
	return nil
}
