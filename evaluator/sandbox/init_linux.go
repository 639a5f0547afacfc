package sandbox

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// init turns a re-executed binary into a sandbox init before anything else
// of the program runs: the cacheon command and test binaries alike.
func init() {
	if len(os.Args) > 0 && os.Args[0] == InitName {
		// Capability and no_new_privs state is per thread; everything from
		// here to the last exec stays on the main thread.
		runtime.LockOSThread()
		os.Exit(initMain())
	}
}

// initMain runs inside the new namespaces as the namespace's root.
func initMain() int {
	statusOut := os.NewFile(4, "status")
	report := func(st status) {
		b, _ := json.Marshal(st)
		_, _ = statusOut.Write(append(b, '\n'))
	}
	cfgIn := os.NewFile(3, "config")
	data, err := io.ReadAll(io.LimitReader(cfgIn, 16<<20))
	cfgIn.Close()
	var cfg config
	if err == nil {
		err = json.Unmarshal(data, &cfg)
	}
	if err != nil {
		report(status{Error: "reading the config: " + err.Error()})
		return 125
	}
	s := cfg.Spec
	// The controller moved the init into the sandbox's control group
	// before it sent the config: a cgroup namespace rooted there shows the
	// processes their own group as / and nothing of the host's tree.
	if err := unix.Unshare(unix.CLONE_NEWCGROUP); err != nil {
		report(status{Error: "cgroup namespace: " + err.Error()})
		return 125
	}
	// Nothing the init holds (the status pipe above all, and other
	// processes' control pipes) may leak into a process it starts.
	if entries, err := os.ReadDir("/proc/self/fd"); err == nil {
		for _, e := range entries {
			if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
				unix.CloseOnExec(fd)
			}
		}
	}
	files, err := setup(&s)
	if err != nil {
		report(status{Error: err.Error()})
		return 125
	}
	return supervise(&s, cfg.ControlFD, cfg.SessionFD, cfg.FilesFD, files, report)
}

// setup builds the sandbox's root, enters it, opens each process's stdio
// and drops every privilege. It returns the stdio files per process.
func setup(s *Spec) ([][3]*os.File, error) {
	if err := buildRoot(s); err != nil {
		return nil, err
	}
	if err := loopbackUp(); err != nil {
		return nil, fmt.Errorf("loopback: %w", err)
	}
	_ = unix.Sethostname([]byte(sandboxHostname))
	files := make([][3]*os.File, len(s.Procs))
	for i, p := range s.Procs {
		var err error
		if files[i][0], err = openStdio(p.Stdin, os.O_RDONLY); err != nil {
			return nil, err
		}
		if files[i][1], err = openStdio(p.Stdout, os.O_WRONLY|os.O_CREATE|os.O_TRUNC); err != nil {
			return nil, err
		}
		if files[i][2], err = openStdio(p.Stderr, os.O_WRONLY|os.O_CREATE|os.O_TRUNC); err != nil {
			return nil, err
		}
	}
	if err := setLimits(s.Limits); err != nil {
		return nil, err
	}
	if err := dropPrivileges(); err != nil {
		return nil, err
	}
	return files, nil
}

func openStdio(path string, flag int) (*os.File, error) {
	if path == "" {
		path = "/dev/null"
	}
	f, err := os.OpenFile(path, flag|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return nil, fmt.Errorf("stdio: %w", err)
	}
	return f, nil
}

// buildRoot assembles the new root on s.Root from the allow-list
// (allowlist_linux.go) and the Spec's paths, and pivots into it.
func buildRoot(s *Spec) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make / private: %w", err)
	}
	root := s.Root
	at := func(p string) string { return filepath.Join(root, p) }
	if err := buildAllowListRoot(root, s); err != nil {
		return err
	}
	type bind struct {
		path     string
		writable bool
	}
	var binds []bind
	for _, p := range s.ReadOnly {
		binds = append(binds, bind{p, false})
	}
	for _, p := range s.Writable {
		binds = append(binds, bind{p, true})
	}
	// Parents before children, so a writable directory inside a read-only
	// one stays writable.
	sort.SliceStable(binds, func(i, j int) bool { return len(binds[i].path) < len(binds[j].path) })
	inHidden := func(p string) bool {
		for _, h := range s.Hide {
			if within(p, h) {
				return true
			}
		}
		return false
	}
	// Paths outside the hidden directories first: one of them may hold a
	// hidden directory (an interpreter's root holding the checkout the
	// run directory lies in), which must be covered after it is bound.
	for _, b := range binds {
		if !inHidden(b.path) {
			if err := bindPath(b.path, at(b.path), b.writable); err != nil {
				return err
			}
		}
	}
	// Hidden directories: an empty tmpfs, made read-only once the given
	// paths inside it are bound.
	var hidden []string
	for _, h := range s.Hide {
		fi, err := os.Stat(at(h))
		if err != nil || !fi.IsDir() {
			continue // out of sight already: the allow-list root lacks it
		}
		if err := unix.Mount("tmpfs", at(h), "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size=1m,mode=755"); err != nil {
			return fmt.Errorf("hide %s: %w", h, err)
		}
		hidden = append(hidden, at(h))
	}
	for _, b := range binds {
		if inHidden(b.path) {
			if err := bindPath(b.path, at(b.path), b.writable); err != nil {
				return err
			}
		}
	}
	// The root tmpfs itself last: nothing may be created beside the
	// bound paths.
	for _, h := range append(hidden, at("/dev"), root) {
		if err := setattr(h, unix.MOUNT_ATTR_RDONLY, false); err != nil {
			return fmt.Errorf("read-only %s: %w", h, err)
		}
	}
	if err := os.Chdir(root); err != nil {
		return err
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("pivot_root: %w", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detach the old root: %w", err)
	}
	return os.Chdir("/")
}

func setattr(path string, attr uint64, recursive bool) error {
	flags := uint(0)
	if recursive {
		flags = unix.AT_RECURSIVE
	}
	return unix.MountSetattr(unix.AT_FDCWD, path, flags, &unix.MountAttr{Attr_set: attr})
}

// bindPath binds host path src at dst (inside the new root), creating the
// mount point where it lies on a tmpfs of ours.
func bindPath(src, dst string, writable bool) error {
	fi, err := os.Stat(src)
	if err != nil {
		return fmt.Errorf("bind %s: %w", src, err)
	}
	if _, err := os.Lstat(dst); err != nil {
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return fmt.Errorf("bind %s: %w", src, err)
		}
		if fi.IsDir() {
			err = os.Mkdir(dst, 0o755)
		} else {
			var f *os.File
			if f, err = os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
				f.Close()
			}
		}
		if err != nil {
			return fmt.Errorf("bind %s: %w", src, err)
		}
	}
	if err := unix.Mount(src, dst, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind %s: %w", src, err)
	}
	attr := uint64(unix.MOUNT_ATTR_NOSUID)
	if !writable {
		attr |= unix.MOUNT_ATTR_RDONLY
	}
	if err := setattr(dst, attr, true); err != nil {
		return fmt.Errorf("bind %s: %w", src, err)
	}
	return nil
}

// buildDev mounts a tmpfs /dev holding the basic nodes and the given
// devices, each bound from the host (a user namespace cannot mknod).
func buildDev(root string, s *Spec) error {
	dev := filepath.Join(root, "dev")
	if err := os.MkdirAll(dev, 0o755); err != nil {
		return err
	}
	if err := unix.Mount("tmpfs", dev, "tmpfs", unix.MS_NOSUID, "size=1m,mode=755"); err != nil {
		return fmt.Errorf("mount /dev: %w", err)
	}
	nodes := []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"}
	nodes = append(nodes, s.Devices...)
	for _, n := range nodes {
		if !strings.HasPrefix(n, "/dev/") {
			return fmt.Errorf("device %s is not under /dev", n)
		}
		dst := filepath.Join(root, n)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return fmt.Errorf("device %s: %w", n, err)
		}
		f.Close()
		if err := unix.Mount(n, dst, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("device %s: %w", n, err)
		}
	}
	for _, d := range []string{"shm", "mqueue", "pts"} {
		if err := os.Mkdir(filepath.Join(dev, d), 0o755); err != nil {
			return err
		}
	}
	if err := unix.Mount("tmpfs", filepath.Join(dev, "shm"), "tmpfs", unix.MS_NOSUID|unix.MS_NODEV,
		fmt.Sprintf("size=%d,mode=1777", s.Limits.TmpSize)); err != nil {
		return fmt.Errorf("mount /dev/shm: %w", err)
	}
	for name, target := range map[string]string{"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0",
		"stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2"} {
		if err := os.Symlink(target, filepath.Join(dev, name)); err != nil {
			return err
		}
	}
	return nil
}

// loopbackUp brings up lo, the only interface of the new network
// namespace (collective ranks rendezvous over it).
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	req, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, req); err != nil {
		return err
	}
	req.SetUint16(req.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, req)
}

func setLimits(l Limits) error {
	for _, r := range []struct {
		res  int
		name string
		v    uint64
	}{
		{unix.RLIMIT_DATA, "memory", l.Memory},
		{unix.RLIMIT_NPROC, "processes", l.Processes},
		{unix.RLIMIT_NOFILE, "open files", l.OpenFiles},
		{unix.RLIMIT_FSIZE, "file size", l.FileSize},
		{unix.RLIMIT_CORE, "core dumps", 0},
	} {
		if err := unix.Setrlimit(r.res, &unix.Rlimit{Cur: r.v, Max: r.v}); err != nil {
			return fmt.Errorf("limit %s: %w", r.name, err)
		}
	}
	return nil
}

// dropPrivileges leaves the calling thread (and so every process it
// starts) with no capabilities it could regain: the bounding set emptied,
// root no longer special at exec, no_new_privs, then the Landlock scopes
// and the seccomp filter.
func dropPrivileges() error {
	// NOROOT and NO_SETUID_FIXUP set, and those two and KEEP_CAPS locked:
	// uid 0 gains nothing at exec, and nothing can turn that off.
	const secbits = 1<<0 | 1<<1 | 1<<2 | 1<<3 | 1<<5
	if err := unix.Prctl(unix.PR_SET_SECUREBITS, secbits, 0, 0, 0); err != nil {
		return fmt.Errorf("securebits: %w", err)
	}
	for c := 0; c <= 63; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
			if err == unix.EINVAL {
				break // past the last capability this kernel knows
			}
			return fmt.Errorf("drop capability %d: %w", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("ambient capabilities: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if err := restrictScopes(); err != nil {
		return err
	}
	return loadFilter()
}

// supervise starts every process, reaps everything that ends in the
// namespace (orphans are re-parented to us), and reports each process's
// end. Returning ends the namespace: the kernel kills what is left.
func supervise(s *Spec, controlFD []int, sessionFD [][2]int, filesFD [][]int, files [][3]*os.File, report func(status)) int {
	pids := map[int]int{} // pid -> index
	for i, p := range s.Procs {
		fds := []uintptr{files[i][0].Fd(), files[i][1].Fd(), files[i][2].Fd()}
		control := ^uintptr(0) // closed in the child
		if i < len(controlFD) && controlFD[i] > 0 {
			control = uintptr(controlFD[i])
		}
		fds = append(fds, control)
		if i < len(sessionFD) && sessionFD[i][0] > 0 {
			fds = append(fds, uintptr(sessionFD[i][0]), uintptr(sessionFD[i][1]))
		}
		if i < len(filesFD) && len(filesFD[i]) > 0 {
			for len(fds) < 6 {
				fds = append(fds, ^uintptr(0)) // no session pipes: closed
			}
			for _, fd := range filesFD[i] {
				fds = append(fds, uintptr(fd))
			}
		}
		attr := &syscall.ProcAttr{Dir: p.Dir, Env: p.Env, Files: fds,
			Sys: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}}
		pid, err := syscall.ForkExec(p.Path, p.Args, attr)
		if err != nil {
			fmt.Fprintf(files[i][2], "cacheon sandbox: start %s: %v\n", p.Path, err)
			report(status{Proc: i, Started: false, Code: 127})
			if s.StopOnFailure {
				_ = syscall.Kill(-1, syscall.SIGKILL)
				return 0
			}
			continue
		}
		pids[pid] = i
		report(status{Proc: i, Started: true, Running: true})
	}
	for _, f := range files {
		for _, x := range f {
			x.Close()
		}
	}
	// The processes hold the only other ends: a pipe ends when its
	// process closes it or exits.
	for _, fd := range controlFD {
		if fd > 0 {
			_ = syscall.Close(fd)
		}
	}
	for _, fds := range sessionFD {
		for _, fd := range fds {
			if fd > 0 {
				_ = syscall.Close(fd)
			}
		}
	}
	for _, fds := range filesFD {
		for _, fd := range fds {
			_ = syscall.Close(fd)
		}
	}
	stopping := false
	for len(pids) > 0 {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, 0, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			break
		}
		i, ours := pids[pid]
		if !ours {
			continue // an orphan re-parented to us
		}
		delete(pids, pid)
		st := status{Proc: i, Started: true, Code: ws.ExitStatus(), Stopped: stopping}
		if ws.Signaled() {
			st.Code, st.Signal = -1, SignalName(ws.Signal())
		}
		report(st)
		if s.StopOnFailure && !stopping && (st.Code != 0 || st.Signal != "") {
			stopping = true
			// -1: every process of the namespace but us.
			_ = syscall.Kill(-1, syscall.SIGKILL)
		}
	}
	return 0
}

// SignalName names the signals a worker commonly dies of.
func SignalName(sig syscall.Signal) string {
	names := map[syscall.Signal]string{
		syscall.SIGSEGV: "SIGSEGV", syscall.SIGABRT: "SIGABRT", syscall.SIGKILL: "SIGKILL",
		syscall.SIGBUS: "SIGBUS", syscall.SIGFPE: "SIGFPE", syscall.SIGILL: "SIGILL",
		syscall.SIGTERM: "SIGTERM", syscall.SIGINT: "SIGINT", syscall.SIGPIPE: "SIGPIPE",
		syscall.SIGXFSZ: "SIGXFSZ", syscall.SIGSYS: "SIGSYS",
	}
	if n, ok := names[sig]; ok {
		return n
	}
	return fmt.Sprintf("signal %d", int(sig))
}
