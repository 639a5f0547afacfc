package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Store is where one release lives.
type Store interface {
	// Location names the store in messages (a directory or reference).
	Location() string
	// Resolve returns the descriptor of the release image.
	Resolve() (v1.Descriptor, error)
	// Manifest returns the raw bytes of the manifest with digest d, as
	// stored; callers check them with ReadManifest.
	Manifest(d v1.Descriptor) ([]byte, error)
	// Blob opens the raw bytes of the blob d, as stored.
	Blob(d v1.Descriptor) (io.ReadCloser, error)
	// Referrers lists candidate descriptors of artifacts attached to
	// subject; Referrers (the function) checks them.
	Referrers(subject v1.Hash) ([]v1.Descriptor, error)
	// Attach stores artifact a with subject, blobs first and the
	// manifest last, and returns the manifest's descriptor.
	Attach(subject v1.Descriptor, a Artifact) (v1.Descriptor, error)
}

// DigestMismatchError reports bytes that do not hash to their descriptor.
type DigestMismatchError struct {
	What     string // "manifest", "blob"
	Location string
	Want     v1.Hash
	Got      v1.Hash
	WantSize int64
	GotSize  int64
}

func (e *DigestMismatchError) Error() string {
	return fmt.Sprintf("%s %s in %s: the bytes served hash to %s (%d bytes), want %s (%d bytes): they do not match the descriptor",
		e.What, e.Want, e.Location, e.Got, e.GotSize, e.Want, e.WantSize)
}

// ReadManifest returns the manifest d from s after checking its digest
// and size.
func ReadManifest(s Store, d v1.Descriptor) ([]byte, error) {
	raw, err := s.Manifest(d)
	if err != nil {
		return nil, fmt.Errorf("read manifest %s from %s: %w", d.Digest, s.Location(), err)
	}
	sum := sha256.Sum256(raw)
	got := v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(sum[:])}
	if got != d.Digest || (d.Size > 0 && int64(len(raw)) != d.Size) {
		return nil, &DigestMismatchError{What: "manifest", Location: s.Location(), Want: d.Digest, Got: got, WantSize: d.Size, GotSize: int64(len(raw))}
	}
	return raw, nil
}

// ReadBlob returns blob d from s (at most limit bytes) after checking it.
func ReadBlob(s Store, d v1.Descriptor, limit int64) ([]byte, error) {
	if d.Size > limit {
		return nil, fmt.Errorf("blob %s in %s: %d bytes exceeds the limit of %d", d.Digest, s.Location(), d.Size, limit)
	}
	var buf bytes.Buffer
	if err := CheckBlob(s, d, &buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// CheckBlob streams blob d from s into w (which may be io.Discard) and
// checks its digest and size. A blob that is longer than its descriptor
// says is cut off at Size+1 bytes and reported.
func CheckBlob(s Store, d v1.Descriptor, w io.Writer) error {
	if d.Digest.Algorithm != "sha256" {
		return fmt.Errorf("blob %s in %s: digest algorithm %q is not supported", d.Digest, s.Location(), d.Digest.Algorithm)
	}
	rc, err := s.Blob(d)
	if err != nil {
		return fmt.Errorf("read blob %s from %s: %w", d.Digest, s.Location(), err)
	}
	defer rc.Close()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(h, w), io.LimitReader(rc, d.Size+1))
	got := v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(h.Sum(nil))}
	if err != nil {
		return fmt.Errorf("read blob %s from %s: %w", d.Digest, s.Location(), err)
	}
	if got != d.Digest || n != d.Size {
		return &DigestMismatchError{What: "blob", Location: s.Location(), Want: d.Digest, Got: got, WantSize: d.Size, GotSize: n}
	}
	return nil
}
