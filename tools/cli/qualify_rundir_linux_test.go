package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/cacheon/engine/evaluator/sandbox/cgroup"
)

// TestQualificationRunDirUnmountsAKilledRunsWork: a qualification killed
// while its engines ran leaves their bounded work directories mounted (a
// tmpfs each, on the host, named for the controller that mounted it). The
// next qualification unmounts those of a controller that has ended and
// removes the directory, with no warning; a live controller's mount stays.
// Root only, as the mounts are.
func TestQualificationRunDirUnmountsAKilledRunsWork(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("work directories are mounted only by a root controller")
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	self, err := cgroup.Owner() // "<pid>-<start>-<pid namespace>"
	if err != nil {
		t.Skipf("no owner tag here: %v", err)
	}
	pidns := self[strings.LastIndex(self, "-")+1:]
	// A controller that has surely ended: a child that exited and was reaped.
	cmd := exec.Command("/bin/true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	killed := filepath.Join(tmp, ".cacheon-qualify.work-4194305-1")
	live := filepath.Join(tmp, "live-controller")
	mounts := map[string]string{ // mount point -> the owner that mounted it
		filepath.Join(killed, "arms", "B_prime-set3"): fmt.Sprintf("%d-1-%s", cmd.Process.Pid, pidns),
		filepath.Join(live, "arms", "B"):              self,
	}
	for dir, owner := range mounts {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := unix.Mount("cacheon-work-"+owner, dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size=1m"); err != nil {
			t.Skipf("cannot mount a tmpfs here: %v", err)
		}
		t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
		if err := os.WriteFile(filepath.Join(dir, "engine.log"), []byte("written in the sandbox\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	makeOld(t, killed)
	_, errOut := sweep(t)
	if _, err := os.Stat(killed); !os.IsNotExist(err) {
		t.Errorf("the killed run's directory is still there (%v); stderr %q", err, errOut)
	}
	if strings.Contains(errOut, "left the work directories") {
		t.Errorf("stderr %q", errOut)
	}
	if _, err := os.Stat(filepath.Join(live, "arms", "B", "engine.log")); err != nil {
		t.Errorf("the live controller's mount was undone: %v", err)
	}
}
