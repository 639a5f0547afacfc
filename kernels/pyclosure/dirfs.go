package pyclosure

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// FromDir computes the closure of opSources over the bundle directory dir,
// reading it through DirFS.
func FromDir(dir string, opSources []string, opts Options) (*Closure, error) {
	return Build(DirFS(dir), opSources, opts)
}

// DirFS is the bundle directory dir as a file system that refuses to pass
// through symbolic links or to open anything but regular files and
// directories, so a link planted in a bundle cannot pull a file from
// outside it into the closure.
func DirFS(dir string) fs.FS { return noLinkFS(dir) }

type noLinkFS string

func (d noLinkFS) check(name, op string) (string, os.FileInfo, error) {
	if !fs.ValidPath(name) {
		return "", nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	cur := string(d)
	var info os.FileInfo
	var err error
	if name == "." {
		info, err = os.Lstat(cur)
	}
	for _, part := range strings.Split(name, "/") {
		if name == "." {
			break
		}
		cur = filepath.Join(cur, part)
		info, err = os.Lstat(cur)
		if err != nil {
			return "", nil, &fs.PathError{Op: op, Path: name, Err: err}
		}
		if info.Mode()&fs.ModeSymlink != 0 {
			return "", nil, &fs.PathError{Op: op, Path: name, Err: fmt.Errorf("passes through a symbolic link")}
		}
	}
	if err != nil {
		return "", nil, &fs.PathError{Op: op, Path: name, Err: err}
	}
	if !info.Mode().IsRegular() && !info.IsDir() {
		return "", nil, &fs.PathError{Op: op, Path: name, Err: fmt.Errorf("not a regular file")}
	}
	return cur, info, nil
}

// Open implements fs.FS.
func (d noLinkFS) Open(name string) (fs.File, error) {
	p, _, err := d.check(name, "open")
	if err != nil {
		return nil, err
	}
	return os.Open(p)
}

// Stat implements fs.StatFS without following links.
func (d noLinkFS) Stat(name string) (fs.FileInfo, error) {
	_, info, err := d.check(name, "stat")
	return info, err
}
