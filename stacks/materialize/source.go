package materialize

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/cacheon/engine/kernels/bundle"
	"github.com/cacheon/engine/kernels/contribution"
)

// ErrUnstableSource is wrapped by every error caused by a source tree
// that changed while it was being read.
var ErrUnstableSource = errors.New("source changed while staging")

// ErrBadSourceEntry is wrapped when a source tree holds a symbolic link or
// a special file: a bundle is regular files and directories only.
var ErrBadSourceEntry = errors.New("source holds an entry that is not a regular file or directory")

// openSource reads the source tree at dir once (bundle.Open: one walk,
// one guarded read per file). Everything later derives from the
// snapshot's bytes, so a source edited during materialization is either
// refused here or has no effect. Links and special files are refused,
// never followed: a stack never materializes from a tree whose meaning
// depends on what a link points at.
func openSource(dir string) (*bundle.Snapshot, error) {
	s, err := bundle.Open(dir)
	if err == nil {
		return s, nil
	}
	switch {
	case errors.Is(err, bundle.ErrUnstable):
		return nil, fmt.Errorf("%s: %w: %v", dir, ErrUnstableSource, err)
	case errors.Is(err, bundle.ErrEntry):
		var be *bundle.Error
		found := "a special file"
		if errors.As(err, &be) {
			p := dir
			if be.File != dir {
				p = filepath.Join(dir, filepath.FromSlash(be.File))
			}
			if info, lerr := os.Lstat(p); lerr == nil {
				found = describeMode(info.Mode())
			}
		}
		return nil, fmt.Errorf("%s: %w (found %s): %v", dir, ErrBadSourceEntry, found, err)
	}
	return nil, err
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

// reusable reports whether an inspection stack assembly took can stand in
// for reading the source again: it holds the snapshot its identities were
// derived from and the Python closure its payload selected.
func reusable(in *contribution.Inspection) bool {
	return in != nil && in.Bundle != nil && in.Bundle.Snapshot != nil &&
		in.SelectedPayload != nil && in.SelectedPayload.Closure != nil
}
