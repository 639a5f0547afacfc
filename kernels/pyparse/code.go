package pyparse

import (
	"crypto/sha256"
	"embed"
	"encoding/binary"
	"io/fs"
)

// code is this package's own source. Results derived from parses and kept
// across processes (see pyclosure.DirCache) are stored under a name
// derived from it, so a build with a different parser never reads what
// another build kept.
//
//go:embed *.go
var code embed.FS

// CodeDigest returns the SHA-256 of this package's Go source files (see
// DigestFS). Two binaries built from the same parser source give the same
// digest; any edit gives another.
func CodeDigest() [32]byte {
	sum, err := DigestFS(code)
	if err != nil {
		panic("pyparse: embedded source unreadable: " + err.Error()) // an embed.FS cannot fail to read
	}
	return sum
}

// DigestFS hashes every regular file of fsys in lexical path order, each
// as its length-prefixed path then its length-prefixed bytes. Packages
// that embed their own source name it with this.
func DigestFS(fsys fs.FS) ([32]byte, error) {
	h := sha256.New()
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		h.Write(binary.BigEndian.AppendUint64(nil, uint64(len(p))))
		h.Write([]byte(p))
		h.Write(binary.BigEndian.AppendUint64(nil, uint64(len(data))))
		h.Write(data)
		return nil
	})
	var sum [32]byte
	copy(sum[:], h.Sum(nil))
	return sum, err
}
