package layer

import (
	"fmt"

	"github.com/cacheon/engine/internal/reject"
)

// IsRejection reports whether err rejects the layer's contents rather
// than reporting an I/O failure.
func IsRejection(err error) bool { return reject.Is(err) }

// Reasons a layer is rejected when it is read back. Every error this
// package returns for hostile layer contents wraps one of them.
var (
	// ErrNotRegular is an entry that is not a regular file or a
	// directory: a symbolic or hard link, a device, a FIFO, ...
	ErrNotRegular error = reject.New("not a regular file or directory")
	// ErrUnsafePath is an entry name that is absolute, climbs with "..",
	// is not clean, or holds NUL or a backslash.
	ErrUnsafePath error = reject.New("unsafe entry path")
	// ErrDuplicateEntry is a path the tar lists twice.
	ErrDuplicateEntry error = reject.New("entry listed twice")
	// ErrTooLarge is a compressed stream that expands past the limits
	// (MaxUncompressedSize, MaxExpansionRatio).
	ErrTooLarge error = reject.New("layer expands past its limit")
	// ErrCompression is a compressed stream that is not valid.
	ErrCompression error = reject.New("invalid compressed stream")
	// ErrMalformed is a tar stream that is not valid.
	ErrMalformed error = reject.New("malformed tar stream")
)

// EntryError rejects one entry of a layer tar.
type EntryError struct {
	Name   string // the entry's name as the tar header gives it
	Err    error  // one of the Err* reasons
	Detail string
}

func (e *EntryError) Error() string {
	msg := fmt.Sprintf("layer entry %q: %v", e.Name, e.Err)
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}

func (e *EntryError) Unwrap() error { return e.Err }
