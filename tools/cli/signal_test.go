package cli

import (
	"bufio"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cacheon/engine/tools/cli/enginecli"
)

// The first SIGTERM (or Ctrl-C) cancels the run's context and says so; a
// step that never checks it (here the fault-injection pause) is ended by
// the second signal, which has its default effect again.
func TestSecondSignalEndsTheProcess(t *testing.T) {
	ws := incumbentWorkspace(t, t.TempDir())
	cmd := subprocess{dir: ws, umask: 0o022, env: []string{enginecli.FaultPauseEnv + "=1"},
		args: []string{"stack", "materialize", "stacks/incumbent.hcl", "--out", filepath.Join(t.TempDir(), "engine")}}.command(t)
	stderr, err := cmd.StderrPipe()
	must(t, err)
	must(t, cmd.Start())
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	waitFor := func(what string) {
		t.Helper()
		timeout := time.After(30 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("stderr ended before %q", what)
				}
				if strings.Contains(l, what) {
					return
				}
			case <-timeout:
				cmd.Process.Kill()
				t.Fatalf("no %q on stderr within 30s", what)
			}
		}
	}
	waitFor("fault injection: paused")
	must(t, cmd.Process.Signal(syscall.SIGTERM))
	waitFor("interrupted: stopping at the next safe point")
	must(t, cmd.Process.Signal(syscall.SIGTERM))
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("process ended with %v, want killed by SIGTERM", err)
		}
		if ws, ok := ee.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
			t.Fatalf("process ended with %v, want killed by SIGTERM", err)
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("the second SIGTERM did not end the process")
	}
}
