// Package reject is the one root of every rejection in the project: an
// input that was read and refused (a bundle breaking a rule, a stack that
// does not assemble, a release whose signature does not verify), as
// opposed to a failure to read it (a missing file, an I/O or network
// error). Each package keeps its own named reasons, and every one of them
// matches ErrRejected with errors.Is, so the command line maps errors to
// exit codes in one place without knowing any package's types.
//
// It imports only the standard library, so that every layer can use it.
package reject

import (
	"errors"
	"fmt"
)

// ErrRejected is the root every rejection matches.
var ErrRejected = errors.New("rejected")

// reason is a named rejection class. Its message is the reason alone, so a
// package's errors read as before, and it matches ErrRejected without
// printing it.
type reason struct{ msg string }

func (r *reason) Error() string { return r.msg }

// Is makes every reason match ErrRejected.
func (r *reason) Is(target error) bool { return target == ErrRejected }

// New returns a rejection class named msg: a sentinel a package declares
// once, wraps in its typed errors and compares with errors.Is.
func New(msg string) error { return &reason{msg} }

// wrapped marks an error that does not otherwise match ErrRejected as a
// rejection, keeping its message and its chain.
type wrapped struct{ err error }

func (w *wrapped) Error() string { return w.err.Error() }
func (w *wrapped) Unwrap() error { return w.err }

// Is makes the wrapped error match ErrRejected.
func (w *wrapped) Is(target error) bool { return target == ErrRejected }

// Wrap marks err as a rejection of the input; nil stays nil. Use it where
// an error from a package without its own classes (a parse error, a
// failed comparison) is known to be about what was read.
func Wrap(err error) error {
	if err == nil {
		return nil
	}
	return &wrapped{err}
}

// Errorf formats a rejection; a %w verb keeps the wrapped error's chain.
func Errorf(format string, args ...any) error {
	return Wrap(fmt.Errorf(format, args...))
}

// Is reports whether err, or any error it wraps, is a rejection.
func Is(err error) bool { return errors.Is(err, ErrRejected) }
