//go:build unix

package atomicwrite

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

func flock(f *os.File, how int) error {
	for {
		err := unix.Flock(int(f.Fd()), how)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// lockExclusive takes the lock, waiting for a cleaner that is looking at
// the entry to let go.
func lockExclusive(f *os.File) error { return flock(f, unix.LOCK_EX) }

// tryLockExclusive takes the lock if nobody holds it.
func tryLockExclusive(f *os.File) (bool, error) {
	err := flock(f, unix.LOCK_EX|unix.LOCK_NB)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, unix.EWOULDBLOCK):
		return false, nil
	}
	return false, err
}
