//go:build !linux

package bundle

import "io/fs"

// changeTime is not compared off Linux; inode, size, mode and
// modification time still are.
func changeTime(fs.FileInfo) int64 { return 0 }

// readBuffer returns a zeroed slice of length size and capacity size+1
// for a file's bytes; the page hints of the Linux build are not used.
func readBuffer(size int64) []byte { return make([]byte, size, size+1) }
