package materialize

import (
	"crypto/sha256"
	"encoding/hex"
	"path"
	"strings"

	"github.com/cacheon/engine/internal/identity"
)

// NamespacePrefix is the prefix of every contribution namespace; the rest
// is the selected delta digest, so two contributions never share a module
// name and an unrelated contribution keeps its namespace, byte for byte,
// when another target changes.
const NamespacePrefix = "cacheon_c_"

// Namespace returns the Python package a contribution is emitted under.
func Namespace(selectedDeltaDigest identity.Digest) string {
	return NamespacePrefix + selectedDeltaDigest.Hex
}

// emittedName names a file derived from the bundle file rel:
// "<namespace>__<slug>_<first 10 hex of sha256(rel)>". The slug keeps the
// name readable; the hash keeps two files with the same stem apart.
func emittedName(namespace, rel string) string {
	sum := sha256.Sum256([]byte(rel))
	return namespace + "__" + slug(rel) + "_" + hex.EncodeToString(sum[:])[:10]
}

// slug is the file's stem with every character outside [A-Za-z0-9_]
// replaced by an underscore.
func slug(rel string) string {
	base := path.Base(rel)
	if i := strings.LastIndexByte(base, '.'); i > 0 {
		base = base[:i]
	}
	var b strings.Builder
	for _, r := range base {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "file"
	}
	return b.String()
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
