package atomicwrite

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

func accessTime(info fs.FileInfo) (time.Time, bool) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return time.Time{}, false
	}
	return time.Unix(st.Atim.Sec, st.Atim.Nsec), true
}

// renameNoReplace renames a directory without ever replacing an existing
// destination (a plain rename(2) silently replaces an empty directory).
func renameNoReplace(from, to string) error {
	err := unix.Renameat2(unix.AT_FDCWD, from, unix.AT_FDCWD, to, unix.RENAME_NOREPLACE)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.EEXIST) || errors.Is(err, unix.ENOTEMPTY):
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: fs.ErrExist}
	case errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS):
		// The filesystem does not support the flag: check, then rename.
		return renameChecked(from, to)
	}
	return &os.LinkError{Op: "rename", Old: from, New: to, Err: err}
}

// fileID identifies a file's contents without reading them: a write
// moves the change time (which no caller can set back), a replacement
// changes the inode. known is false where the platform gives none.
type fileID struct {
	known         bool
	dev, ino      uint64
	size          int64
	ctime, ctimeN int64
}

func identity(info fs.FileInfo) fileID {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}
	}
	return fileID{known: true, dev: st.Dev, ino: st.Ino, size: st.Size, ctime: st.Ctim.Sec, ctimeN: st.Ctim.Nsec}
}

// deferSync: WriteTree starts each file's writeback as soon as the file
// is written and syncs the files once all are written (see writeAll).
const deferSync = true

// startWriteback asks the kernel to start writing f's dirty pages to the
// disk, without waiting for it. It promises nothing about durability: the
// file is still synced (fsync) before the tree is published, and that
// sync reports any error.
func startWriteback(f *os.File) {
	_ = unix.SyncFileRange(int(f.Fd()), 0, 0, unix.SYNC_FILE_RANGE_WRITE)
}

// openNoFollow opens path for reading, refusing a symbolic link.
func openNoFollow(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
}
