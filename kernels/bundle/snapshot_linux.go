package bundle

import (
	"io/fs"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// changeTime is the status change time, which moves when a file is
// rewritten within one modification-time tick or its inode is touched.
func changeTime(info fs.FileInfo) int64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return st.Ctim.Nano()
	}
	return 0
}

// hugePage is the transparent huge page size of x86-64 and of arm64 with
// 4 KiB pages. Were the kernel's another, the hint below would only do
// less; the bytes read are the same.
const hugePage = 2 << 20

// readBuffer returns a zeroed slice of length size and capacity size+1
// for a file's bytes. A snapshot keeps every byte it reads, so each
// buffer is memory the process has never touched: read(2) then faults
// it in one 4 KiB page at a time, and on a virtual machine those faults
// cost more than the copy and the SHA-256 together (about 0.8 s of CPU
// for a 260 MiB stack, where the read itself is under 0.1 s). A large
// buffer is therefore placed on huge-page boundaries inside a slightly
// larger allocation, marked for transparent huge pages (MADV_HUGEPAGE:
// 512 times fewer faults, where the kernel allows huge pages in advised
// regions, as its default "madvise" policy does) and populated in one
// call (MADV_POPULATE_WRITE, Linux 5.14 and later). Both are hints on
// memory the Go heap owns: they change neither its contents (still
// zero) nor its ownership, and a kernel that refuses them leaves the
// read to fault as before.
func readBuffer(size int64) []byte {
	if size < hugePage {
		return make([]byte, size, size+1)
	}
	// The extra huge page lets the buffer start on a boundary; its
	// unused head and tail are never touched, so never resident.
	raw := make([]byte, size+1+hugePage)
	off := int((hugePage - uintptr(unsafe.Pointer(unsafe.SliceData(raw)))%hugePage) % hugePage)
	buf := raw[off : off+int(size) : off+int(size)+1]
	// Whole pages of buf only (the kernel would round a partial one up
	// into memory that is not buf's); the last partial page faults as
	// any other memory does.
	advised := buf[:int(size)/os.Getpagesize()*os.Getpagesize()]
	_ = unix.Madvise(advised, unix.MADV_HUGEPAGE)
	_ = unix.Madvise(advised, unix.MADV_POPULATE_WRITE)
	return buf
}
