package worker

import (
	"context"
	"encoding/json"
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
	"github.com/cacheon/engine/kernels/bundle"
)

// File names inside a worker's work directory.
const (
	ResultFile   = "result.json"
	ProgressFile = "progress.jsonl"
	StdoutFile   = "stdout.log"
	StderrFile   = "stderr.log"
	requestFile  = "request.json"
)

// Harness exit codes (see cacheon_worker/__main__.py).
const (
	ExitBadRequest   = 3
	ExitHarnessError = 4
)

// Spec is one worker process to run.
type Spec struct {
	Python        string        // absolute interpreter path
	ValidatorRoot string        // from ValidatorRoot
	WorkDir       string        // created if missing; the process's cwd
	Request       any           // marshalled to JSON on stdin
	Timeout       time.Duration // wall-clock limit for the whole process group; 0 = none
	Env           []string      // extra KEY=VALUE entries
	// ReadOnly host paths the worker reads besides ValidatorRoot (the
	// staged bundle, a candidate's outputs); Writable directories it writes
	// besides WorkDir (a collective's rendezvous). In a sandbox nothing
	// else of the run directory is visible.
	ReadOnly []string
	Writable []string
	// Witness, when set, copies the worker's checked calls while its
	// group is stopped (see Witness); its arena directory is bound
	// writable. The caller makes it and reads Err after the run.
	Witness *Witness
	// Files are passed to the worker as fds 6, 7, ...
	Files []*os.File
	// Converse, when set, is called (on a goroutine of its own) once the
	// worker runs, with the controller's ends of its session pipes: what
	// it writes to send reaches the worker's fd 4, and frames reads what
	// the worker writes on fd 5. A spec has a Witness or Converse, not
	// both: the witness talks on the same pipes.
	Converse func(send io.WriteCloser, frames io.ReadCloser)
}

// Isolation says how worker processes are contained. The zero value is a
// sandbox with default limits that hides nothing beyond what the sandbox
// always hides.
type Isolation struct {
	// Unsafe runs workers as plain child processes with the caller's
	// user, filesystem, network and environment. Only for hosts where
	// namespaces cannot be made, by explicit request
	// (--unsafe-no-isolation); reports say so.
	Unsafe bool
	// Hide lists directories no worker sees except the parts bound into
	// it: the run directory, so a candidate never reaches the reference's
	// code or another role's files.
	Hide []string
	// Devices are device nodes passed through (a GPU's).
	Devices []string
	Limits  sandbox.Limits
	// Roots remembers each interpreter's library directories, bound
	// read-only into its sandboxes (InterpreterRoots). Nil binds none:
	// only an interpreter the system trees hold runs then.
	Roots *RootCache
}

// Outcome is how a worker process ended.
type Outcome struct {
	ExitCode int           // -1 when killed by a signal
	Signal   string        // e.g. "SIGSEGV"; empty when it exited
	TimedOut bool          // killed because Timeout passed
	Canceled bool          // killed because the caller's context ended, or a peer failed
	Duration time.Duration // wall time from start to exit
	WorkDir  string
	Progress Progress // the last line of the progress log (the worker's own words)
	// redactor knows the host paths of this worker's spec (Redact).
	redactor *Redactor
	// CandidateCode is true once the harness announced, on a control pipe
	// it closed before importing candidate code, that candidate code was
	// about to run. The candidate cannot forge or take back this: unlike
	// the progress log, it cannot write to that pipe.
	CandidateCode bool
	// Bounds is what the sandbox's control group counted (zero
	// unisolated): a kill at its memory bound shows as OOMKills.
	Bounds cgroup.Stats
}

// Progress is one line of a worker's progress log.
type Progress struct {
	Stage string `json:"stage"`
	Case  *int   `json:"case,omitempty"`
	Phase string `json:"phase,omitempty"`
	Error string `json:"error,omitempty"`
}

// Where describes the progress point in words, e.g. "case 3, repeat call".
func (p Progress) Where() string {
	s := p.Stage
	switch p.Stage {
	case "call":
		s = p.Phase + " call"
	case "graph_capture":
		s = "CUDA graph capture"
	case "import_candidate":
		s = "importing the candidate module"
	case "load_native":
		s = "loading the prebuilt native library"
	case "distributed_init":
		s = "process-group set-up"
	case "prepare":
		s = "prepare"
	case "case":
		s = "input generation"
	}
	if p.Case != nil {
		return fmt.Sprintf("case %d, %s", *p.Case, s)
	}
	return s
}

// Clean reports whether the process exited with code 0 on its own.
func (o Outcome) Clean() bool {
	return o.ExitCode == 0 && o.Signal == "" && !o.TimedOut && !o.Canceled
}

// Describe says how the process ended, e.g. "killed by SIGSEGV".
func (o Outcome) Describe() string {
	switch {
	case o.TimedOut:
		return fmt.Sprintf("timed out after %s", o.Duration.Round(time.Millisecond))
	case o.Canceled:
		return "stopped by the controller"
	case o.Signal == "SIGKILL" && o.Bounds.OOMKills > 0:
		return "killed by SIGKILL at the sandbox's memory bound"
	case o.Signal != "":
		return "killed by " + o.Signal
	default:
		return fmt.Sprintf("exited with code %d", o.ExitCode)
	}
}

// controlMark is what the harness writes on its control pipe right
// before it imports candidate code (cacheon_worker/candidate.py).
const controlMark = "candidate_code"

// Run starts one worker and waits for it; see RunGroup.
func Run(ctx context.Context, iso Isolation, s Spec) (Outcome, error) {
	outs, err := RunGroup(ctx, iso, []Spec{s})
	return outs[0], err
}

// RunGroup runs the workers together (the ranks of a collective: in a
// sandbox they share one, so they share its loopback network) and waits
// for all of them. Once one fails, the others are stopped (Canceled): a
// failed rank leaves its peers blocked in a collective. Nothing a worker
// started outlives the group. The returned error is an infrastructure
// failure (the workers could not be started); how each ended is in its
// Outcome.
func RunGroup(ctx context.Context, iso Isolation, specs []Spec) ([]Outcome, error) {
	outs := make([]Outcome, len(specs))
	// Every copy is complete, and the witness's files closed, before the
	// caller reads them; also when the workers never started.
	defer func() {
		for _, s := range specs {
			if s.Witness != nil {
				s.Witness.finish()
			}
		}
	}()
	for i, s := range specs {
		outs[i].WorkDir = s.WorkDir
		if err := prepareWorkDir(iso, s); err != nil {
			return outs, err
		}
	}
	var err error
	if iso.Unsafe {
		err = runUnisolated(ctx, specs, outs)
	} else {
		err = runSandboxed(ctx, iso, specs, outs)
	}
	for i, s := range specs {
		// The progress log is the worker's own words: its error text is
		// redacted and bounded before any report sees it.
		// Sandboxed, the interpreter's roots are cached by now; unisolated,
		// nothing more of the interpreter is run for them.
		var roots []string
		if !iso.Unsafe {
			roots, _ = iso.Roots.Roots(ctx, s.Python)
		}
		outs[i].redactor = s.redactor(roots)
		outs[i].Progress = lastProgress(filepath.Join(s.WorkDir, ProgressFile))
		outs[i].Progress.Error = outs[i].redactor.Redact(outs[i].Progress.Error)
		capLogs(s.WorkDir)
	}
	return outs, err
}

// Redact replaces the host paths this worker knew (its directories, the
// paths it was given, its interpreter's, home directories) in text the
// worker wrote, and bounds it to MaxErrorField bytes.
func (o Outcome) Redact(s string) string { return o.redactor.Redact(s) }

// prepareWorkDir creates the work directory (writable by the sandbox
// user) and writes the request, kept beside the result so a failed run
// can be replayed by hand.
func prepareWorkDir(iso Isolation, s Spec) error {
	mk := os.MkdirAll
	if !iso.Unsafe {
		mk = func(dir string, _ os.FileMode) error { return sandbox.PrepareWritable(dir) }
	}
	if err := mk(s.WorkDir, 0o755); err != nil {
		return fmt.Errorf("worker directory: %w", err)
	}
	req, err := json.Marshal(s.Request)
	if err != nil {
		return fmt.Errorf("worker request: %w", err)
	}
	if err := os.WriteFile(filepath.Join(s.WorkDir, requestFile), req, 0o444); err != nil {
		return fmt.Errorf("worker request: %w", err)
	}
	return nil
}

func runSandboxed(ctx context.Context, iso Isolation, specs []Spec, outs []Outcome) error {
	sb := sandbox.Spec{Hide: iso.Hide, Devices: iso.Devices, Limits: iso.Limits, StopOnFailure: len(specs) > 1}
	for _, s := range specs {
		if s.Timeout > sb.Timeout {
			sb.Timeout = s.Timeout
		}
		sb.ReadOnly = append(sb.ReadOnly, s.ValidatorRoot)
		sb.ReadOnly = append(sb.ReadOnly, s.ReadOnly...)
		if hidden(s.Python, iso.Hide) {
			sb.ReadOnly = append(sb.ReadOnly, s.Python)
		}
		roots, err := iso.Roots.Roots(ctx, s.Python)
		if err != nil {
			return err
		}
		sb.ReadOnly = append(sb.ReadOnly, roots...)
		sb.Writable = append(sb.Writable, s.WorkDir)
		sb.Writable = append(sb.Writable, s.Writable...)
		if s.Witness != nil && s.Witness.Dir() != "" {
			sb.Writable = append(sb.Writable, s.Witness.Dir())
		}
		argv := command(s.Python, s.ValidatorRoot)
		// A witnessed worker talks to its witness on the session pipes:
		// announcements on fd 5, answers on fd 4.
		sb.Procs = append(sb.Procs, sandbox.Proc{Path: argv[0], Args: argv, Env: sandboxEnv(s.Env), Dir: s.WorkDir,
			Stdin: filepath.Join(s.WorkDir, requestFile), Stdout: filepath.Join(s.WorkDir, StdoutFile),
			Stderr: filepath.Join(s.WorkDir, StderrFile), Control: true, Session: s.Witness != nil || s.Converse != nil,
			Files: s.Files})
	}
	sb.ReadOnly, sb.Writable = dedupe(sb.ReadOnly), dedupe(sb.Writable)
	// The new root's mount point and the init's log sit beside the first
	// worker's directory, inside the hidden run directory.
	base := filepath.Dir(specs[0].WorkDir)
	root, err := os.MkdirTemp(base, ".sandbox-")
	if err != nil {
		return fmt.Errorf("sandbox root: %w", err)
	}
	defer os.Remove(root)
	if err := sandbox.SearchableDir(root); err != nil {
		return err
	}
	sb.Root = root
	sb.Log = root + ".log"
	defer os.Remove(sb.Log)
	var res sandbox.Result
	box, err := sandbox.Start(ctx, sb)
	if err != nil {
		res = sandbox.Result{Exits: make([]sandbox.Exit, len(specs))}
	} else {
		// One stopper for the group: the ranks share the sandbox, and a
		// copy is taken with all of them stopped.
		st := namespaceStopper(box.Pid())
		for i, s := range specs {
			if s.Converse != nil {
				ss := box.Session(i)
				go s.Converse(ss.Send, ss.Frames)
			}
			if s.Witness == nil {
				continue
			}
			// The writable directories are the sandbox's own tmpfs now:
			// the witness copies the files the worker will map.
			if err := s.Witness.adopt(); err != nil {
				s.Witness.fail(err)
			}
			ss := box.Session(i)
			s.Witness.start(st, ss.Frames, ss.Send)
		}
		res, err = box.Wait()
	}
	for i := range specs {
		e := res.Exits[i]
		outs[i].Duration = res.Duration
		outs[i].TimedOut = res.TimedOut
		outs[i].Canceled = res.Canceled || e.Stopped
		outs[i].ExitCode, outs[i].Signal = e.Code, e.Signal
		outs[i].CandidateCode = strings.Contains(string(e.Control), controlMark)
		outs[i].Bounds = res.Bounds
		if (res.TimedOut || res.Canceled) && !e.Started {
			outs[i].ExitCode = -1
		}
	}
	if err != nil {
		if log, _ := readTail(sb.Log, 2000); log != "" {
			err = fmt.Errorf("%w (sandbox log: %s)", err, log)
		}
		return err
	}
	for i, s := range specs {
		if !res.Exits[i].Started {
			return fmt.Errorf("start worker %s: %s", s.Python, lastLine(Tail(s.WorkDir, StderrFile, 2000)))
		}
	}
	return nil
}

// hidden reports whether path lies under one of dirs or a private tmp
// (where a sandbox would not see it unless bound).
func hidden(path string, dirs []string) bool {
	for _, d := range append([]string{os.TempDir(), "/tmp", "/var/tmp", "/dev/shm"}, dirs...) {
		if rel, err := filepath.Rel(d, path); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return true
		}
	}
	return false
}

func dedupe(paths []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, p := range paths {
		if p != "" && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// runUnisolated runs each worker as a plain child process in its own
// process group (the unsafe mode).
func runUnisolated(ctx context.Context, specs []Spec, outs []Outcome) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, len(specs))
	var wg sync.WaitGroup
	for i := range specs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			errs[i] = runProcess(ctx, specs[i], &outs[i])
			if len(specs) > 1 && (errs[i] != nil || !outs[i].Clean()) {
				cancel()
			}
		}(i)
	}
	wg.Wait()
	return errors.Join(errs...)
}

func runProcess(ctx context.Context, s Spec, out *Outcome) error {
	stdin, err := os.Open(filepath.Join(s.WorkDir, requestFile))
	if err != nil {
		return fmt.Errorf("worker request: %w", err)
	}
	defer stdin.Close()
	stdout, err := os.Create(filepath.Join(s.WorkDir, StdoutFile))
	if err != nil {
		return fmt.Errorf("worker stdout: %w", err)
	}
	defer stdout.Close()
	stderr, err := os.Create(filepath.Join(s.WorkDir, StderrFile))
	if err != nil {
		return fmt.Errorf("worker stderr: %w", err)
	}
	defer stderr.Close()
	controlR, controlW, err := os.Pipe()
	if err != nil {
		return err
	}
	defer controlR.Close()
	// The witness's pipes, on fds 4 (answers) and 5 (announcements) as in
	// a sandbox; without a witness they are closed at once.
	ansR, ansW, err := os.Pipe()
	if err != nil {
		controlW.Close()
		return err
	}
	defer ansW.Close()
	annR, annW, err := os.Pipe()
	if err != nil {
		controlW.Close()
		ansR.Close()
		return err
	}
	defer annR.Close()

	argv := command(s.Python, s.ValidatorRoot)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = s.WorkDir
	cmd.Env = unisolatedEnv(s.Env)
	cmd.Stdin = stdin
	// Files, not pipes: Wait must not depend on a grandchild closing them.
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.ExtraFiles = []*os.File{controlW}
	if s.Witness != nil || s.Converse != nil || len(s.Files) > 0 {
		cmd.ExtraFiles = append(cmd.ExtraFiles, ansR, annW)
	}
	cmd.ExtraFiles = append(cmd.ExtraFiles, s.Files...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}

	start := time.Now()
	err = cmd.Start()
	controlW.Close()
	ansR.Close()
	annW.Close()
	if err != nil {
		return fmt.Errorf("start worker %s: %w", s.Python, err)
	}
	control := make(chan []byte, 1)
	go func() {
		data, _ := io.ReadAll(io.LimitReader(controlR, sandbox.ControlLimit))
		control <- data
		_, _ = io.Copy(io.Discard, controlR)
	}()
	pgid := cmd.Process.Pid
	if s.Witness != nil {
		s.Witness.start(groupStopper(pgid), annR, ansW)
	}
	if s.Converse != nil {
		go s.Converse(ansW, annR)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	var timer <-chan time.Time
	if s.Timeout > 0 {
		t := time.NewTimer(s.Timeout)
		defer t.Stop()
		timer = t.C
	}
	var waitErr error
	select {
	case waitErr = <-done:
	case <-timer:
		out.TimedOut = true
		killGroup(pgid)
		waitErr = <-done
	case <-ctx.Done():
		out.Canceled = true
		killGroup(pgid)
		waitErr = <-done
	}
	out.Duration = time.Since(start)
	killGroup(pgid)
	// A process that left the group may hold the pipe open: read what
	// came before the worker ended, without waiting for it.
	select {
	case data := <-control:
		out.CandidateCode = strings.Contains(string(data), controlMark)
	case <-time.After(100 * time.Millisecond):
	}

	out.ExitCode = 0
	if waitErr != nil {
		var exit *exec.ExitError
		if !errors.As(waitErr, &exit) {
			return fmt.Errorf("wait for worker: %w", waitErr)
		}
		out.ExitCode = exit.ExitCode()
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			out.ExitCode = -1
			out.Signal = sandbox.SignalName(ws.Signal())
		}
	}
	return nil
}

// killGroup sends SIGKILL to every process in the group; a group that is
// already gone is not an error.
func killGroup(pgid int) {
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

// Limits on what the controller reads back from a worker's directory. A
// worker writes these files itself, so each is read with a bound: its
// size decides nothing but whether it is refused.
const (
	MaxResultBytes   = 64 << 20 // result.json
	MaxLogBytes      = 8 << 20  // stdout.log and stderr.log are cut to this after the run
	progressTailSize = 64 << 10 // the end of progress.jsonl that is read
)

// lastProgress returns the last well-formed line of the end of the
// progress log.
func lastProgress(path string) Progress {
	var last Progress
	data, err := readTail(path, progressTailSize)
	if err != nil {
		return last
	}
	for _, line := range strings.Split(data, "\n") {
		var p Progress
		if json.Unmarshal([]byte(line), &p) == nil && p.Stage != "" {
			last = p
		}
	}
	return last
}

// ReadResult decodes the worker's result file into v. The file must be a
// regular file of at most MaxResultBytes.
func ReadResult(workDir string, v any) error {
	path := filepath.Join(workDir, ResultFile)
	f, err := openRegular(path)
	if err != nil {
		return fmt.Errorf("worker result: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxResultBytes+1))
	if err != nil {
		return fmt.Errorf("worker result: %w", err)
	}
	if len(data) > MaxResultBytes {
		return fmt.Errorf("worker result %s: larger than %d bytes", path, MaxResultBytes)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("worker result %s: %w", path, err)
	}
	// Its error texts are the worker's words, a candidate's exception
	// among them: bounded and without host paths (see redact.go).
	dirRedactor(workDir).RedactErrors(v)
	return nil
}

// openRegular opens path without following a final symlink and without
// blocking on a FIFO, and refuses anything but a regular file: a worker
// may have replaced its own files with either.
func openRegular(path string) (*os.File, error) {
	f, _, err := bundle.OpenRegular(path)
	return f, err
}

// readTail returns up to n bytes from the end of a regular file.
func readTail(path string, n int64) (string, error) {
	f, err := openRegular(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	off := fi.Size() - n
	if off < 0 {
		off = 0
	}
	data, err := io.ReadAll(io.NewSectionReader(f, off, n))
	return string(data), err
}

// Tail returns up to n bytes from the end of a worker's log file, with
// the host paths around its work directory and home directories
// replaced by placeholders (see redact.go): what the worker printed is
// the candidate's to choose.
func Tail(workDir, name string, n int) string {
	data, err := readTail(filepath.Join(workDir, name), int64(n))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(dirRedactor(workDir).paths(data))
}

// capLogs cuts a worker's logs to MaxLogBytes, so a worker that prints
// without end costs the evidence store no more than that.
func capLogs(workDir string) {
	for _, name := range []string{StdoutFile, StderrFile} {
		path := filepath.Join(workDir, name)
		if fi, err := os.Lstat(path); err == nil && fi.Mode().IsRegular() && fi.Size() > MaxLogBytes {
			_ = os.Truncate(path, MaxLogBytes)
		}
	}
}

func lastLine(s string) string {
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}
