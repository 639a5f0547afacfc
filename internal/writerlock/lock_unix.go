//go:build unix

package writerlock

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Acquire takes the exclusive flock on the file at path (created if
// missing) without waiting. When another process holds it, the error is
// a *HeldError naming the holder.
func Acquire(path string) (*Lock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock %s: %w", path, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, &HeldError{Path: path, Holder: holder(path)}
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	// Who holds the lock, for the error a second writer gets. Written after
	// the lock is ours, so it never names a process that lost the race.
	if err := f.Truncate(0); err == nil {
		fmt.Fprintf(f, "pid %d\n", os.Getpid())
	}
	return &Lock{f: f}, nil
}

// holder says who holds the lock. The winner writes its pid just after
// taking the lock, so a loser that lost by a hair waits a moment for it.
// A pid left by a writer that was killed (Release empties the file) names
// a process that no longer exists: then the holder is some other process
// that did not record itself (flock(1), say), and the message says so.
func holder(path string) string {
	for range 20 {
		data, _ := os.ReadFile(path)
		who := strings.TrimSpace(string(data))
		if who == "" {
			time.Sleep(5 * time.Millisecond)
			continue
		}
		var pid int
		if _, err := fmt.Sscanf(who, "pid %d", &pid); err == nil && pid > 0 && errors.Is(unix.Kill(pid, 0), unix.ESRCH) {
			return fmt.Sprintf("a process that did not record its pid (the last recorded writer, pid %d, has exited)", pid)
		}
		return who
	}
	return "a process that did not record its pid"
}

// Release gives the lock up. It is safe on a nil or released Lock.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	// Empty the holder record while the lock is still ours, so the next
	// contender never reads our pid after we are gone.
	l.f.Truncate(0)
	err := l.f.Close()
	l.f = nil
	return err
}
