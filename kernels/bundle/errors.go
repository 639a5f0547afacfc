package bundle

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/cacheon/engine/internal/reject"
)

// ErrInvalid is the root of every rejection of a bundle's manifest or tree.
// It matches reject.ErrRejected, the root every command maps to exit 2.
var ErrInvalid = reject.New("invalid bundle")

// Rejection classes. Each wraps ErrInvalid.
var (
	ErrSyntax   = fmt.Errorf("%w: syntax", ErrInvalid)       // the TOML or JSON text does not parse
	ErrSchema   = fmt.Errorf("%w: schema", ErrInvalid)       // a key is missing, unknown, mistyped or out of range
	ErrPath     = fmt.Errorf("%w: path", ErrInvalid)         // a declared path escapes, is missing, or is not a plain file; a tree name is not canonical UTF-8 or collides with another
	ErrLimit    = fmt.Errorf("%w: intake limit", ErrInvalid) // the tree breaks a size or count limit, or holds a link or special file
	ErrDepPatch = fmt.Errorf("%w: dep patch", ErrInvalid)    // a declared dependency patch is not a strict text diff
	ErrMetadata = fmt.Errorf("%w: metadata", ErrInvalid)     // op metadata JSON or its capability domains are invalid
)

// ErrEntry is the intake-limit class of a tree entry that is not a
// regular file or directory (a symbolic link, FIFO, socket or device),
// the bundle root included: such a tree is refused, never followed.
var ErrEntry = fmt.Errorf("%w: entry", ErrLimit)

// ErrNoManifest is the class of a bundle directory without a manifest.toml
// at its root. It is an ErrPath rejection (intake refuses such a tree) and
// also matches fs.ErrNotExist: there was no manifest to read.
var ErrNoManifest = fmt.Errorf("%w: %w", ErrPath, fs.ErrNotExist)

// IsRejection reports whether err rejects what was read from the bundle
// (its manifest, metadata, rebuild plan, tree names or intake limits)
// rather than a failure to read it: a missing directory, no manifest.toml
// at the root, or an I/O error. Commands exit 2 on a rejection and 1
// otherwise.
func IsRejection(err error) bool {
	return errors.Is(err, ErrInvalid) && !errors.Is(err, fs.ErrNotExist)
}

// Error is one rejection: the file it is about, the key inside that file
// (a TOML key path such as "ops[1].source", a JSON path, or empty when the
// whole file is meant) and the reason.
type Error struct {
	File   string // path relative to the bundle root, e.g. "manifest.toml"
	Key    string // key path inside File; may be empty
	Line   int    // 1-based line when known, else 0
	Reason string
	Class  error // one of the Err* classes
}

func (e *Error) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc = fmt.Sprintf("%s:%d", loc, e.Line)
	}
	if e.Key != "" {
		return fmt.Sprintf("%s: %s: %s", loc, e.Key, e.Reason)
	}
	return fmt.Sprintf("%s: %s", loc, e.Reason)
}

// Unwrap lets errors.Is match the class and ErrInvalid.
func (e *Error) Unwrap() error { return e.Class }

func newError(class error, file, key, format string, args ...any) *Error {
	return &Error{File: file, Key: key, Reason: fmt.Sprintf(format, args...), Class: class}
}
