package cgroup

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Limits bound one sandbox's group as a sum over every task in it.
type Limits struct {
	// Memory is the most memory the group may hold, bytes: anonymous and
	// file pages, shared mappings, memfd and the tmpfs pages its tasks
	// wrote (the sandbox's /tmp, /var/tmp, /dev/shm and work directory),
	// charged to the group that first touched them. Swap is not a way
	// out: the group gets none.
	Memory uint64
	// Pids is the most tasks (processes and threads) alive at once.
	Pids uint64
	// CPU is the CPU time the group may use per wall second, in CPUs
	// (1.5 = one and a half); 0 = unbounded.
	CPU float64
}

// cpuPeriod is the CFS period the CPU quota is given in: the kernel's
// default, 100 ms.
const cpuPeriod = 100000 // µs

// Group is one sandbox's group: one directory per controller under v1,
// one under v2.
type Group struct {
	version int
	name    string
	dirs    map[string]string // controller -> directory (v2: every controller the same)
}

// Prepare creates the parent directories sandbox groups are made in and,
// under v2, delegates the controllers to them. Under v2 a group that holds
// processes cannot hand controllers to children (the no-internal-processes
// rule): when this process is alone in its group it moves itself into a
// leaf beside the sandboxes first; when other processes share the group,
// Prepare refuses, naming them.
func (h *Host) Prepare() error {
	if h.Version == 1 {
		for c, p := range h.Parents {
			if err := os.MkdirAll(p, 0o755); err != nil {
				return fmt.Errorf("%w: cgroup v1 %s: %v", ErrUnavailable, c, err)
			}
		}
		return nil
	}
	own := h.own[""]
	if err := enable(own); err != nil {
		if !errors.Is(err, syscall.EBUSY) {
			return fmt.Errorf("%w: cgroup v2 %s: delegate %s: %v", ErrUnavailable, own, strings.Join(Controllers, ", "), err)
		}
		if err := h.leaveOwnGroup(own); err != nil {
			return err
		}
		if err := enable(own); err != nil {
			return fmt.Errorf("%w: cgroup v2 %s: delegate %s: %v", ErrUnavailable, own, strings.Join(Controllers, ", "), err)
		}
	}
	parent := filepath.Join(own, ParentName)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("%w: cgroup v2: %v", ErrUnavailable, err)
	}
	if err := enable(parent); err != nil {
		return fmt.Errorf("%w: cgroup v2 %s: delegate %s: %v", ErrUnavailable, parent, strings.Join(Controllers, ", "), err)
	}
	return nil
}

// controllerLeaf is where a v2 controller that was alone in its group
// moves itself, so the group can delegate.
const controllerLeaf = "cacheon-controller"

// leaveOwnGroup moves this process into a leaf of its v2 group when it is
// the group's only process.
func (h *Host) leaveOwnGroup(own string) error {
	pids, err := readInts(filepath.Join(own, "cgroup.procs"))
	if err != nil {
		return fmt.Errorf("%w: cgroup v2 %s: %v", ErrUnavailable, own, err)
	}
	self := os.Getpid()
	// This process's own children (an interpreter it is checking, say)
	// move with it; anyone else's processes are not ours to move.
	var children []int
	var others []string
	for _, p := range pids {
		switch {
		case p == self:
		case parentOf(p) == self:
			children = append(children, p)
		default:
			others = append(others, strconv.Itoa(p))
		}
	}
	if len(others) > 0 {
		return fmt.Errorf("%w: cgroup v2 group %s holds other processes (%s), so it cannot delegate %s to sandbox groups "+
			"(the no-internal-processes rule); start the controller in a group of its own (systemd-run --scope "+
			"-p Delegate=yes), or in the leaf of one, as root: mkdir -p /sys/fs/cgroup/cacheon/"+controllerLeaf+
			" && echo $$ > /sys/fs/cgroup/cacheon/"+controllerLeaf+"/cgroup.procs, then run it from that shell",
			ErrUnavailable, own, strings.Join(others, " "), strings.Join(Controllers, ", "))
	}
	leaf := filepath.Join(own, controllerLeaf)
	if err := os.MkdirAll(leaf, 0o755); err != nil {
		return fmt.Errorf("%w: cgroup v2: %v", ErrUnavailable, err)
	}
	for _, p := range append([]int{self}, children...) {
		err := write(filepath.Join(leaf, "cgroup.procs"), strconv.Itoa(p))
		if err != nil && !(p != self && errors.Is(err, syscall.ESRCH)) { // a child that just ended
			return fmt.Errorf("%w: cgroup v2: move process %d into %s: %v", ErrUnavailable, p, leaf, err)
		}
	}
	return nil
}

// parentOf is pid's parent, 0 when it cannot be read.
func parentOf(pid int) int {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}

// enable turns on Controllers in dir's cgroup.subtree_control.
func enable(dir string) error {
	data, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	if err != nil {
		return err
	}
	on := strings.Fields(string(data))
	for _, c := range Controllers {
		if contains(on, c) {
			continue
		}
		if err := write(filepath.Join(dir, "cgroup.subtree_control"), "+"+c); err != nil {
			return err
		}
	}
	return nil
}

// Create makes a new group with the limits set. Its name records this
// process (pid, start time and PID namespace) so that CleanStale can tell
// a group whose controller died from one still in use.
func (h *Host) Create(l Limits) (*Group, error) {
	name, err := groupName()
	if err != nil {
		return nil, err
	}
	g := &Group{version: h.Version, name: name, dirs: map[string]string{}}
	for _, c := range Controllers {
		g.dirs[c] = filepath.Join(h.Parents[c], name)
	}
	made := map[string]bool{}
	for _, d := range g.dirs {
		if made[d] {
			continue
		}
		if err := os.Mkdir(d, 0o755); err != nil {
			g.Remove()
			return nil, fmt.Errorf("cgroup: create %s: %w", d, err)
		}
		made[d] = true
	}
	if err := g.set(l); err != nil {
		g.Remove()
		return nil, err
	}
	return g, nil
}

func (g *Group) set(l Limits) error {
	mem, pids, cpu := g.dirs["memory"], g.dirs["pids"], g.dirs["cpu"]
	type setting struct {
		path, value string
		optional    bool // absent on kernels without swap accounting
	}
	var s []setting
	if g.version == 1 {
		s = []setting{
			{filepath.Join(mem, "memory.limit_in_bytes"), strconv.FormatUint(l.Memory, 10), false},
			// memory+swap no larger than memory: no swap.
			{filepath.Join(mem, "memory.memsw.limit_in_bytes"), strconv.FormatUint(l.Memory, 10), true},
			{filepath.Join(pids, "pids.max"), strconv.FormatUint(l.Pids, 10), false},
		}
		if l.CPU > 0 {
			s = append(s, setting{filepath.Join(cpu, "cpu.cfs_period_us"), strconv.Itoa(cpuPeriod), false},
				setting{filepath.Join(cpu, "cpu.cfs_quota_us"), strconv.FormatInt(quota(l.CPU), 10), false})
		}
	} else {
		s = []setting{
			{filepath.Join(mem, "memory.max"), strconv.FormatUint(l.Memory, 10), false},
			{filepath.Join(mem, "memory.swap.max"), "0", true},
			{filepath.Join(pids, "pids.max"), strconv.FormatUint(l.Pids, 10), false},
		}
		if l.CPU > 0 {
			s = append(s, setting{filepath.Join(cpu, "cpu.max"), fmt.Sprintf("%d %d", quota(l.CPU), cpuPeriod), false})
		}
	}
	for _, x := range s {
		if err := write(x.path, x.value); err != nil {
			if x.optional && errors.Is(err, os.ErrNotExist) {
				continue
			}
			return fmt.Errorf("cgroup: set %s to %s: %w", x.path, x.value, err)
		}
	}
	return nil
}

// quota is the CFS quota, µs per period, for cpus CPUs; at least the
// kernel's minimum of 1 ms.
func quota(cpus float64) int64 {
	q := int64(cpus * cpuPeriod)
	if q < 1000 {
		q = 1000
	}
	return q
}

// Add moves process pid (every thread of it) into the group.
func (g *Group) Add(pid int) error {
	done := map[string]bool{}
	for c, d := range g.dirs {
		if done[d] {
			continue
		}
		if err := write(filepath.Join(d, "cgroup.procs"), strconv.Itoa(pid)); err != nil {
			return fmt.Errorf("cgroup: move process %d into the %s group %s: %w", pid, c, d, err)
		}
		done[d] = true
	}
	return nil
}

// Name is the group's name (the last element of its directories).
func (g *Group) Name() string { return g.name }

// Dir is the group's directory for controller c.
func (g *Group) Dir(c string) string { return g.dirs[c] }

// Tasks lists the thread ids of every task in the group, in the
// controller's PID namespace.
func (g *Group) Tasks() ([]int, error) {
	name := "tasks"
	if g.version == 2 {
		name = "cgroup.threads"
	}
	return readInts(filepath.Join(g.dirs["pids"], name))
}

// Stats are what the group's controllers counted.
type Stats struct {
	MemoryPeak  uint64 `json:"memory_peak_bytes"`
	MemoryLimit uint64 `json:"memory_limit_hits"` // allocations that hit the limit
	OOMKills    uint64 `json:"oom_kills"`         // tasks the kernel killed for the group's memory
	PidsPeak    uint64 `json:"pids_peak"`
	PidsLimit   uint64 `json:"pids_limit_hits"` // forks refused at the bound
	// CPUThrottled is the time the group's tasks waited because the group
	// had used its CPU quota.
	CPUThrottled time.Duration `json:"cpu_throttled_ns"`
}

// Stats reads the group's counters. A counter this kernel does not keep
// reads as zero.
func (g *Group) Stats() Stats {
	mem, pids, cpu := g.dirs["memory"], g.dirs["pids"], g.dirs["cpu"]
	var s Stats
	s.PidsPeak = readUint(filepath.Join(pids, "pids.peak"))
	s.PidsLimit = keyed(filepath.Join(pids, "pids.events"), "max")
	if g.version == 1 {
		s.MemoryPeak = readUint(filepath.Join(mem, "memory.max_usage_in_bytes"))
		s.MemoryLimit = readUint(filepath.Join(mem, "memory.failcnt"))
		s.OOMKills = keyed(filepath.Join(mem, "memory.oom_control"), "oom_kill")
		s.CPUThrottled = time.Duration(keyed(filepath.Join(cpu, "cpu.stat"), "throttled_time"))
	} else {
		s.MemoryPeak = readUint(filepath.Join(mem, "memory.peak"))
		s.MemoryLimit = keyed(filepath.Join(mem, "memory.events"), "max")
		s.OOMKills = keyed(filepath.Join(mem, "memory.events"), "oom_kill")
		s.CPUThrottled = time.Duration(keyed(filepath.Join(cpu, "cpu.stat"), "throttled_usec")) * time.Microsecond
	}
	return s
}

// Remove kills whatever is left in the group and removes its directories.
// A task that is still exiting keeps a group busy for a moment: removal
// is retried for up to two seconds.
func (g *Group) Remove() error {
	var errs []error
	done := map[string]bool{}
	for _, d := range g.dirs {
		if done[d] {
			continue
		}
		done[d] = true
		if err := removeDir(d); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func removeDir(d string) error {
	if _, err := os.Stat(d); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	// v2 kills the whole group in one write where the kernel has it.
	if write(filepath.Join(d, "cgroup.kill"), "1") != nil {
		if pids, err := readInts(filepath.Join(d, "cgroup.procs")); err == nil {
			for _, p := range pids {
				_ = syscall.Kill(p, syscall.SIGKILL)
			}
		}
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		err := syscall.Rmdir(d)
		if err == nil || errors.Is(err, syscall.ENOENT) {
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
			return fmt.Errorf("cgroup: remove %s: %w", d, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// CleanStale removes the groups that a controller which has since ended
// left behind (one that crashed before it could remove them), and returns
// their directories. A group made in another PID namespace is left alone:
// its controller's liveness cannot be judged from here.
func (h *Host) CleanStale() ([]string, error) {
	self, err := ownerID(os.Getpid())
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	seen := map[string]bool{}
	for _, p := range h.Parents {
		if seen[p] {
			continue
		}
		seen[p] = true
		entries, err := os.ReadDir(p)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			return removed, fmt.Errorf("cgroup: %w", err)
		}
		for _, e := range entries {
			if !e.IsDir() {
				continue
			}
			o, ok := parseName(e.Name())
			if !ok || o.pidns != self.pidns || o.alive() {
				continue
			}
			d := filepath.Join(p, e.Name())
			if err := removeDir(d); err != nil {
				errs = append(errs, err)
				continue
			}
			removed = append(removed, d)
		}
	}
	return removed, errors.Join(errs...)
}

// owner identifies the controller process a group was made by.
type owner struct {
	pid   int
	start uint64 // start time in clock ticks after boot: tells a reused pid
	pidns uint64 // the PID namespace's inode
}

func ownerID(pid int) (owner, error) {
	start, err := startTime(pid)
	if err != nil {
		return owner{}, fmt.Errorf("cgroup: %w", err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(fmt.Sprintf("/proc/%d/ns/pid", pid), &st); err != nil {
		return owner{}, fmt.Errorf("cgroup: PID namespace: %w", err)
	}
	return owner{pid: pid, start: start, pidns: st.Ino}, nil
}

func (o owner) alive() bool {
	start, err := startTime(o.pid)
	return err == nil && start == o.start
}

// startTime is field 22 of /proc/<pid>/stat.
func startTime(pid int) (uint64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(s[i+1:])
	// After the name: state is field 3, so start time (22) is f[19].
	if len(f) < 20 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	return strconv.ParseUint(f[19], 10, 64)
}

// Owner names this process as the owner of what it makes on the host
// (groups, mounts): "<pid>-<start>-<pidns>", so that a later controller
// can tell, with Ended, whether the maker is gone.
func Owner() (string, error) {
	o, err := ownerID(os.Getpid())
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%d-%d-%d", o.pid, o.start, o.pidns), nil
}

// Ended reports whether the owner an Owner string names has ended: its
// pid is gone or now another process's. An owner in another PID namespace,
// or a string that is not an Owner, has not ended as far as this process
// can tell.
func Ended(ownerTag string) bool {
	self, err := ownerID(os.Getpid())
	if err != nil {
		return false
	}
	o, ok := parseName(ownerTag + "-x")
	return ok && o.pidns == self.pidns && !o.alive()
}

// groupName is "<owner>-<random>".
func groupName() (string, error) {
	o, err := Owner()
	if err != nil {
		return "", err
	}
	var r [6]byte
	if _, err := rand.Read(r[:]); err != nil {
		return "", fmt.Errorf("cgroup: %w", err)
	}
	return o + "-" + hex.EncodeToString(r[:]), nil
}

func parseName(name string) (owner, bool) {
	f := strings.Split(name, "-")
	if len(f) != 4 || f[3] == "" {
		return owner{}, false
	}
	pid, err1 := strconv.Atoi(f[0])
	start, err2 := strconv.ParseUint(f[1], 10, 64)
	ns, err3 := strconv.ParseUint(f[2], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || pid <= 0 {
		return owner{}, false
	}
	return owner{pid: pid, start: start, pidns: ns}, true
}

func write(path, value string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(value)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func readInts(path string) ([]int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []int
	for _, f := range strings.Fields(string(data)) {
		n, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not a task id", path, f)
		}
		out = append(out, n)
	}
	return out, nil
}

func readUint(path string) uint64 {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseUint(strings.TrimSpace(string(data)), 10, 64)
	return n
}

// keyed reads the value of key in a "key value" per line file.
func keyed(path, key string) uint64 {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == key {
			n, _ := strconv.ParseUint(f[1], 10, 64)
			return n
		}
	}
	return 0
}
