//go:build !linux

package atomicwrite

import (
	"io/fs"
	"os"
	"time"
)

func accessTime(fs.FileInfo) (time.Time, bool) { return time.Time{}, false }

func renameNoReplace(from, to string) error { return renameChecked(from, to) }

// fileID is unknown off Linux: verifyUnchanged then rereads every byte.
type fileID struct{ known bool }

func identity(fs.FileInfo) fileID { return fileID{} }

// deferSync is false off Linux: WriteTree syncs each file as soon as it
// is written (see writeAll), so nothing below is called.
const deferSync = false

func startWriteback(*os.File) {}

func openNoFollow(path string) (*os.File, error) { return os.Open(path) }
