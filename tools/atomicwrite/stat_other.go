//go:build !linux

package atomicwrite

import (
	"io/fs"
	"time"
)

func accessTime(fs.FileInfo) (time.Time, bool) { return time.Time{}, false }

func renameNoReplace(from, to string) error { return renameChecked(from, to) }
