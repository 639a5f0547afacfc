package materialize

import (
	"io/fs"
	"syscall"
)

// addPlatformSig adds the inode identity and change time, which catch a
// file replaced by rename or rewritten within one mtime tick.
func addPlatformSig(s *statSig, info fs.FileInfo) {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		s.ino = st.Ino
		s.dev = st.Dev
		s.ctime = st.Ctim.Nano()
	}
}
