package store

import (
	"fmt"

	"github.com/cacheon/engine/internal/reject"
)

// IsRejection reports whether err rejects the store's contents rather
// than reporting an I/O failure.
func IsRejection(err error) bool { return reject.Is(err) }

// Reasons a store's contents are rejected. Every error this package
// returns for hostile contents wraps one of them.
var (
	// ErrDigestMismatch is wrapped by DigestMismatchError.
	ErrDigestMismatch error = reject.New("digest mismatch")
	// ErrBadDescriptor is a descriptor whose digest is not sha256 with
	// 64 hex digits, or whose size is negative or over its limit.
	ErrBadDescriptor error = reject.New("invalid descriptor")
	// ErrNotRegular is a file of an OCI layout (index.json, oci-layout,
	// a blob) that is not a regular file: a FIFO, a device, a directory.
	ErrNotRegular error = reject.New("not a regular file")
	// ErrTooLarge is a file larger than its limit.
	ErrTooLarge error = reject.New("too large")
	// ErrTooManyEntries is an index or referrers list longer than
	// MaxIndexEntries.
	ErrTooManyEntries error = reject.New("too many entries")
	// ErrMalformed is an index.json or oci-layout that does not parse.
	ErrMalformed error = reject.New("malformed")
	// ErrMissing is a manifest or blob that a descriptor names and the
	// store does not hold (a layout without the file, a registry
	// answering 404). The descriptor came from the store, so its absence
	// is a fault of the store's contents, not of the reader's machine.
	ErrMissing error = reject.New("missing")
)

// MissingError is a manifest or blob named by a descriptor that the
// store does not hold. It deliberately does not wrap the backend's
// error (an fs.ErrNotExist would make a missing blob read as a missing
// input file, exit 1): it wraps ErrMissing only.
type MissingError struct {
	What     string // "manifest", "blob"
	Digest   string
	Location string
	Detail   string
}

func (e *MissingError) Error() string {
	msg := fmt.Sprintf("%s %s is missing from %s", e.What, e.Digest, e.Location)
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}

func (e *MissingError) Unwrap() error { return ErrMissing }

// Limits on what a store may make a reader read. Each is checked before
// the bytes are read (on the descriptor, or on the file's size).
const (
	// MaxManifestSize is the distribution spec's recommended manifest
	// limit.
	MaxManifestSize = 4 << 20
	// MaxIndexSize bounds index.json, read before any signature check.
	MaxIndexSize = 4 << 20
	// MaxIndexEntries bounds the manifests an index.json (or a referrers
	// list) may name; a release has its image, its base and a handful of
	// attachments.
	MaxIndexEntries = 1000
	// MaxBlobSize bounds any blob's descriptor (a base image's largest
	// layer is a few GiB).
	MaxBlobSize int64 = 64 << 30
	// MaxArtifactSize bounds what is read into memory for one attachment.
	MaxArtifactSize = 64 << 20
	// maxLayoutMarker bounds the oci-layout file.
	maxLayoutMarker = 4 << 10
)

// DescriptorError rejects a descriptor before anything it names is read.
type DescriptorError struct {
	Digest string
	Size   int64
	Err    error // ErrBadDescriptor or ErrTooLarge
	Detail string
}

func (e *DescriptorError) Error() string {
	return fmt.Sprintf("descriptor %s (%d bytes): %v: %s", e.Digest, e.Size, e.Err, e.Detail)
}

func (e *DescriptorError) Unwrap() error { return e.Err }

// FileError rejects one file of an OCI layout.
type FileError struct {
	Path   string
	Err    error // ErrNotRegular, ErrTooLarge or ErrMalformed
	Detail string
}

func (e *FileError) Error() string {
	msg := e.Path + ": " + e.Err.Error()
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}

func (e *FileError) Unwrap() error { return e.Err }
