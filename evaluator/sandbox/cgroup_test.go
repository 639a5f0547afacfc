package sandbox

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cacheon/engine/evaluator/sandbox/cgroup"
)

// TestGroupBounds: the sandbox's control group bounds what the
// per-process rlimits do not see, summed over the whole sandbox. Every
// script prints a marker only if it got past its bound; the rlimits are
// left at or set far above the group's bounds so that only the group can
// stop it.
func TestGroupBounds(t *testing.T) {
	need(t)
	t.Parallel()
	const mib = 1 << 20
	cases := []struct {
		name   string
		limits Limits
		script string
		forbid string
		// counted says the group's counters saw the bound hit.
		counted func(cgroup.Stats) bool
	}{
		{"a tmpfs write counts as memory",
			Limits{GroupMemory: 128 * mib, Memory: 8 << 30},
			`head -c 400m /dev/zero > /dev/shm/fill && echo FILLED-SHM; ls -l /dev/shm`, "FILLED-SHM",
			func(s cgroup.Stats) bool { return s.MemoryLimit > 0 || s.OOMKills > 0 }},
		{"a /tmp write counts as memory",
			Limits{GroupMemory: 128 * mib, Memory: 8 << 30},
			`head -c 400m /dev/zero > /tmp/fill && echo FILLED-TMP; true`, "FILLED-TMP",
			func(s cgroup.Stats) bool { return s.MemoryLimit > 0 || s.OOMKills > 0 }},
		{"a shared memfd mapping counts as memory",
			Limits{GroupMemory: 128 * mib, Memory: 8 << 30},
			`python3 -c "
import mmap, os
fd = os.memfd_create('hog'); os.ftruncate(fd, 400 << 20)
m = mmap.mmap(fd, 400 << 20, mmap.MAP_SHARED)
for i in range(0, 400 << 20, 4096): m[i] = 1
print('MAPPED-SHARED')"; true`, "MAPPED-SHARED",
			func(s cgroup.Stats) bool { return s.MemoryLimit > 0 || s.OOMKills > 0 }},
		{"a thread bomb stops at the task bound",
			Limits{Tasks: 32},
			`python3 -c "
import threading, time
n = 0
try:
    for _ in range(200):
        threading.Thread(target=time.sleep, args=(3,), daemon=True).start(); n += 1
except RuntimeError as e:
    print('stopped at', n, e)
if n == 200: print('STARTED-200-THREADS')"; true`, "STARTED-200-THREADS",
			func(s cgroup.Stats) bool { return s.PidsLimit > 0 && s.PidsPeak <= 32 }},
		{"a fork bomb stops at the task bound",
			Limits{Tasks: 32},
			`i=0; while [ $i -lt 200 ]; do sleep 3 & i=$((i+1)); done; echo SPAWNED-200; true`, "SPAWNED-200",
			func(s cgroup.Stats) bool { return s.PidsLimit > 0 && s.PidsPeak <= 32 }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := newBox(t)
			s := b.spec(c.script)
			s.Limits = c.limits
			res := runSpec(t, s)
			out := b.output(t)
			if strings.Contains(out, c.forbid) {
				t.Fatalf("the bound did not hold:\n%s", out)
			}
			if !c.counted(res.Bounds) {
				t.Errorf("the group's counters did not see the bound: %+v\n%s", res.Bounds, out)
			}
		})
	}
}

// TestCPUQuota: four busy processes in a sandbox limited to a fifth of a
// CPU get about a fifth of a CPU, wherever the host has more to give. The
// bound on the ratio of CPU time to wall time is generous (twice the
// quota), and the group's own throttling counter must have seen it.
func TestCPUQuota(t *testing.T) {
	need(t)
	t.Parallel()
	b := newBox(t)
	s := b.spec(`python3 -c "
import os, subprocess, time
t0 = time.monotonic()
ps = [subprocess.Popen(['timeout', '2', 'sh', '-c', 'while :; do :; done']) for _ in range(4)]
for p in ps: p.wait()
wall = time.monotonic() - t0
c = os.times()
print('cpu', c.children_user + c.children_system, 'wall', wall)"`)
	s.Limits.CPU = 0.2
	res := runSpec(t, s)
	out := b.output(t)
	var cpu, wall float64
	if _, err := fmt.Sscanf(out, "cpu %g wall %g", &cpu, &wall); err != nil || wall <= 0 {
		t.Fatalf("no measurement (%v):\n%s", err, out)
	}
	ratio := cpu / wall
	t.Logf("CPU %.3f s over %.3f s wall: %.2f CPUs under a 0.2 CPU quota; throttled %s", cpu, wall, ratio, res.Bounds.CPUThrottled)
	if ratio > 0.4 {
		t.Errorf("the sandbox used %.2f CPUs, quota 0.2", ratio)
	}
	if res.Bounds.CPUThrottled == 0 {
		t.Errorf("the group was never throttled: %+v", res.Bounds)
	}
}

// TestGroupLifecycleInASandbox: the sandbox's tasks are listed, named, by
// the controller while it runs, and its group is gone once it ended.
func TestGroupLifecycleInASandbox(t *testing.T) {
	need(t)
	t.Parallel()
	b := newBox(t)
	s := b.spec(`sleep 600 & sleep 600 & echo ready >&5; read -r x <&4`)
	s.Procs[0].Session = true
	sb, err := Start(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	dirs := map[string]string{}
	for _, c := range cgroup.Controllers {
		dirs[c] = sb.group.Dir(c)
	}
	frames := bufio.NewScanner(sb.Session(0).Frames)
	if !frames.Scan() {
		sb.Kill()
		sb.Wait()
		t.Fatalf("no ready line: %s", b.output(t))
	}
	// The init's threads, the shell and its two sleeps, once the forked
	// shells have become sleeps.
	var threads []Thread
	for try := 0; try < 100; try++ {
		threads, err = sb.Threads()
		if err != nil {
			t.Fatal(err)
		}
		names := map[string]int{}
		for _, th := range threads {
			if th.PID != sb.Pid() {
				names[th.Name]++
			}
		}
		if names["sleep"] == 2 && names["sh"] == 1 && len(names) == 2 {
			break
		}
		if try == 99 {
			t.Errorf("threads %+v, want the init's, sh and two sleeps", threads)
		}
		time.Sleep(20 * time.Millisecond)
	}
	sb.Session(0).Send.Close()
	if _, err := sb.Wait(); err != nil {
		t.Fatal(err)
	}
	for c, d := range dirs {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("the %s group %s outlived the sandbox (%v)", c, d, err)
		}
	}
}

// TestWorkDirectoryBounds: a worker's writable directory holds a bounded
// number of bytes and of files, whatever the per-file and memory bounds
// allow, and what it wrote within them comes back to the host's disk once
// the sandbox ended, with its links dropped.
func TestWorkDirectoryBounds(t *testing.T) {
	need(t)
	if os.Geteuid() != 0 {
		t.Skip("the work directory is bounded only under a root controller")
	}
	t.Parallel()
	big := Limits{FileSize: 8 << 30, GroupMemory: 4 << 30}
	cases := []struct {
		name   string
		limits Limits
		script string
		forbid string
		check  func(t *testing.T, work string)
	}{
		{"bytes", Limits{WorkSize: 64 << 20}, `head -c 300m /dev/zero > $WORK/big; [ $(stat -c %s $WORK/big) -gt 67108864 ] && echo WROTE-300M; true`, "WROTE-300M",
			func(t *testing.T, work string) {
				if fi, err := os.Stat(work + "/big"); err != nil || fi.Size() > 64<<20 {
					t.Errorf("the host holds %v (%v), want at most 64 MiB", fi, err)
				}
			}},
		{"inodes", Limits{WorkInodes: 500}, `i=0; while [ $i -lt 3000 ]; do : > $WORK/f$i || break; i=$((i+1)); done; echo made $i; [ $i -ge 3000 ] && echo MADE-3000; true`, "MADE-3000",
			func(t *testing.T, work string) {
				if entries, _ := os.ReadDir(work); len(entries) > 500 {
					t.Errorf("the host holds %d files, want at most 500", len(entries))
				}
			}},
		{"results come back", Limits{}, `mkdir $WORK/sub && echo kept > $WORK/sub/result && ln -s /etc/hostname $WORK/link && mkfifo $WORK/fifo; cat $WORK/request`, "",
			func(t *testing.T, work string) {
				if data, err := os.ReadFile(work + "/sub/result"); err != nil || string(data) != "kept\n" {
					t.Errorf("sub/result = %q, %v", data, err)
				}
				for _, gone := range []string{"link", "fifo"} {
					if _, err := os.Lstat(work + "/" + gone); err == nil {
						t.Errorf("%s came back to the host", gone)
					}
				}
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := newBox(t)
			if err := os.WriteFile(b.work+"/request", []byte("the request\n"), 0o444); err != nil {
				t.Fatal(err)
			}
			s := b.spec(c.script)
			s.Limits = big
			s.Limits.WorkSize, s.Limits.WorkInodes = c.limits.WorkSize, c.limits.WorkInodes
			res := runSpec(t, s)
			out := b.output(t)
			if c.forbid != "" && strings.Contains(out, c.forbid) {
				t.Fatalf("the bound did not hold:\n%s", out)
			}
			if !res.WorkBounded {
				t.Errorf("the result says the work directory was not bounded")
			}
			if !strings.Contains(out, "the request") && c.forbid == "" {
				t.Errorf("the request did not reach the worker:\n%s", out)
			}
			c.check(t, b.work)
			if data, err := os.ReadFile(b.work + "/request"); err != nil || string(data) != "the request\n" {
				t.Errorf("the request after the run: %q, %v", data, err)
			}
			if stashes, _ := filepath.Glob(b.run + "/.work.stash-*"); len(stashes) > 0 {
				t.Errorf("stash directories left: %v", stashes)
			}
		})
	}
}
