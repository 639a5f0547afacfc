package verify

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"sort"

	"github.com/cacheon/engine/release/sbom"
)

// hasher computes the SHA-1 (for SPDX) and SHA-256 of a stream at once.
type hasher struct{ h1, h256 hash.Hash }

func newHasher() *hasher { return &hasher{h1: sha1.New(), h256: sha256.New()} }

func (h *hasher) Write(p []byte) (int, error) {
	h.h1.Write(p)
	return h.h256.Write(p)
}

func (h *hasher) sha1() string   { return hex.EncodeToString(h.h1.Sum(nil)) }
func (h *hasher) sha256() string { return hex.EncodeToString(h.h256.Sum(nil)) }

func sortFiles(fs []sbom.File) {
	sort.Slice(fs, func(i, j int) bool { return fs[i].Path < fs[j].Path })
}
