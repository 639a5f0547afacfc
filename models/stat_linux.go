package models

import (
	"io/fs"
	"os"
	"syscall"
)

// statOf extracts the signature of a file from its status.
func statOf(info fs.FileInfo) (signature, bool) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return signature{}, false
	}
	return signature{
		dev:   uint64(st.Dev),
		ino:   uint64(st.Ino),
		mode:  uint32(st.Mode),
		nlink: uint64(st.Nlink),
		size:  st.Size,
		mtime: int64(st.Mtim.Sec)*1e9 + int64(st.Mtim.Nsec),
		ctime: int64(st.Ctim.Sec)*1e9 + int64(st.Ctim.Nsec),
	}, true
}

// openFlags open a file for hashing without following a final symbolic
// link and without blocking should the path have become a FIFO.
const openFlags = os.O_RDONLY | syscall.O_NOFOLLOW | syscall.O_NONBLOCK | syscall.O_CLOEXEC
