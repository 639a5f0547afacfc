package bundle

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// ErrNotRegular is wrapped when a path that was a regular file when the
// tree was walked is something else (a FIFO, device, socket, directory or
// link) when it is opened.
var ErrNotRegular = errors.New("not a regular file")

// OpenRegular opens path for reading only if it is a regular file, and
// returns the status of the opened descriptor. The open never blocks and
// never follows a final symbolic link: a FIFO or device swapped in after a
// walk would otherwise stall the open (a FIFO waits for a writer) or the
// first read, so the file is opened non-blocking and refused by its fstat
// before a byte is read. Regular files ignore the non-blocking flag.
func OpenRegular(path string) (*os.File, fs.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|openFlags, 0)
	if err != nil {
		return nil, nil, err
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !info.Mode().IsRegular() {
		f.Close()
		return nil, nil, fmt.Errorf("%s: %w (%s)", path, ErrNotRegular, info.Mode().Type())
	}
	return f, info, nil
}

// OpenDir opens path for reading its entries only if it is a directory,
// with the same non-blocking, no-follow open as OpenRegular.
func OpenDir(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|openFlags, 0)
	if err != nil {
		return nil, err
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !info.IsDir() {
		f.Close()
		return nil, fmt.Errorf("%s: not a directory (%s)", path, info.Mode().Type())
	}
	return f, nil
}
