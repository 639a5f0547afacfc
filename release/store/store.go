package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strings"

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

func (e *DigestMismatchError) Unwrap() error { return ErrDigestMismatch }

func (e *DigestMismatchError) Error() string {
	return fmt.Sprintf("%s %s in %s: the bytes served hash to %s (%d bytes), want %s (%d bytes): they do not match the descriptor",
		e.What, e.Want, e.Location, e.Got, e.GotSize, e.Want, e.WantSize)
}

// CheckDescriptor refuses a descriptor that cannot name bytes to read:
// a digest other than sha256 with 64 lowercase hex digits, a negative
// size, or a size over limit. It runs before anything is read, so an
// absurd descriptor costs nothing.
func CheckDescriptor(d v1.Descriptor, limit int64) error {
	if d.Digest.Algorithm != "sha256" || len(d.Digest.Hex) != 64 || strings.Trim(d.Digest.Hex, "0123456789abcdef") != "" {
		return &DescriptorError{Digest: d.Digest.String(), Size: d.Size, Err: ErrBadDescriptor, Detail: "want a sha256 digest with 64 lowercase hex digits"}
	}
	if d.Size < 0 {
		return &DescriptorError{Digest: d.Digest.String(), Size: d.Size, Err: ErrBadDescriptor, Detail: "a size is never negative"}
	}
	if d.Size > limit {
		return &DescriptorError{Digest: d.Digest.String(), Size: d.Size, Err: ErrTooLarge, Detail: fmt.Sprintf("the limit is %d bytes", limit)}
	}
	return nil
}

// ReadManifest returns the manifest d from s after checking its
// descriptor (at most MaxManifestSize), then its digest and exact size.
func ReadManifest(s Store, d v1.Descriptor) ([]byte, error) {
	if err := CheckDescriptor(d, MaxManifestSize); err != nil {
		return nil, fmt.Errorf("manifest in %s: %w", s.Location(), err)
	}
	raw, err := s.Manifest(d)
	if err != nil {
		return nil, fmt.Errorf("read manifest %s from %s: %w", d.Digest, s.Location(), err)
	}
	sum := sha256.Sum256(raw)
	got := v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(sum[:])}
	if got != d.Digest || int64(len(raw)) != d.Size {
		return nil, &DigestMismatchError{What: "manifest", Location: s.Location(), Want: d.Digest, Got: got, WantSize: d.Size, GotSize: int64(len(raw))}
	}
	return raw, nil
}

// ReadBlob returns blob d from s (at most limit bytes) after checking it:
// nothing is returned, and so nothing parsed, before the digest matched.
func ReadBlob(s Store, d v1.Descriptor, limit int64) ([]byte, error) {
	if err := CheckDescriptor(d, limit); err != nil {
		return nil, fmt.Errorf("blob in %s: %w", s.Location(), err)
	}
	buf := bytes.NewBuffer(make([]byte, 0, d.Size))
	if err := CheckBlob(s, d, buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// CheckBlob streams blob d from s into w (which may be io.Discard) and
// checks its digest and size. A blob that is longer than its descriptor
// says is cut off at Size+1 bytes and reported. What w received is not
// to be trusted unless CheckBlob returns nil: use Fetch or ReadBlob to
// get bytes to parse.
func CheckBlob(s Store, d v1.Descriptor, w io.Writer) error {
	if err := CheckDescriptor(d, MaxBlobSize); err != nil {
		return fmt.Errorf("blob in %s: %w", s.Location(), err)
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

// Fetch copies blob d from s into an unnamed temporary file in dir (""
// for the system's), checking its size and digest on the way, and returns
// the file at its start. Whatever is then decompressed, parsed or
// unpacked is read from bytes that matched their descriptor; the file
// disappears when it is closed.
func Fetch(s Store, d v1.Descriptor, dir string) (*os.File, error) {
	if err := CheckDescriptor(d, MaxBlobSize); err != nil {
		return nil, fmt.Errorf("blob in %s: %w", s.Location(), err)
	}
	f, err := os.CreateTemp(dir, "cacheon-blob-")
	if err != nil {
		return nil, err
	}
	os.Remove(f.Name())
	if err := CheckBlob(s, d, f); err != nil {
		f.Close()
		return nil, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
