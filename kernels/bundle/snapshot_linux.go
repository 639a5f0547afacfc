package bundle

import (
	"io/fs"
	"syscall"
)

// changeTime is the status change time, which moves when a file is
// rewritten within one modification-time tick or its inode is touched.
func changeTime(info fs.FileInfo) int64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return st.Ctim.Nano()
	}
	return 0
}
