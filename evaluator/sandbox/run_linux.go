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
	"syscall"
	"time"
)

// config is what the controller sends the init on fd 3.
type config struct {
	Spec Spec `json:"spec"`
	// ControlFD[i] is the init's fd of process i's control pipe, or 0.
	ControlFD []int `json:"control_fd"`
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
// given. When the controller is root that user is another one, for whom a
// 0700 directory on the way (os.MkdirTemp makes them) is a wall.
func checkReachable(s *Spec) error {
	if os.Geteuid() != 0 {
		return nil
	}
	paths := append([]string{s.Root}, s.ReadOnly...)
	paths = append(paths, s.Writable...)
	for _, p := range s.Procs {
		paths = append(paths, p.Path)
	}
	for _, p := range paths {
		for d := filepath.Dir(p); ; d = filepath.Dir(d) {
			fi, err := os.Stat(d)
			if err != nil {
				break // missing: the init reports it with its context
			}
			if fi.Mode().Perm()&0o001 == 0 {
				return fmt.Errorf("sandbox: %s (on the way to %s) is mode %04o: the sandbox user cannot pass it "+
					"(make it 0711, see SearchableDir)", d, p, fi.Mode().Perm())
			}
			if d == "/" || d == "." {
				break
			}
		}
	}
	return nil
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
	res := Result{Exits: make([]Exit, len(s.Procs))}
	if err := s.check(); err != nil {
		return res, err
	}
	s.Limits = s.Limits.withDefaults()
	if err := checkReachable(&s); err != nil {
		return res, err
	}
	cfgR, cfgW, err := os.Pipe()
	if err != nil {
		return res, err
	}
	defer cfgR.Close()
	defer cfgW.Close()
	stR, stW, err := os.Pipe()
	if err != nil {
		return res, err
	}
	defer stR.Close()
	defer stW.Close()

	var log io.Writer = io.Discard
	if s.Log != "" {
		f, err := os.Create(s.Log)
		if err != nil {
			return res, fmt.Errorf("sandbox log: %w", err)
		}
		defer f.Close()
		log = f
	}
	// Control pipes: the write ends go to the init (fds 5...), which hands
	// each to its process as fd 3; the read ends stay here.
	extra := []*os.File{cfgR, stW}
	controlFD := make([]int, len(s.Procs))
	controls := make([]chan []byte, len(s.Procs))
	for i, p := range s.Procs {
		if !p.Control {
			continue
		}
		r, w, err := os.Pipe()
		if err != nil {
			return res, err
		}
		defer r.Close()
		defer w.Close()
		controlFD[i] = 3 + len(extra)
		extra = append(extra, w)
		controls[i] = make(chan []byte, 1)
		go func(c chan<- []byte) { c <- readControl(r) }(controls[i])
	}
	uid, gid := HostUser()
	cmd := &exec.Cmd{
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
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return res, fmt.Errorf("%w: cannot create namespaces (%v); run where user namespaces are allowed "+
			"(sysctl kernel.unprivileged_userns_clone=1, user.max_user_namespaces > 0)", ErrUnavailable, err)
	}
	for _, f := range extra {
		f.Close()
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	cfg, err := json.Marshal(config{Spec: s, ControlFD: controlFD})
	if err == nil {
		_, err = cfgW.Write(cfg)
	}
	cfgW.Close()
	if err != nil {
		_ = cmd.Process.Kill()
		<-done
		return res, fmt.Errorf("sandbox config: %w", err)
	}

	lines := make(chan status)
	go func() {
		defer close(lines)
		// A line is small; a longer one is not the init's.
		sc := bufio.NewScanner(stR)
		sc.Buffer(make([]byte, 4096), 64*1024)
		for sc.Scan() {
			var st status
			if json.Unmarshal(sc.Bytes(), &st) == nil {
				lines <- st
			}
		}
	}()

	var timer <-chan time.Time
	if s.Timeout > 0 {
		t := time.NewTimer(s.Timeout)
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
		pending := lines
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
			_ = cmd.Process.Kill()
			timer = nil
		case <-ctx.Done():
			res.Canceled = true
			_ = cmd.Process.Kill()
		case waitErr = <-done:
			exited = true
		}
		if res.Canceled && ctx.Done() != nil {
			ctx = context.Background()
		}
	}
	// Drain what the init wrote before it ended: the pipe closes with it.
	for !drained {
		st, ok := <-lines
		if !ok {
			break
		}
		record(st)
	}
	res.Duration = time.Since(start)
	for i, c := range controls {
		if c != nil {
			res.Exits[i].Control = <-c
		}
	}
	if setupErr != "" {
		return res, &SetupError{Msg: setupErr}
	}
	if waitErr != nil && !res.TimedOut && !res.Canceled {
		var ee *exec.ExitError
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
