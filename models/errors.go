package models

import (
	"fmt"
	"path/filepath"

	"github.com/cacheon/engine/internal/reject"
)

// IsRejection reports whether err rejects the input (a tree, receipt or
// destination that breaks a rule) rather than reporting an I/O failure.
func IsRejection(err error) bool { return reject.Is(err) }

// Reasons a tree, receipt or destination is rejected. Every error this
// package returns for bad input wraps one of them.
var (
	ErrNotDirectory      error = reject.New("not a directory")
	ErrSymlink           error = reject.New("symbolic link")
	ErrHardlink          error = reject.New("hard link")
	ErrSpecialFile       error = reject.New("special file")
	ErrCachePath         error = reject.New(".cache path component")
	ErrInvalidPath       error = reject.New("invalid path")
	ErrCaseCollision     error = reject.New("paths collide when case-folded")
	ErrUnicodeCollision  error = reject.New("paths collide when Unicode-normalized (NFC)")
	ErrMutated           error = reject.New("changed while provisioning")
	ErrNoFiles           error = reject.New("model tree has no files")
	ErrDigestMismatch    error = reject.New("content digest mismatch")
	ErrInvalidReceipt    error = reject.New("invalid model provision receipt")
	ErrReceiptInsideRoot error = reject.New("receipt destination is inside the model root")
	ErrReceiptExists     error = reject.New("a different file exists at the receipt destination")
	ErrTreeMismatch      error = reject.New("model tree does not match its receipt")
)

// TreeError rejects one entry of a model tree.
type TreeError struct {
	Root   string // the model root as given
	Path   string // the entry, relative to Root, "." for the root itself
	Err    error  // one of the Err* reasons
	Detail string // what was found and what to do, in words
}

func (e *TreeError) Error() string {
	msg := filepath.Join(e.Root, filepath.FromSlash(e.Path)) + ": " + e.Err.Error()
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}

func (e *TreeError) Unwrap() error { return e.Err }

// DigestMismatchError is a computed content digest that differs from the
// one required.
type DigestMismatchError struct {
	Root string
	Want string
	Got  string
}

func (e *DigestMismatchError) Error() string {
	return fmt.Sprintf("%s: %v: want %s, got %s", e.Root, ErrDigestMismatch, e.Want, e.Got)
}

func (e *DigestMismatchError) Unwrap() error { return ErrDigestMismatch }
