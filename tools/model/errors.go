package model

import (
	"errors"
	"fmt"
	"path/filepath"
)

// rejection marks errors that reject the tree or receipt as given, as
// opposed to failures to read it; callers tell them apart with IsRejection.
type rejection struct{ msg string }

func (r *rejection) Error() string { return r.msg }

// IsRejection reports whether err rejects the input (a tree, receipt or
// destination that breaks a rule) rather than reporting an I/O failure.
func IsRejection(err error) bool {
	var r *rejection
	return errors.As(err, &r)
}

// Reasons a tree, receipt or destination is rejected. Every error this
// package returns for bad input wraps one of them.
var (
	ErrNotDirectory      error = &rejection{"not a directory"}
	ErrSymlink           error = &rejection{"symbolic link"}
	ErrHardlink          error = &rejection{"hard link"}
	ErrSpecialFile       error = &rejection{"special file"}
	ErrCachePath         error = &rejection{".cache path component"}
	ErrInvalidPath       error = &rejection{"invalid path"}
	ErrCaseCollision     error = &rejection{"paths collide when case-folded"}
	ErrUnicodeCollision  error = &rejection{"paths collide when Unicode-normalized (NFC)"}
	ErrMutated           error = &rejection{"changed while provisioning"}
	ErrNoFiles           error = &rejection{"model tree has no files"}
	ErrDigestMismatch    error = &rejection{"content digest mismatch"}
	ErrInvalidReceipt    error = &rejection{"invalid model provision receipt"}
	ErrReceiptInsideRoot error = &rejection{"receipt destination is inside the model root"}
	ErrReceiptExists     error = &rejection{"a different file exists at the receipt destination"}
	ErrTreeMismatch      error = &rejection{"model tree does not match its receipt"}
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
