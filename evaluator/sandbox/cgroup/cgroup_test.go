package cgroup

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The hosts the probe must read right: the 2-core hosts' hybrid layout
// (v1 memory, pids and cpu beside a cgroup2 tree with only hugetlb), a
// container that sees its own v1 group as the mount's root, a delegated
// v2 group, and v2 groups that offer too little.
func TestProbe(t *testing.T) {
	t.Parallel()
	hybrid := `30 22 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
31 30 0:28 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
32 30 0:29 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
34 30 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
38 30 0:35 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
39 30 0:36 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`
	hybridSelf := "9:name=systemd:/\n8:pids:/\n4:memory:/process_api/abc\n2:cpuacct:/\n1:cpu:/\n0::/\n"
	container := `31 30 0:28 /docker/x /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct
34 30 0:31 /docker/x /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
38 30 0:35 /docker/x /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
`
	containerSelf := "4:memory:/docker/x\n3:pids:/docker/x\n1:cpu,cpuacct:/docker/x\n"
	unified := "40 22 0:37 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n"
	readOnly := "34 30 0:31 / /sys/fs/cgroup/memory ro,relatime - cgroup cgroup rw,memory\n" +
		"38 30 0:35 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n31 30 0:28 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n"
	// A GPU host: cgroup v2 alone; the job's group delegates only memory,
	// the root all three.
	gpu := "32 23 0:28 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot\n"
	files := map[string]string{
		"/sys/fs/cgroup/process_api/4cbd/cgroup.controllers":     "memory\n",
		"/sys/fs/cgroup/cacheon/cgroup.controllers":              "cpuset cpu io memory hugetlb pids\n",
		"/sys/fs/cgroup/user.slice/run.scope/cgroup.controllers": "cpuset cpu io memory pids\n",
		"/sys/fs/cgroup/system.slice/cgroup.controllers":         "memory pids\n",
		"/sys/fs/cgroup/unified/cgroup.controllers":              "hugetlb\n",
	}
	read := func(p string) ([]byte, error) {
		if s, ok := files[p]; ok {
			return []byte(s), nil
		}
		return nil, os.ErrNotExist
	}
	cases := []struct {
		name, mountinfo, self string
		version               int
		parents               map[string]string
		err                   []string // the refusal says each
	}{
		{"v1 memory, pids, cpu beside a controller-less cgroup2", hybrid, hybridSelf, 1, map[string]string{
			"memory": "/sys/fs/cgroup/memory/process_api/abc/" + ParentName,
			"pids":   "/sys/fs/cgroup/pids/" + ParentName,
			"cpu":    "/sys/fs/cgroup/cpu/" + ParentName,
		}, nil},
		{"v1 in a container, its own group at the mount's root", container, containerSelf, 1, map[string]string{
			"memory": "/sys/fs/cgroup/memory/" + ParentName,
			"pids":   "/sys/fs/cgroup/pids/" + ParentName,
			"cpu":    "/sys/fs/cgroup/cpu,cpuacct/" + ParentName,
		}, nil},
		{"v2 with the controllers delegated", unified, "0::/user.slice/run.scope\n", 2, map[string]string{
			"memory": "/sys/fs/cgroup/user.slice/run.scope/" + ParentName,
			"pids":   "/sys/fs/cgroup/user.slice/run.scope/" + ParentName,
			"cpu":    "/sys/fs/cgroup/user.slice/run.scope/" + ParentName,
		}, nil},
		{"v2, the controller moved into its leaf", unified, "0::/user.slice/run.scope/" + controllerLeaf + "\n", 2, map[string]string{
			"memory": "/sys/fs/cgroup/user.slice/run.scope/" + ParentName,
		}, nil},
		{"a GPU host's job group, which delegates only memory", gpu, "0::/process_api/4cbd\n", 0, nil,
			[]string{"offers only [memory], not pids, cpu", "mkdir -p /sys/fs/cgroup/cacheon/cacheon-controller"}},
		{"the same host, the controller in a group of its own", gpu, "0::/cacheon\n", 2, map[string]string{
			"cpu": "/sys/fs/cgroup/cacheon/" + ParentName,
		}, nil},
		{"v2 without cpu", unified, "0::/system.slice\n", 0, nil,
			[]string{"/sys/fs/cgroup/system.slice", "not cpu", "subtree_control"}},
		{"only a controller-less cgroup2", "40 30 0:37 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n", "0::/\n", 0, nil,
			[]string{"lacks memory, pids, cpu", "offers only [hugetlb]"}},
		{"a read-only memory hierarchy", readOnly, "4:memory:/\n3:pids:/\n1:cpu:/\n", 0, nil,
			[]string{"no writable cgroup hierarchy mounted for memory"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h, err := probe([]byte(c.mountinfo), []byte(c.self), read)
			if c.err != nil {
				if err == nil {
					t.Fatalf("probe: %v, want a refusal", h)
				}
				if !errors.Is(err, ErrUnavailable) {
					t.Errorf("%v does not wrap ErrUnavailable", err)
				}
				for _, w := range c.err {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("%v does not say %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if h.Version != c.version {
				t.Errorf("version %d, want %d", h.Version, c.version)
			}
			for ctl, want := range c.parents {
				if got := h.Parents[ctl]; got != want {
					t.Errorf("%s parent %s, want %s", ctl, got, want)
				}
			}
		})
	}
}

// host probes this host and prepares it, skipping where groups cannot be
// made unless CACHEON_REQUIRE_SANDBOX is set.
func host(t *testing.T) *Host {
	t.Helper()
	h, err := Probe()
	if err == nil {
		err = h.Prepare()
	}
	if err != nil {
		if os.Getenv("CACHEON_REQUIRE_SANDBOX") != "" {
			t.Fatalf("cgroups required: %v", err)
		}
		t.Skipf("no cgroups here: %v", err)
	}
	return h
}

// TestStaleGroupsAreRemoved: groups whose controller ended (a pid that
// exited, or a pid now reused by another process) are removed; groups of
// a live controller, and of another PID namespace, are kept.
func TestStaleGroupsAreRemoved(t *testing.T) {
	t.Parallel()
	h := host(t)
	self, err := ownerID(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// A pid that has surely ended: a child that exited and was reaped.
	cmd := exec.Command("/bin/true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead := cmd.Process.Pid
	names := map[string]bool{ // name -> must be removed
		fmt.Sprintf("%d-%d-%d-dead", dead, 1, self.pidns):                  true,
		fmt.Sprintf("%d-%d-%d-reused", self.pid, self.start+1, self.pidns): true,
		fmt.Sprintf("%d-%d-%d-live", self.pid, self.start, self.pidns):     false,
		fmt.Sprintf("%d-%d-%d-othernamespace", dead, 1, self.pidns+1):      false,
		"not-a-sandbox-group": false,
	}
	for name := range names {
		for _, p := range h.Parents {
			if err := os.MkdirAll(filepath.Join(p, name), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Cleanup(func() {
		for name := range names {
			for _, p := range h.Parents {
				_ = removeDir(filepath.Join(p, name))
			}
		}
	})
	removed, err := h.CleanStale()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, d := range removed {
		got[filepath.Base(d)] = true
	}
	// Another test binary's clean-up may have removed a stale group
	// first: gone is what counts.
	for name, stale := range names {
		for _, p := range h.Parents {
			_, statErr := os.Stat(filepath.Join(p, name))
			if stale && statErr == nil {
				t.Errorf("stale group %s was not removed", filepath.Join(p, name))
			}
			if !stale && (got[name] || statErr != nil) {
				t.Errorf("group %s was removed", filepath.Join(p, name))
			}
		}
	}
}

// TestGroupLifecycle: a group is made with its limits, takes a process,
// lists its tasks and is removed, killing what is left in it.
func TestGroupLifecycle(t *testing.T) {
	t.Parallel()
	h := host(t)
	g, err := h.Create(Limits{Memory: 64 << 20, Pids: 16, CPU: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/bin/sleep", "600")
	if err := cmd.Start(); err != nil {
		g.Remove()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	if err := g.Add(cmd.Process.Pid); err != nil {
		cmd.Process.Kill()
		g.Remove()
		t.Fatal(err)
	}
	tasks, err := g.Tasks()
	if err != nil || len(tasks) != 1 || tasks[0] != cmd.Process.Pid {
		t.Errorf("tasks %v, %v; want [%d]", tasks, err, cmd.Process.Pid)
	}
	limit := map[int]string{1: "memory.limit_in_bytes", 2: "memory.max"}[h.Version]
	if data, err := os.ReadFile(filepath.Join(g.Dir("memory"), limit)); err != nil || strings.TrimSpace(string(data)) != fmt.Sprint(64<<20) {
		t.Errorf("%s = %q, %v", limit, data, err)
	}
	if err := g.Remove(); err != nil {
		t.Fatal(err)
	}
	<-done // killed by Remove
	for _, c := range Controllers {
		if _, err := os.Stat(g.Dir(c)); err == nil {
			t.Errorf("%s group %s is still there", c, g.Dir(c))
		}
	}
}
