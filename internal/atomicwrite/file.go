package atomicwrite

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// WriteFile writes data to path atomically: the bytes go to a temporary
// file beside path, are synced, given mode perm (exactly, whatever the
// umask) and renamed over path; the directory is then synced. A reader sees
// the old file or the new one, never a mixture, and a failure leaves no
// temporary file behind.
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	return WriteFileWith(path, data, perm)
}

// WriteFileWith is WriteFile with options; of them only Steps applies.
func WriteFileWith(path string, data []byte, perm fs.FileMode, opts ...Option) error {
	return publishFile(path, data, perm, opts, func(tmp string) error {
		if info, err := os.Lstat(path); err == nil && info.IsDir() {
			return fmt.Errorf("write %s: %w", path, errors.New("a directory exists at that path"))
		}
		if err := os.Rename(tmp, path); err != nil {
			return fmt.Errorf("rename %s to %s: %w", tmp, path, err)
		}
		return nil
	})
}

// CreateFile writes data to a new file at path, atomically as WriteFile
// does, but never replaces: when anything exists at path it fails with an
// error that wraps fs.ErrExist and leaves the existing file untouched.
func CreateFile(path string, data []byte, perm fs.FileMode) error {
	return publishFile(path, data, perm, nil, func(tmp string) error {
		if err := renameNoReplace(tmp, path); err != nil {
			return fmt.Errorf("publish %s: %w", path, err)
		}
		return nil
	})
}

// publishFile writes data to a synced temporary file beside path with
// mode perm, lets publish move it into place, and syncs the directory.
// On any failure the temporary file is removed.
func publishFile(path string, data []byte, perm fs.FileMode, opts []Option, publish func(tmp string) error) (err error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	step := func(s string) {
		if o.step != nil {
			o.step(s)
		}
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := createScratchFile(filepath.Join(dir, base))
	if err != nil {
		return fmt.Errorf("create temporary file for %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", tmp.Name(), err)
	}
	if err := tmp.Chmod(perm); err != nil {
		return fmt.Errorf("chmod %s: %w", tmp.Name(), err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp.Name(), err)
	}
	step(StepTempWritten)
	if err := publish(tmp.Name()); err != nil {
		return err
	}
	step(StepRenamed)
	if err := syncDir(dir); err != nil {
		return err
	}
	step(StepDirSynced)
	return nil
}

// The steps of WriteFile, in order, that Steps reports.
const (
	// StepTempWritten: the temporary file is written, synced and closed;
	// nothing at the destination has changed.
	StepTempWritten = "temp-written"
	// StepRenamed: the new file is in place; its directory is not synced.
	StepRenamed = "renamed"
	// StepDirSynced: the directory is synced; the write is done.
	StepDirSynced = "dir-synced"
)

// FileSteps lists WriteFile's steps in the order they happen.
var FileSteps = []string{StepTempWritten, StepRenamed, StepDirSynced}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open directory %s for sync: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}

// renameChecked is the fallback where the kernel cannot refuse to replace:
// it checks that nothing exists at to, then renames.
func renameChecked(from, to string) error {
	if _, err := os.Lstat(to); err == nil {
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: fs.ErrExist}
	}
	return os.Rename(from, to)
}
