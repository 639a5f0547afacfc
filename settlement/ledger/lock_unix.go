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

// holder says who holds the lock. The winner writes its pid just after
// taking the lock, so a loser that lost by a hair waits a moment for it.
// A pid left by a writer that was killed (Close empties the file) names a
// process that no longer exists: then the holder is some other process
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

func (l *writerLock) release() error {
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
