package layer

import (
	"errors"
	"fmt"
)

// rejection marks errors that reject a layer as given (an entry no release
// layer may hold, a stream that expands past its limit), as opposed to
// failures to read it; callers tell them apart with IsRejection.
type rejection struct{ msg string }

func (r *rejection) Error() string { return r.msg }

// IsRejection reports whether err rejects the layer's contents rather
// than reporting an I/O failure.
func IsRejection(err error) bool {
	var r *rejection
	return errors.As(err, &r)
}

// Reasons a layer is rejected when it is read back. Every error this
// package returns for hostile layer contents wraps one of them.
var (
	// ErrNotRegular is an entry that is not a regular file or a
	// directory: a symbolic or hard link, a device, a FIFO, ...
	ErrNotRegular error = &rejection{"not a regular file or directory"}
	// ErrUnsafePath is an entry name that is absolute, climbs with "..",
	// is not clean, or holds NUL or a backslash.
	ErrUnsafePath error = &rejection{"unsafe entry path"}
	// ErrDuplicateEntry is a path the tar lists twice.
	ErrDuplicateEntry error = &rejection{"entry listed twice"}
	// ErrTooLarge is a compressed stream that expands past the limits
	// (MaxUncompressedSize, MaxExpansionRatio).
	ErrTooLarge error = &rejection{"layer expands past its limit"}
	// ErrCompression is a compressed stream that is not valid.
	ErrCompression error = &rejection{"invalid compressed stream"}
	// ErrMalformed is a tar stream that is not valid.
	ErrMalformed error = &rejection{"malformed tar stream"}
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
