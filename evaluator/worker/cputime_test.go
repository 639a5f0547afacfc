package worker

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	// The fields after the name: state ppid pgrp session tty tpgid flags
	// minflt cminflt majflt cmajflt utime stime cutime cstime …
	tail := " S 41 42 42 0 -1 4194560 100 0 0 0 250 30 7 3 20 0 1 0 5 0 0"
	for _, c := range []struct {
		name  string
		line  string
		ppid  int
		ticks uint64
		err   string
	}{
		{"plain", "43 (python3)" + tail, 41, 290, ""},
		// A process may name itself anything, parentheses and spaces too.
		{"a hostile name", "43 (a) S 1 1 1 0 -1 0 0 0 0 0 999999 0 0 0 (b)" + tail, 41, 290, ""},
		{"no name", "43 python3" + tail, 0, 0, "no command name"},
		{"short", "43 (python3) S 41 42", 0, 0, "fields after the command name"},
		{"negative", "43 (x) S 41 42 42 0 -1 4194560 100 0 0 0 250 30 -7 3 20", 0, 0, "CPU time field"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ppid, ticks, err := parseStat([]byte(c.line))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want %q", err, c.err)
				}
				return
			}
			if err != nil || ppid != c.ppid || ticks != c.ticks {
				t.Fatalf("ppid %d ticks %d err %v, want %d %d", ppid, ticks, err, c.ppid, c.ticks)
			}
		})
	}
}

// TestTreeCPUSecondsCountsDescendants: a child that spins is counted in
// its parent's tree while it runs, and still after it has ended and been
// reaped; a process that is gone is an error.
func TestTreeCPUSecondsCountsDescendants(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	self := os.Getpid()
	before, err := TreeCPUSeconds(self)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/bin/sh", "-c", "while :; do :; done")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	child := cmd.Process.Pid
	// Wait, however loaded the host, until the child has spun for 0.2
	// CPU-seconds by its own account.
	deadline := time.Now().Add(time.Minute)
	var spun float64
	for spun < 0.2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		if spun, err = TreeCPUSeconds(child); err != nil {
			t.Fatal(err)
		}
	}
	if spun < 0.2 {
		t.Fatalf("the spinning child consumed %g CPU-seconds in a minute", spun)
	}
	during, err := TreeCPUSeconds(self)
	if err != nil {
		t.Fatal(err)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	after, err := TreeCPUSeconds(self)
	if err != nil {
		t.Fatal(err)
	}
	if during-before < spun || after < during {
		t.Fatalf("tree CPU %g before, %g while the child had spun %g, %g after it was reaped", before, during, spun, after)
	}
	if _, err := TreeCPUSeconds(child); !errors.Is(err, ErrProcessGone) {
		t.Fatalf("a reaped process: %v", err)
	}
}
