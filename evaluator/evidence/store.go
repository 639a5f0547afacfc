// Package evidence is the content-addressed store a qualification writes
// its evidence into: reports, raw reads, device samples, screen receipts.
//
// An artifact's address is the SHA-256 of its bytes. Files are sharded by
// the first two hex digits, published atomically (temporary file, fsync,
// rename that never replaces) and left read-only with a single link, so a
// published artifact cannot change under a reader. Writing the same bytes
// twice is accepted; anything else found at an address — a file whose
// bytes do not hash to it, a link, a second hard link — is a conflict and
// fails, because it means the store was tampered with.
package evidence

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/cacheon/engine/internal/atomicwrite"
	"github.com/cacheon/engine/internal/identity"
)

// Size limits of one artifact: a store refuses anything over its cap,
// which may be raised up to HardLimit.
const (
	DefaultLimit int64 = 64 << 20
	HardLimit    int64 = 1 << 30
)

// Ref names a stored artifact: what it is (domain, media type, schema),
// and its bytes (digest and size).
type Ref struct {
	Domain    string `json:"domain"`
	SHA256    string `json:"sha256"`
	Size      int64  `json:"size"`
	MediaType string `json:"media_type"`
	Schema    string `json:"schema"`
}

// Errors a store returns; every one is wrapped with the artifact's path.
var (
	ErrConflict = errors.New("conflicting evidence at an existing address")
	ErrMissing  = errors.New("evidence artifact not found")
	ErrTooLarge = errors.New("evidence artifact over the size limit")
	ErrCorrupt  = errors.New("stored evidence does not match its reference")
)

// Store is an evidence store rooted at one owner-only directory.
type Store struct {
	root  string
	limit int64
}

// Open opens (creating when missing) the store at root, which must be an
// absolute path to a directory only its owner can write.
func Open(root string, limit int64) (*Store, error) {
	if !filepath.IsAbs(root) {
		return nil, fmt.Errorf("evidence store %s: the root must be an absolute path", root)
	}
	if limit <= 0 {
		limit = DefaultLimit
	}
	if limit > HardLimit {
		return nil, fmt.Errorf("evidence store %s: size limit %d is over the hard limit %d", root, limit, HardLimit)
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, fmt.Errorf("evidence store %s: %w", root, err)
	}
	info, err := os.Lstat(root)
	if err != nil {
		return nil, fmt.Errorf("evidence store %s: %w", root, err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("evidence store %s: not a directory", root)
	}
	if info.Mode().Perm()&0o022 != 0 {
		return nil, fmt.Errorf("evidence store %s: mode %v lets others write into it", root, info.Mode().Perm())
	}
	if st, ok := info.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return nil, fmt.Errorf("evidence store %s: owned by uid %d, not by this process's uid %d", root, st.Uid, os.Geteuid())
	}
	return &Store{root: root, limit: limit}, nil
}

// Root is the store's directory.
func (s *Store) Root() string { return s.root }

// Path is where the artifact with this digest lives.
func (s *Store) Path(sha string) string {
	return filepath.Join(s.root, "sha256", sha[:2], sha[2:])
}

// Put stores data and returns its reference.
func (s *Store) Put(domain, mediaType, schema string, data []byte) (Ref, error) {
	if err := identity.ValidateDomain(domain); err != nil {
		return Ref{}, fmt.Errorf("evidence: %w", err)
	}
	if int64(len(data)) > s.limit {
		return Ref{}, fmt.Errorf("evidence %s: %d bytes: %w (%d)", domain, len(data), ErrTooLarge, s.limit)
	}
	sum := sha256.Sum256(data)
	ref := Ref{Domain: domain, SHA256: hex.EncodeToString(sum[:]), Size: int64(len(data)), MediaType: mediaType, Schema: schema}
	path := s.Path(ref.SHA256)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return Ref{}, fmt.Errorf("evidence %s: %w", path, err)
	}
	err := atomicwrite.CreateFile(path, data, 0o444)
	if errors.Is(err, fs.ErrExist) {
		// The same bytes twice is fine; anything else at the address is not.
		if verr := s.check(path, ref); verr != nil {
			return Ref{}, fmt.Errorf("evidence %s: %w: %v", path, ErrConflict, verr)
		}
		return ref, nil
	}
	if err != nil {
		return Ref{}, fmt.Errorf("evidence %s: %w", path, err)
	}
	return ref, nil
}

// Get returns the bytes ref names, after checking that they are a single
// read-only regular file of the right size and digest.
func (s *Store) Get(ref Ref) ([]byte, error) {
	if !identity.IsHex64(ref.SHA256) {
		return nil, fmt.Errorf("evidence: reference digest %q is not 64 lowercase hex", ref.SHA256)
	}
	path := s.Path(ref.SHA256)
	data, err := s.read(path, ref)
	if err != nil {
		return nil, fmt.Errorf("evidence %s: %w", path, err)
	}
	return data, nil
}

func (s *Store) check(path string, ref Ref) error {
	_, err := s.read(path, ref)
	return err
}

func (s *Store) read(path string, ref Ref) ([]byte, error) {
	if ref.Size < 0 || ref.Size > s.limit {
		return nil, fmt.Errorf("%w: reference size %d (limit %d)", ErrTooLarge, ref.Size, s.limit)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrMissing
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: not a regular file (%v)", ErrCorrupt, info.Mode().Type())
	}
	if st, ok := info.Sys().(*syscall.Stat_t); ok && st.Nlink != 1 {
		return nil, fmt.Errorf("%w: %d hard links", ErrCorrupt, st.Nlink)
	}
	if info.Mode().Perm()&0o222 != 0 {
		return nil, fmt.Errorf("%w: writable (mode %v)", ErrCorrupt, info.Mode().Perm())
	}
	if info.Size() != ref.Size {
		return nil, fmt.Errorf("%w: %d bytes, reference says %d", ErrCorrupt, info.Size(), ref.Size)
	}
	data, err := io.ReadAll(io.LimitReader(f, ref.Size+1))
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(data)
	if int64(len(data)) != ref.Size || hex.EncodeToString(sum[:]) != ref.SHA256 {
		return nil, fmt.Errorf("%w: the bytes hash to %x", ErrCorrupt, sum)
	}
	return data, nil
}
