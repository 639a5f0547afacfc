package verify

import (
	"fmt"
	"os"

	"github.com/cacheon/engine/internal/identity"
	"github.com/cacheon/engine/kernels/bundle"
)

// stageBundle copies the files of the bundle at src that its content hash
// covers into dst (which must not exist), read-only, and returns their
// content hash, with the snapshot it wrote them from. Workers import only
// this copy, the scan reads it and intake's payload check reads the
// snapshot: what is checked, hashed and executed are the same bytes. The
// files are read once (bundle.OpenHashed, whose guarded read refuses a
// file swapped, grown or rewritten while read) and the hash is of those
// bytes, the ones written. Everything the hash leaves out stays behind: symbolic links,
// special files, __pycache__ directories and .pyc files, which Python
// would otherwise load in place of the scanned source (an unchecked-hash
// .pyc is never compared with its .py).
func stageBundle(src, dst string) (*bundle.Snapshot, identity.Digest, error) {
	snap, err := bundle.OpenHashed(src)
	if err != nil {
		return nil, identity.Digest{}, fmt.Errorf("staging the bundle: %w", err)
	}
	hash, err := snap.ContentHash(false)
	if err != nil {
		return nil, identity.Digest{}, fmt.Errorf("staging the bundle: %w", err)
	}
	if err := os.Mkdir(dst, 0o700); err != nil {
		return nil, identity.Digest{}, fmt.Errorf("staging the bundle: %w", err)
	}
	if err := snap.WriteTo(dst, bundle.ReadOnly); err != nil {
		return nil, identity.Digest{}, fmt.Errorf("staging the bundle: %w", err)
	}
	return snap, hash, nil
}
