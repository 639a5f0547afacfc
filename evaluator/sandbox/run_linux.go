package sandbox

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cacheon/engine/evaluator/sandbox/cgroup"
)

// config is what the controller sends the init on fd 3.
type config struct {
	Spec Spec `json:"spec"`
	// ControlFD[i] is the init's fd of process i's control pipe, or 0.
	ControlFD []int `json:"control_fd"`
	// SessionFD[i] are the init's fds of process i's session pipes (its
	// fd 4 and fd 5), or zeros.
	SessionFD [][2]int `json:"session_fd"`
	// FilesFD[i] are the init's fds of process i's Files (its fds 6...).
	FilesFD [][]int `json:"files_fd"`
}

// status is one line the init writes on fd 4: a set-up failure, or the end
// of one process.
type status struct {
	Error   string `json:"error,omitempty"`
	Proc    int    `json:"proc"`
	Started bool   `json:"started,omitempty"`
	Code    int    `json:"code"`
	Signal  string `json:"signal,omitempty"`
	Stopped bool   `json:"stopped,omitempty"`
	Running bool   `json:"running,omitempty"` // started, not ended yet
}

// cloneFlags are the namespaces every sandbox gets.
const cloneFlags = syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID | syscall.CLONE_NEWNET |
	syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS | syscall.CLONE_NEWCGROUP

// HostUser is the host uid and gid the sandbox's root maps to: 65534
// (nobody) when the controller is root, so nothing inside runs with a host
// identity that owns anything; the caller's own ids otherwise (an
// unprivileged user namespace can map only those).
func HostUser() (uid, gid int) {
	if os.Geteuid() == 0 {
		return 65534, 65534
	}
	return os.Geteuid(), os.Getegid()
}

// PrepareWritable makes dir (created if missing) owned by the sandbox user,
// so processes inside can write it.
func PrepareWritable(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	uid, gid := HostUser()
	if os.Geteuid() == 0 {
		if err := os.Chown(dir, uid, gid); err != nil {
			return fmt.Errorf("sandbox: %w", err)
		}
	}
	return nil
}

// checkReachable makes sure the sandbox user can reach every path it is
// given, and run every process's executable. When the controller is root
// that user is another one, for whom a 0700 directory on the way
// (os.MkdirTemp makes them) is a wall.
func checkReachable(s *Spec) error {
	if os.Geteuid() != 0 {
		return nil
	}
	paths := append([]string{s.Root}, s.ReadOnly...)
	paths = append(paths, s.Writable...)
	for _, p := range paths {
		if err := reachable(p); err != nil {
			return err
		}
	}
	for _, p := range s.Procs {
		if err := executable(p.Path); err != nil {
			return err
		}
	}
	return nil
}

// Executable reports why the sandbox user could not run the program at
// path, or nil: every directory on the way to it must let others pass,
// on the path as named and on the one its symlinks resolve to (the
// sandbox sees the host's root, and the kernel follows the links as that
// user), and the file it resolves to must let others execute it. It is
// the check Start makes of every process's executable, for callers that
// choose one before any sandbox starts (the worker interpreter). Nil when
// the controller is not root: the sandbox user is then the caller itself.
func Executable(path string) error {
	if os.Geteuid() != 0 {
		return nil
	}
	return executable(path)
}

func executable(path string) error {
	if err := reachable(path); err != nil {
		return err
	}
	resolved, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil // missing: the init reports it with its context
	}
	fi, err := os.Stat(resolved)
	if err != nil {
		return nil
	}
	if fi.Mode().Perm()&0o001 == 0 {
		return fmt.Errorf("sandbox: %s is mode %04o: the sandbox user cannot execute it", describe(path, resolved), fi.Mode().Perm())
	}
	return nil
}

// reachable checks the directories on the way to p, as named and, when
// they differ, as its symlinks resolve.
func reachable(p string) error {
	if err := passable(p, p); err != nil {
		return err
	}
	if resolved, err := filepath.EvalSymlinks(p); err == nil && resolved != filepath.Clean(p) {
		return passable(resolved, describe(p, resolved))
	}
	return nil
}

// passable checks that others may pass every directory on the way to p;
// what names p in the message.
func passable(p, what string) error {
	for d := filepath.Dir(p); ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			break // missing: the init reports it with its context
		}
		if fi.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("sandbox: %s (on the way to %s) is mode %04o: the sandbox user cannot pass it "+
				"(make it 0711, see SearchableDir)", d, what, fi.Mode().Perm())
		}
		if d == "/" || d == "." {
			break
		}
	}
	return nil
}

// describe names a path and, when a symlink leads elsewhere, its target.
func describe(path, resolved string) string {
	if resolved == filepath.Clean(path) {
		return path
	}
	return path + " (-> " + resolved + ")"
}

// SearchableDir lets the sandbox user pass through dir (mode 0711: no
// listing), as the directories os.MkdirTemp makes do not.
func SearchableDir(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	return os.Chmod(dir, fi.Mode().Perm()|0o111)
}

// Run starts the sandbox, waits for every process in it to end, and
// returns how each ended. The sandbox's init is killed (and with it
// everything inside) when the timeout passes or ctx ends. The error is an
// infrastructure failure: the sandbox could not be made (wrapping
// ErrUnavailable when namespaces are refused) or set up (*SetupError).
func Run(ctx context.Context, s Spec) (Result, error) {
	sb, err := Start(ctx, s)
	if err != nil {
		return Result{Exits: make([]Exit, len(s.Procs))}, err
	}
	return sb.Wait()
}

// Sandbox is a started sandbox: its processes run until they end, the
// timeout passes, the context ends or Kill is called. Wait must be called
// once to release it.
type Sandbox struct {
	ctx      context.Context
	spec     Spec
	cmd      *exec.Cmd
	start    time.Time
	done     chan error
	lines    chan status
	controls []chan []byte
	sessions []*Session
	closers  []*os.File
	killed   atomic.Bool
	group    *cgroup.Group // the sandbox's control group (cgroup_linux.go)
	work     []workMount   // its bounded writable directories (workdir_linux.go)
	released sync.Once
	relErr   error
}

// release removes the sandbox's group and brings its work directories
// back onto the disk, once, after the init has ended.
func (sb *Sandbox) release() error {
	sb.released.Do(func() {
		var errs []error
		if sb.group != nil {
			errs = append(errs, sb.group.Remove())
		}
		errs = append(errs, unmountWork(sb.work))
		sb.relErr = errors.Join(errs...)
	})
	return sb.relErr
}

// Start makes the sandbox and starts its processes; it does not wait for
// them. The errors are those of Run.
func Start(ctx context.Context, s Spec) (_ *Sandbox, err error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	s.Limits = s.Limits.withDefaults()
	if err := checkLandlock(); err != nil {
		return nil, err
	}
	if err := checkReachable(&s); err != nil {
		return nil, err
	}
	sb := &Sandbox{ctx: ctx, spec: s, controls: make([]chan []byte, len(s.Procs)), sessions: make([]*Session, len(s.Procs))}
	// childEnds are the init's ends of every pipe: closed here once the
	// init holds them. keep are ours, closed by Wait (or now, on failure).
	var childEnds []*os.File
	defer func() {
		for _, f := range childEnds {
			f.Close()
		}
		if err != nil {
			sb.closeOurs()
			// The init is dead by now (every failure after its start
			// kills and reaps it).
			_ = sb.release()
		}
	}()
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		return r, w, err
	}
	cfgR, cfgW, err := pipe()
	if err != nil {
		return nil, err
	}
	childEnds = append(childEnds, cfgR)
	sb.closers = append(sb.closers, cfgW)
	stR, stW, err := pipe()
	if err != nil {
		return nil, err
	}
	childEnds = append(childEnds, stW)
	sb.closers = append(sb.closers, stR)

	var log io.Writer = io.Discard
	if s.Log != "" {
		f, err := os.Create(s.Log)
		if err != nil {
			return nil, fmt.Errorf("sandbox log: %w", err)
		}
		sb.closers = append(sb.closers, f)
		log = f
	}
	// Control and session pipes: the process's ends go to the init (fds
	// 5...), which hands them on as fds 3, 4 and 5; the others stay here.
	extra := []*os.File{cfgR, stW}
	controlFD := make([]int, len(s.Procs))
	sessionFD := make([][2]int, len(s.Procs))
	filesFD := make([][]int, len(s.Procs))
	for i, p := range s.Procs {
		if p.Control {
			r, w, err := pipe()
			if err != nil {
				return nil, err
			}
			childEnds = append(childEnds, w)
			sb.closers = append(sb.closers, r)
			controlFD[i] = 3 + len(extra)
			extra = append(extra, w)
			sb.controls[i] = make(chan []byte, 1)
			go func(c chan<- []byte) { c <- readControl(r) }(sb.controls[i])
		}
		if p.Session {
			inR, inW, err := pipe()
			if err != nil {
				return nil, err
			}
			outR, outW, err := pipe()
			if err != nil {
				inR.Close()
				inW.Close()
				return nil, err
			}
			childEnds = append(childEnds, inR, outW)
			sessionFD[i] = [2]int{3 + len(extra), 4 + len(extra)}
			extra = append(extra, inR, outW)
			sb.sessions[i] = &Session{Send: inW, Frames: outR}
		}
		for _, f := range p.Files {
			filesFD[i] = append(filesFD[i], 3+len(extra))
			extra = append(extra, f)
		}
	}
	uid, gid := HostUser()
	sb.cmd = &exec.Cmd{
		Path:       "/proc/self/exe",
		Args:       []string{InitName},
		Env:        []string{},
		Dir:        "/",
		Stdout:     log,
		Stderr:     log,
		ExtraFiles: extra,
		SysProcAttr: &syscall.SysProcAttr{
			Cloneflags:                 cloneFlags,
			UidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: uid, Size: 1}},
			GidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: gid, Size: 1}},
			GidMappingsEnableSetgroups: false,
			// The child starts with the controller's host identity; only
			// once it becomes the namespace's root (the mapped user) does
			// the exec keep its capabilities inside the namespace.
			Credential: &syscall.Credential{Uid: 0, Gid: 0, NoSetGroups: true},
			Pdeathsig:  syscall.SIGKILL,
			Setpgid:    true,
		},
	}
	if sb.group, err = newGroup(&s); err != nil {
		return nil, err
	}
	if sb.work, err = mountWork(s.Writable, s.Limits); err != nil {
		return nil, err
	}
	sb.start = time.Now()
	if err := sb.cmd.Start(); err != nil {
		return nil, fmt.Errorf("%w: cannot create namespaces (%v); run where user namespaces are allowed "+
			"(sysctl kernel.unprivileged_userns_clone=1, user.max_user_namespaces > 0)", ErrUnavailable, err)
	}
	sb.done = make(chan error, 1)
	go func() { sb.done <- sb.cmd.Wait() }()
	// The init waits for its config before it does anything: it is in the
	// group before any process of the sandbox exists.
	if err := sb.group.Add(sb.cmd.Process.Pid); err != nil {
		cfgW.Close()
		_ = sb.cmd.Process.Kill()
		<-sb.done
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}

	cfg, err := json.Marshal(config{Spec: s, ControlFD: controlFD, SessionFD: sessionFD, FilesFD: filesFD})
	if err == nil {
		_, err = cfgW.Write(cfg)
	}
	cfgW.Close()
	if err != nil {
		_ = sb.cmd.Process.Kill()
		<-sb.done
		return nil, fmt.Errorf("sandbox config: %w", err)
	}

	sb.lines = make(chan status)
	go func() {
		defer close(sb.lines)
		// A line is small; a longer one is not the init's.
		sc := bufio.NewScanner(stR)
		sc.Buffer(make([]byte, 4096), 64*1024)
		for sc.Scan() {
			var st status
			if json.Unmarshal(sc.Bytes(), &st) == nil {
				sb.lines <- st
			}
		}
	}()
	return sb, nil
}

// Session is the controller's end of process i's session pipes, nil when
// the process was not started with Session.
func (sb *Sandbox) Session(i int) *Session { return sb.sessions[i] }

// Pid is the sandbox's init process in the caller's PID namespace: the
// root of every process the sandbox runs, for the caller's accounting.
func (sb *Sandbox) Pid() int { return sb.cmd.Process.Pid }

// Kill ends the sandbox now: the init and everything inside it die. Wait
// still reports how each process ended.
func (sb *Sandbox) Kill() {
	sb.killed.Store(true)
	_ = sb.cmd.Process.Kill()
}

func (sb *Sandbox) closeOurs() {
	for _, f := range sb.closers {
		f.Close()
	}
	for _, ss := range sb.sessions {
		if ss != nil {
			ss.Send.Close()
			ss.Frames.Close()
		}
	}
}

// Wait waits for every process to end (or the timeout, or the context)
// and returns how each ended; the errors are those of Run.
func (sb *Sandbox) Wait() (Result, error) {
	defer sb.closeOurs()
	s, ctx := sb.spec, sb.ctx
	res := Result{Exits: make([]Exit, len(s.Procs))}
	var timer <-chan time.Time
	if s.Timeout > 0 {
		t := time.NewTimer(s.Timeout - time.Since(sb.start))
		defer t.Stop()
		timer = t.C
	}
	var setupErr string
	record := func(st status) {
		switch {
		case st.Error != "":
			setupErr = st.Error
		case st.Proc < 0 || st.Proc >= len(res.Exits):
		case st.Running:
			// Until its end is reported, a started process counts as
			// killed with its sandbox.
			res.Exits[st.Proc] = Exit{Started: true, Code: -1, Signal: "SIGKILL"}
		default:
			res.Exits[st.Proc] = Exit{Started: st.Started, Code: st.Code, Signal: st.Signal, Stopped: st.Stopped}
		}
	}
	var waitErr error
	exited, drained := false, false
	for !exited {
		pending := sb.lines
		if drained {
			pending = nil
		}
		select {
		case st, ok := <-pending:
			if !ok {
				drained = true
				continue
			}
			record(st)
		case <-timer:
			res.TimedOut = true
			_ = sb.cmd.Process.Kill()
			timer = nil
		case <-ctx.Done():
			res.Canceled = true
			_ = sb.cmd.Process.Kill()
		case waitErr = <-sb.done:
			exited = true
		}
		if res.Canceled && ctx.Done() != nil {
			ctx = context.Background()
		}
	}
	// Drain what the init wrote before it ended: the pipe closes with it.
	for !drained {
		st, ok := <-sb.lines
		if !ok {
			break
		}
		record(st)
	}
	res.Duration = time.Since(sb.start)
	res.Killed = sb.killed.Load()
	// The init has ended, and with it every process of its PID namespace:
	// the group is empty, and its counters are final.
	res.Bounds = sb.group.Stats()
	// A root controller bounds every writable directory, or fails Start.
	res.WorkBounded = os.Geteuid() == 0
	releaseErr := sb.release()
	// Pages a worker wrote to a tmpfs belong to no process: when they fill
	// the group, the kernel's choice of a task to kill can fall on the
	// init, whose namespace then takes every process with it. That is the
	// sandbox exceeding its memory bound, not a failed set-up.
	var ee *exec.ExitError
	if errors.As(waitErr, &ee) && res.Bounds.OOMKills > 0 {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			res.OutOfMemory = true
		}
	}
	if res.Killed || res.TimedOut || res.Canceled || res.OutOfMemory {
		// A process can run (and talk on its session pipes) before the init
		// reports that it started; killed in that window, it has no record
		// at all. It was killed with its sandbox like any other.
		for i, e := range res.Exits {
			if !e.Started && e.Code == 0 && e.Signal == "" && !e.Stopped {
				res.Exits[i] = Exit{Code: -1, Signal: "SIGKILL"}
			}
		}
	}
	for i, c := range sb.controls {
		if c != nil {
			res.Exits[i].Control = <-c
		}
	}
	if setupErr != "" {
		return res, &SetupError{Msg: setupErr}
	}
	if releaseErr != nil {
		// A task that outlived the init's namespace (nothing may), or a
		// work directory whose contents did not come back.
		return res, fmt.Errorf("sandbox end: %w", releaseErr)
	}
	if waitErr != nil && !res.TimedOut && !res.Canceled && !res.Killed && !res.OutOfMemory {
		if !errors.As(waitErr, &ee) {
			return res, fmt.Errorf("wait for sandbox: %w", waitErr)
		}
		return res, &SetupError{Msg: fmt.Sprintf("init %s", ee.ProcessState)}
	}
	return res, nil
}

// readControl reads a control pipe to its end, keeping the first
// ControlLimit bytes and discarding the rest so the writer never blocks.
func readControl(r io.Reader) []byte {
	data, _ := io.ReadAll(io.LimitReader(r, ControlLimit))
	_, _ = io.Copy(io.Discard, r)
	return data
}

// Available reports whether sandboxes can be made here, by running one
// that runs /bin/true. The error wraps ErrUnavailable.
func Available(root string) error {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	res, err := Run(context.Background(), Spec{Root: root, Procs: []Proc{{Path: "/bin/true", Args: []string{"true"}, Dir: "/"}},
		Timeout: 30 * time.Second})
	if err != nil {
		if errors.Is(err, ErrUnavailable) {
			return err
		}
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	if e := res.Exits[0]; !e.Started || e.Code != 0 {
		return fmt.Errorf("%w: a trial process exited with code %d %s", ErrUnavailable, e.Code, e.Signal)
	}
	return nil
}
