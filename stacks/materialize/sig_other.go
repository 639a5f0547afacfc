//go:build !linux

package materialize

import "io/fs"

func addPlatformSig(*statSig, fs.FileInfo) {}
