package worker

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cacheon/engine/evaluator/sandbox"
	"github.com/cacheon/engine/evaluator/sandbox/cgroup"
)

// SessionSpec is a long-lived worker process the controller converses
// with: an engine serving batches. It runs Module from Root (a directory
// from EngineRoot or ValidatorRoot) with Args, contained as any worker is.
type SessionSpec struct {
	Python  string
	Root    string
	Module  string
	Args    []string
	WorkDir string // created if missing; the process's cwd, stdout.log and stderr.log
	Env     []string
	// ReadOnly host paths it reads (the engine tree, the model);
	// Writable directories it writes besides WorkDir.
	ReadOnly []string
	Writable []string
	// Timeout bounds the whole session; 0 = none.
	Timeout time.Duration
}

// Session environment: which fds carry the conversation.
const (
	SessionRequestFD = 4
	SessionFrameFD   = 5
	sessionEnv       = "CACHEON_SESSION_FDS=4,5"
)

// MaxFrameBytes bounds one frame line a session may write: a longer line
// is not a frame, and reading it must not cost the controller unbounded
// memory.
const MaxFrameBytes = 64 << 20

// Session is a running session worker.
type Session struct {
	send   io.WriteCloser
	frames *bufio.Reader
	wait   func() (Outcome, error)
	kill   func()
	pid    int // the session's process, or its sandbox's init, in the controller's PID namespace
	// threads and bounds read a sandboxed session's tasks and group
	// counters (nil unisolated); serving is its process, once found
	// (stall.go).
	threads func() ([]sandbox.Thread, error)
	bounds  func() cgroup.Stats
	serving int
	once    sync.Once
	out     Outcome
	err     error
}

// ErrFrame marks a frame the controller refused to read (too long, or the
// session ended mid-line).
var ErrFrame = errors.New("session frame refused")

// Send writes one request line.
func (s *Session) Send(line []byte) error {
	if _, err := s.send.Write(append(append([]byte{}, line...), '\n')); err != nil {
		return fmt.Errorf("session request: %w", err)
	}
	return nil
}

// Frame reads the next frame line; io.EOF when the session closed its
// frames cleanly.
func (s *Session) Frame() ([]byte, error) {
	var line []byte
	for {
		chunk, err := s.frames.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > MaxFrameBytes {
			return nil, fmt.Errorf("%w: a line longer than %d bytes", ErrFrame, MaxFrameBytes)
		}
		switch {
		case err == nil:
			return line[:len(line)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(line) == 0:
			return nil, io.EOF
		case errors.Is(err, io.EOF):
			return nil, fmt.Errorf("%w: the session ended in the middle of a line", ErrFrame)
		default:
			return nil, fmt.Errorf("session frames: %w", err)
		}
	}
}

// Kill stops the session now; Close still reports how it ended.
func (s *Session) Kill() { s.kill() }

// CPUSeconds is the CPU time the session's whole process tree (its
// sandbox's init and everything under it) has consumed so far, read by the
// controller (TreeCPUSeconds).
func (s *Session) CPUSeconds() (float64, error) { return TreeCPUSeconds(s.pid) }

// Close ends the session's input, waits for it to exit (killing it if it
// has not within grace) and reports how it ended. Nothing it started
// outlives it.
func (s *Session) Close(grace time.Duration) (Outcome, error) {
	s.once.Do(func() {
		s.send.Close()
		done := make(chan struct{})
		go func() {
			select {
			case <-done:
			case <-time.After(grace):
				s.kill()
			}
		}()
		s.out, s.err = s.wait()
		close(done)
	})
	return s.out, s.err
}

// StartSession starts a session worker; it returns once the process is
// started, not once it is ready (that is the session's first frame).
func StartSession(ctx context.Context, iso Isolation, s SessionSpec) (*Session, error) {
	mk := os.MkdirAll
	if !iso.Unsafe {
		mk = func(dir string, _ os.FileMode) error { return sandbox.PrepareWritable(dir) }
	}
	if err := mk(s.WorkDir, 0o755); err != nil {
		return nil, fmt.Errorf("session directory: %w", err)
	}
	argv := moduleCommand(s.Python, s.Root, s.Module, s.Args)
	if iso.Unsafe {
		return startUnisolatedSession(ctx, s, argv)
	}
	spec := sandbox.Spec{Hide: iso.Hide, Devices: iso.Devices, Limits: iso.Limits, Timeout: s.Timeout,
		ReadOnly: dedupe(append([]string{s.Root}, s.ReadOnly...)), Writable: dedupe(append([]string{s.WorkDir}, s.Writable...))}
	if hidden(s.Python, iso.Hide) {
		spec.ReadOnly = append(spec.ReadOnly, s.Python)
	}
	roots, err := iso.Roots.Roots(ctx, s.Python)
	if err != nil {
		return nil, err
	}
	spec.ReadOnly = dedupe(append(spec.ReadOnly, roots...))
	redactor := Spec{Python: s.Python, ValidatorRoot: s.Root, WorkDir: s.WorkDir, ReadOnly: s.ReadOnly, Writable: s.Writable}.redactor(roots)
	spec.Procs = []sandbox.Proc{{Path: argv[0], Args: argv, Env: sandboxEnv(append([]string{sessionEnv}, s.Env...)), Dir: s.WorkDir,
		Stdout: filepath.Join(s.WorkDir, StdoutFile), Stderr: filepath.Join(s.WorkDir, StderrFile), Control: true, Session: true}}
	root, err := os.MkdirTemp(filepath.Dir(s.WorkDir), ".sandbox-")
	if err != nil {
		return nil, fmt.Errorf("sandbox root: %w", err)
	}
	if err := sandbox.SearchableDir(root); err != nil {
		os.Remove(root)
		return nil, err
	}
	spec.Root, spec.Log = root, root+".log"
	sb, err := sandbox.Start(ctx, spec)
	if err != nil {
		os.Remove(root)
		if log, _ := readTail(spec.Log, 2000); log != "" {
			err = fmt.Errorf("%w (sandbox log: %s)", err, log)
		}
		os.Remove(spec.Log)
		return nil, err
	}
	ss := sb.Session(0)
	return &Session{
		send:    ss.Send,
		frames:  bufio.NewReaderSize(ss.Frames, 1<<16),
		kill:    sb.Kill,
		pid:     sb.Pid(),
		threads: sb.Threads,
		bounds:  sb.Bounds,
		wait: func() (Outcome, error) {
			defer os.Remove(root)
			defer os.Remove(spec.Log)
			res, err := sb.Wait()
			e := res.Exits[0]
			out := Outcome{WorkDir: s.WorkDir, Duration: res.Duration, TimedOut: res.TimedOut, Canceled: res.Canceled || res.Killed,
				ExitCode: e.Code, Signal: e.Signal, CandidateCode: strings.Contains(string(e.Control), controlMark), Bounds: res.Bounds, redactor: redactor}
			if !e.Started {
				out.ExitCode = -1
			}
			capLogs(s.WorkDir)
			if err != nil {
				if log, _ := readTail(spec.Log, 2000); log != "" {
					err = fmt.Errorf("%w (sandbox log: %s)", err, log)
				}
			}
			return out, err
		},
	}, nil
}

// startUnisolatedSession is the unsafe mode: a plain child process in its
// own process group, with the same three pipes on fds 3, 4 and 5.
func startUnisolatedSession(ctx context.Context, s SessionSpec, argv []string) (*Session, error) {
	stdout, err := os.Create(filepath.Join(s.WorkDir, StdoutFile))
	if err != nil {
		return nil, fmt.Errorf("session stdout: %w", err)
	}
	defer stdout.Close()
	stderr, err := os.Create(filepath.Join(s.WorkDir, StderrFile))
	if err != nil {
		return nil, fmt.Errorf("session stderr: %w", err)
	}
	defer stderr.Close()
	var closeAfterStart []*os.File
	defer func() {
		for _, f := range closeAfterStart {
			f.Close()
		}
	}()
	controlR, controlW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		controlR.Close()
		controlW.Close()
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		controlR.Close()
		controlW.Close()
		inR.Close()
		inW.Close()
		return nil, err
	}
	closeAfterStart = append(closeAfterStart, controlW, inR, outW)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = s.WorkDir
	cmd.Env = unisolatedEnv(append([]string{sessionEnv}, s.Env...))
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.ExtraFiles = []*os.File{controlW, inR, outW}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		controlR.Close()
		inW.Close()
		outR.Close()
		return nil, fmt.Errorf("start session %s: %w", s.Python, err)
	}
	pgid := cmd.Process.Pid
	control := make(chan []byte, 1)
	go func() {
		data, _ := io.ReadAll(io.LimitReader(controlR, sandbox.ControlLimit))
		control <- data
		_, _ = io.Copy(io.Discard, controlR)
	}()
	var killed, timedOut bool
	var mu sync.Mutex
	kill := func() {
		mu.Lock()
		killed = true
		mu.Unlock()
		killGroup(pgid)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	stop := make(chan struct{})
	go func() {
		var timer <-chan time.Time
		if s.Timeout > 0 {
			t := time.NewTimer(s.Timeout)
			defer t.Stop()
			timer = t.C
		}
		select {
		case <-stop:
		case <-timer:
			mu.Lock()
			timedOut = true
			mu.Unlock()
			killGroup(pgid)
		case <-ctx.Done():
			kill()
		}
	}()
	return &Session{
		send:   inW,
		frames: bufio.NewReaderSize(outR, 1<<16),
		kill:   kill,
		pid:    pgid,
		wait: func() (Outcome, error) {
			waitErr := <-done
			close(stop)
			killGroup(pgid)
			outR.Close()
			controlR.Close()
			mu.Lock()
			out := Outcome{WorkDir: s.WorkDir, Duration: time.Since(start), TimedOut: timedOut, Canceled: killed}
			mu.Unlock()
			select {
			case data := <-control:
				out.CandidateCode = strings.Contains(string(data), controlMark)
			case <-time.After(100 * time.Millisecond):
			}
			capLogs(s.WorkDir)
			if waitErr != nil {
				var exit *exec.ExitError
				if !errors.As(waitErr, &exit) {
					return out, fmt.Errorf("wait for session: %w", waitErr)
				}
				out.ExitCode = exit.ExitCode()
				if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
					out.ExitCode, out.Signal = -1, sandbox.SignalName(ws.Signal())
				}
			}
			return out, nil
		},
	}, nil
}
