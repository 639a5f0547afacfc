//go:build unix

package writerlock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestOneHolderAtATime(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.lock")
	first, err := Acquire(path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Acquire(path)
	var held *HeldError
	if !errors.As(err, &held) || !errors.Is(err, ErrHeld) || held.Holder != fmt.Sprintf("pid %d", os.Getpid()) || held.Path != path {
		t.Fatalf("second Acquire: %v, want a HeldError naming pid %d", err, os.Getpid())
	}
	if err := first.Release(); err != nil {
		t.Fatal(err)
	}
	if err := first.Release(); err != nil {
		t.Fatalf("a second Release: %v", err)
	}
	second, err := Acquire(path)
	if err != nil {
		t.Fatalf("after Release: %v", err)
	}
	defer second.Release()
}

// TestHolderThatLeftNoPid: a lock held by a process that did not record
// itself, with the pid of a writer that has exited left in the file, is
// named as such, never as the dead pid.
func TestHolderThatLeftNoPid(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.lock")
	// pid 2^22+1 is above Linux's pid_max: no such process.
	if err := os.WriteFile(path, []byte("pid 4194305\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	_, err = Acquire(path)
	if !errors.Is(err, ErrHeld) || !strings.Contains(err.Error(), "did not record its pid (the last recorded writer, pid 4194305, has exited)") {
		t.Fatalf("error %v", err)
	}
}
