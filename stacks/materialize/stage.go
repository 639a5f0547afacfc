package materialize

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"unicode/utf8"

	"github.com/cacheon/engine/kernels/bundle"
)

// ErrUnstableSource is wrapped by every staging error caused by a source
// tree that changed while it was being read.
var ErrUnstableSource = errors.New("source changed while staging")

// ErrBadSourceEntry is wrapped when a source tree holds a symbolic link or
// a special file: a bundle is regular files and directories only.
var ErrBadSourceEntry = errors.New("source holds an entry that is not a regular file or directory")

// statSig is what must not change about a file between the reads of one
// staging pass.
type statSig struct {
	mode  fs.FileMode
	size  int64
	mtime int64
	ctime int64
	ino   uint64
	dev   uint64
}

func sigOf(info fs.FileInfo) statSig {
	s := statSig{mode: info.Mode(), size: info.Size(), mtime: info.ModTime().UnixNano()}
	addPlatformSig(&s, info)
	return s
}

type snapEntry struct {
	rel string
	sig statSig
}

// snapshot lists every regular file below root that a bundle identity
// covers, with its stat signature, in pathlib order. Symbolic links and
// special files are rejected (not skipped, as the content hash does): a
// stack never materializes from a tree whose meaning depends on what a
// link points at.
func snapshot(root string) ([]snapEntry, error) {
	info, err := os.Lstat(root)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("%s: %w: the bundle root must be a directory, found %s", root, ErrBadSourceEntry, describeMode(info.Mode()))
	}
	var entries []snapEntry
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == root {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if bundle.Skipped(rel) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !utf8.ValidString(rel) {
			return fmt.Errorf("%s: path is not valid UTF-8", p)
		}
		switch {
		case d.IsDir():
			return nil
		case !d.Type().IsRegular():
			return fmt.Errorf("%s: %w (found %s)", p, ErrBadSourceEntry, describeMode(d.Type()))
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		entries = append(entries, snapEntry{rel: rel, sig: sigOf(info)})
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(entries, func(i, j int) bool { return bundle.PathLess(entries[i].rel, entries[j].rel) })
	return entries, nil
}

func describeMode(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m.IsDir():
		return "a directory"
	}
	return "a special file"
}

// staged is a private, stable copy of a source tree.
type staged struct {
	dir   string            // the copy; only this process writes it
	files map[string]string // relative path -> sha256 of the staged bytes
}

// stage copies the source tree at src into a new directory below tmp. Each
// file is read twice; both reads, and the stat signatures before, between
// and after them, must agree, and the tree's snapshot must be the same
// before and after the copy. Everything later reads the copy, so a source
// edited during materialization is either rejected or has no effect.
func stage(src, tmp string) (*staged, error) {
	before, err := snapshot(src)
	if err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", src, err)
	}
	dir, err := os.MkdirTemp(tmp, "stage-")
	if err != nil {
		return nil, err
	}
	s := &staged{dir: dir, files: make(map[string]string, len(before))}
	buf := make([]byte, 1<<20)
	for _, e := range before {
		sum, err := stageFile(filepath.Join(src, filepath.FromSlash(e.rel)), filepath.Join(dir, filepath.FromSlash(e.rel)), e.sig, buf)
		if err != nil {
			return nil, err
		}
		s.files[e.rel] = sum
	}
	after, err := snapshot(src)
	if err != nil {
		return nil, fmt.Errorf("snapshot %s again: %w", src, err)
	}
	if err := sameSnapshot(before, after); err != nil {
		return nil, fmt.Errorf("%s: %w: %v", src, ErrUnstableSource, err)
	}
	return s, nil
}

func sameSnapshot(a, b []snapEntry) error {
	if len(a) != len(b) {
		return fmt.Errorf("the tree had %d files and now has %d", len(a), len(b))
	}
	for i := range a {
		if a[i].rel != b[i].rel {
			return fmt.Errorf("file list changed at %s / %s", a[i].rel, b[i].rel)
		}
		if a[i].sig != b[i].sig {
			return fmt.Errorf("%s changed (size, mode, time or inode)", a[i].rel)
		}
	}
	return nil
}

// stageFile copies one file with two reads that must agree and returns
// the SHA-256 of the staged bytes.
func stageFile(src, dst string, want statSig, buf []byte) (string, error) {
	in, err := os.Open(src)
	if err != nil {
		return "", err
	}
	defer in.Close()
	if err := checkSig(in, src, want); err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return "", err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", err
	}
	defer out.Close()
	first := sha256.New()
	n, err := io.CopyBuffer(io.MultiWriter(out, first), in, buf)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", src, err)
	}
	if n != want.size {
		return "", fmt.Errorf("%s: %w: read %d bytes, snapshot said %d", src, ErrUnstableSource, n, want.size)
	}
	if err := checkSig(in, src, want); err != nil {
		return "", err
	}
	if _, err := in.Seek(0, io.SeekStart); err != nil {
		return "", err
	}
	second := sha256.New()
	if _, err := io.CopyBuffer(second, in, buf); err != nil {
		return "", fmt.Errorf("read %s again: %w", src, err)
	}
	if err := checkSig(in, src, want); err != nil {
		return "", err
	}
	a, b := first.Sum(nil), second.Sum(nil)
	if !bytes.Equal(a, b) {
		return "", fmt.Errorf("%s: %w: two reads returned different bytes", src, ErrUnstableSource)
	}
	if err := out.Close(); err != nil {
		return "", err
	}
	return hex.EncodeToString(a), nil
}

func checkSig(f *os.File, name string, want statSig) error {
	info, err := f.Stat()
	if err != nil {
		return err
	}
	if !info.Mode().IsRegular() {
		return fmt.Errorf("%s: %w (found %s)", name, ErrBadSourceEntry, describeMode(info.Mode()))
	}
	if got := sigOf(info); got != want {
		return fmt.Errorf("%s: %w: size, mode, time or inode changed", name, ErrUnstableSource)
	}
	return nil
}
