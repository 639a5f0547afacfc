// Package writerlock makes one process the only writer of a store: an
// exclusive, non-blocking flock(2) on a lock file beside it, which records
// the holder's pid for the error a second writer gets. The kernel drops
// the lock when the process dies, so a killed writer never leaves a stale
// lock behind. The settlement ledger (DB+".lock") and the release channel
// (DIR+".lock") take it for every write.
package writerlock

import (
	"errors"
	"os"
)

// ErrHeld is the error of Acquire while another process holds the lock.
var ErrHeld = errors.New("held by another writer")

// HeldError is Acquire's error while another process holds the lock: it
// names the holder, and errors.Is(err, ErrHeld) holds.
type HeldError struct {
	Path   string // the lock file
	Holder string // "pid N", or why no pid can be named
}

func (e *HeldError) Error() string { return e.Holder + " holds " + e.Path }

// Is makes a HeldError match ErrHeld.
func (e *HeldError) Is(target error) bool { return target == ErrHeld }

// Lock is a held writer lock.
type Lock struct{ f *os.File }
