package worker

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
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
}

// Outcome is how a worker process ended.
type Outcome struct {
	ExitCode int           // -1 when killed by a signal
	Signal   string        // e.g. "SIGSEGV"; empty when it exited
	TimedOut bool          // killed because Timeout passed
	Canceled bool          // killed because the caller's context ended
	Duration time.Duration // wall time from start to exit
	WorkDir  string
	Progress Progress // the last line of the progress log
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
	case o.Signal != "":
		return "killed by " + o.Signal
	default:
		return fmt.Sprintf("exited with code %d", o.ExitCode)
	}
}

// Run starts the worker, waits for it, and kills its whole process group
// when the timeout passes or ctx ends. After the worker exits, anything it
// left running in its group is killed too, so a candidate cannot leave a
// process behind. The returned error is an infrastructure failure (the
// process could not be started); how the worker itself ended is in Outcome.
func Run(ctx context.Context, s Spec) (Outcome, error) {
	out := Outcome{WorkDir: s.WorkDir}
	if err := os.MkdirAll(s.WorkDir, 0o755); err != nil {
		return out, fmt.Errorf("worker directory: %w", err)
	}
	req, err := json.Marshal(s.Request)
	if err != nil {
		return out, fmt.Errorf("worker request: %w", err)
	}
	// Kept beside the result so a failed run can be replayed by hand.
	if err := os.WriteFile(filepath.Join(s.WorkDir, requestFile), req, 0o644); err != nil {
		return out, fmt.Errorf("worker request: %w", err)
	}
	stdout, err := os.Create(filepath.Join(s.WorkDir, StdoutFile))
	if err != nil {
		return out, fmt.Errorf("worker stdout: %w", err)
	}
	defer stdout.Close()
	stderr, err := os.Create(filepath.Join(s.WorkDir, StderrFile))
	if err != nil {
		return out, fmt.Errorf("worker stderr: %w", err)
	}
	defer stderr.Close()

	argv := command(s.Python, s.ValidatorRoot)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = s.WorkDir
	cmd.Env = workerEnv(s.Env)
	cmd.Stdin = bytes.NewReader(req)
	// Files, not pipes: Wait must not depend on a grandchild closing them.
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}

	start := time.Now()
	if err := cmd.Start(); err != nil {
		return out, fmt.Errorf("start worker %s: %w", s.Python, err)
	}
	pgid := cmd.Process.Pid
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

	out.ExitCode = 0
	if waitErr != nil {
		var exit *exec.ExitError
		if !errors.As(waitErr, &exit) {
			return out, fmt.Errorf("wait for worker: %w", waitErr)
		}
		out.ExitCode = exit.ExitCode()
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			out.ExitCode = -1
			out.Signal = signalName(ws.Signal())
		}
	}
	out.Progress = lastProgress(filepath.Join(s.WorkDir, ProgressFile))
	return out, nil
}

// killGroup sends SIGKILL to every process in the group; a group that is
// already gone is not an error.
func killGroup(pgid int) {
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

func signalName(sig syscall.Signal) string {
	names := map[syscall.Signal]string{
		syscall.SIGSEGV: "SIGSEGV", syscall.SIGABRT: "SIGABRT", syscall.SIGKILL: "SIGKILL",
		syscall.SIGBUS: "SIGBUS", syscall.SIGFPE: "SIGFPE", syscall.SIGILL: "SIGILL",
		syscall.SIGTERM: "SIGTERM", syscall.SIGINT: "SIGINT", syscall.SIGPIPE: "SIGPIPE",
	}
	if n, ok := names[sig]; ok {
		return n
	}
	return fmt.Sprintf("signal %d", int(sig))
}

// lastProgress returns the last well-formed line of the progress log.
func lastProgress(path string) Progress {
	var last Progress
	f, err := os.Open(path)
	if err != nil {
		return last
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		var p Progress
		if json.Unmarshal(sc.Bytes(), &p) == nil && p.Stage != "" {
			last = p
		}
	}
	return last
}

// ReadResult decodes the worker's result file into v.
func ReadResult(workDir string, v any) error {
	data, err := os.ReadFile(filepath.Join(workDir, ResultFile))
	if err != nil {
		return fmt.Errorf("worker result: %w", err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("worker result %s: %w", filepath.Join(workDir, ResultFile), err)
	}
	return nil
}

// Tail returns up to n bytes from the end of a worker's log file.
func Tail(workDir, name string, n int) string {
	data, err := os.ReadFile(filepath.Join(workDir, name))
	if err != nil {
		return ""
	}
	if len(data) > n {
		data = data[len(data)-n:]
	}
	return string(bytes.TrimSpace(data))
}
