package sandbox

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"time"

	"github.com/cacheon/engine/evaluator/sandbox/cgroup"
)

// InitName is argv[0] of a re-executed binary that must act as a sandbox's
// init.
const InitName = "cacheon-sandbox-init"

// Spec is one sandbox: the processes it runs and what they may see.
type Spec struct {
	// Procs run concurrently inside the one sandbox (ranks of a collective
	// share its network and IPC namespaces). At least one.
	Procs []Proc
	// Root is an empty host directory the init mounts the new root on. It
	// must not be inside any ReadOnly, Writable or Hide path.
	Root string
	// ReadOnly host paths (files or directories) appear at the same path,
	// read-only. Writable host directories appear at the same path,
	// read-write; they must exist and be writable by the sandbox user
	// (see PrepareWritable).
	ReadOnly []string
	Writable []string
	// Hide host directories are replaced by an empty read-only tmpfs before
	// ReadOnly and Writable paths are bound, so a worker sees only the
	// parts of, say, a run directory that were given to it. /tmp,
	// /var/tmp and /dev/shm are always private tmpfs mounts.
	Hide []string
	// Devices are host device nodes bound into the sandbox's /dev (a GPU's
	// /dev/nvidia* nodes). /dev/null, zero, full, random and urandom are
	// always there.
	Devices []string
	Limits  Limits
	// StopOnFailure kills every other process once one exits non-zero or
	// by a signal (a failed rank leaves its peers blocked in a collective).
	StopOnFailure bool
	// Timeout bounds the whole sandbox; 0 = none.
	Timeout time.Duration
	// Log receives the init's own messages (a set-up failure); a host
	// file path, created. Empty = discarded.
	Log string
}

// Proc is one process inside a sandbox. Paths are as the sandbox sees them
// (which, for bound paths, are the host paths).
type Proc struct {
	Path   string   // executable
	Args   []string // argv, including argv[0]
	Env    []string // the whole environment: nothing is inherited
	Dir    string   // working directory
	Stdin  string   // file read as stdin; "" = /dev/null
	Stdout string   // file created for stdout; "" = /dev/null
	Stderr string   // file created for stderr; "" = /dev/null
	// Control gives the process a write-only pipe on fd 3 whose bytes
	// (the first ControlLimit) come back in Exit.Control: a channel the
	// process's own later code cannot take back, since the controller has
	// read what was written before it closed the pipe.
	Control bool
	// Session gives the process two pipes to the controller, for a
	// conversation while it runs (an engine serving batches): it reads
	// requests on fd 4 and writes replies on fd 5. The controller's ends
	// are Sandbox.Session(i).
	Session bool
	// Files are passed to the process as fds 6, 7, ... (the capability
	// to a block of shared memory, a socket): descriptors, not paths, so
	// nothing of the host's tree need be visible for them.
	Files []*os.File `json:"-"`
}

// Session is the controller's end of a Session process's two pipes: Send
// reaches the process's fd 4, Frames reads what it writes on fd 5. Closing
// Send is the process's end of input.
type Session struct {
	Send   io.WriteCloser
	Frames io.ReadCloser
}

// ControlLimit bounds what a process's control pipe returns.
const ControlLimit = 4096

// Limits are per-process resource limits (setrlimit) and the bounds of
// the sandbox's control group, which hold for the sum of everything in it
// (cgroup_linux.go). Zero fields take the defaults below.
type Limits struct {
	Memory    uint64 // RLIMIT_DATA: heap and private writable mappings, bytes
	Processes uint64 // RLIMIT_NPROC: tasks (threads count) of the sandbox user
	OpenFiles uint64 // RLIMIT_NOFILE
	FileSize  uint64 // RLIMIT_FSIZE: largest file a process may write, bytes
	TmpSize   uint64 // size of each private tmpfs (/tmp, /var/tmp, /dev/shm), bytes
	// GroupMemory bounds the memory of the whole sandbox, bytes: every
	// process's private and shared memory, memfd, and the pages written to
	// its tmpfs mounts. 0 = Memory for each process.
	GroupMemory uint64
	// Tasks bounds the processes and threads alive in the sandbox at once,
	// summed over all of them.
	Tasks uint64
	// CPU is the CPU time the sandbox may use per wall second, in CPUs;
	// 0 = DefaultCPU().
	CPU float64
	// WorkSize and WorkInodes bound each writable directory while the
	// sandbox runs: bytes and files (workdir_linux.go).
	WorkSize   uint64
	WorkInodes uint64
}

// Default limits. RLIMIT_AS is left alone: CUDA reserves far more address
// space than it uses. RLIMIT_DATA counts what is really writable, so it
// bounds host memory on CPU and GPU lanes alike.
const (
	DefaultMemory    = 16 << 30
	DefaultProcesses = 1024
	DefaultOpenFiles = 4096
	DefaultFileSize  = 4 << 30
	DefaultTmpSize   = 2 << 30
	DefaultTasks     = 1024
	// A work directory holds a request, a result of at most 64 MiB, logs
	// and a candidate's outputs for the reference to read.
	DefaultWorkSize   = 4 << 30
	DefaultWorkInodes = 16384
)

// DefaultCPU is every CPU this process may run on but one, and at least
// one: a sandbox whose threads burn every CPU they get (a noisy
// neighbour) leaves the controller and the other lanes a CPU.
func DefaultCPU() float64 {
	n := runtime.NumCPU() - 1
	if n < 1 {
		n = 1
	}
	return float64(n)
}

func (l Limits) withDefaults() Limits {
	if l.Memory == 0 {
		l.Memory = DefaultMemory
	}
	if l.Processes == 0 {
		l.Processes = DefaultProcesses
	}
	if l.OpenFiles == 0 {
		l.OpenFiles = DefaultOpenFiles
	}
	if l.FileSize == 0 {
		l.FileSize = DefaultFileSize
	}
	if l.TmpSize == 0 {
		l.TmpSize = DefaultTmpSize
	}
	if l.Tasks == 0 {
		l.Tasks = DefaultTasks
	}
	if l.CPU == 0 {
		l.CPU = DefaultCPU()
	}
	if l.WorkSize == 0 {
		l.WorkSize = DefaultWorkSize
	}
	if l.WorkInodes == 0 {
		l.WorkInodes = DefaultWorkInodes
	}
	return l
}

// Exit is how one process of a sandbox ended.
type Exit struct {
	Started bool   // the process was started (false: the init failed first)
	Code    int    // exit code; -1 when killed by a signal
	Signal  string // e.g. "SIGSEGV"; empty when it exited
	Stopped bool   // killed because another process failed (StopOnFailure)
	Control []byte // what the process wrote on its control pipe
}

// Result is how a sandbox ended.
type Result struct {
	Exits    []Exit // one per Proc, in order
	TimedOut bool   // killed because Timeout passed
	Canceled bool   // killed because the caller's context ended
	Killed   bool   // killed by Sandbox.Kill
	// OutOfMemory: the init was killed for the group's memory bound, and
	// every process with it.
	OutOfMemory bool
	// WorkBounded: the writable directories were bounded tmpfs mounts
	// (false where the controller is not root).
	WorkBounded bool
	Duration    time.Duration
	// Bounds is what the sandbox's control group counted: its memory
	// peak and the allocations, forks and CPU time its bounds refused.
	Bounds cgroup.Stats
}

// ErrUnavailable marks a host where sandboxes cannot be made (no user
// namespaces, say). Callers refuse to run untrusted code then, unless told
// to run it unisolated.
var ErrUnavailable = errors.New("worker sandbox unavailable")

// SetupError is a failure of the init before any process started.
type SetupError struct{ Msg string }

func (e *SetupError) Error() string { return "worker sandbox set-up: " + e.Msg }

func (s *Spec) check() error {
	if len(s.Procs) == 0 {
		return fmt.Errorf("sandbox: no process to run")
	}
	if s.Root == "" {
		return fmt.Errorf("sandbox: no root directory")
	}
	return nil
}
