//go:build unix

package ledger

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// writerLock is the exclusive flock on DB+".lock" that makes one process the
// ledger's only writer. The kernel drops it when the process dies, so a
// killed writer never leaves a stale lock behind.
type writerLock struct{ f *os.File }

func lockWriter(path string) (*writerLock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open ledger lock: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			who := holder(path)
			if who == "" {
				who = "unknown pid"
			}
			return nil, fmt.Errorf("%w: %s holds %s", ErrLocked, who, path)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	// Who holds the lock, for the error a second writer gets. Written after
	// the lock is ours, so it never names a process that lost the race.
	if err := f.Truncate(0); err == nil {
		fmt.Fprintf(f, "pid %d\n", os.Getpid())
	}
	return &writerLock{f: f}, nil
}

// holder reads who holds the lock. The winner writes its pid just after
// taking the lock, so a loser that lost by a hair waits a moment for it.
func holder(path string) string {
	for range 20 {
		data, _ := os.ReadFile(path)
		if who := strings.TrimSpace(string(data)); who != "" {
			return who
		}
		time.Sleep(5 * time.Millisecond)
	}
	return ""
}

func (l *writerLock) release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}
