//go:build !linux

package sandbox

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/cacheon/engine/evaluator/sandbox/cgroup"
)

// Run refuses: sandboxes need Linux namespaces.
func Run(ctx context.Context, s Spec) (Result, error) {
	return Result{Exits: make([]Exit, len(s.Procs))}, fmt.Errorf("%w: %s has no Linux namespaces", ErrUnavailable, runtime.GOOS)
}

// Sandbox is never started on this system.
type Sandbox struct{}

// Start refuses: sandboxes need Linux namespaces.
func Start(ctx context.Context, s Spec) (*Sandbox, error) {
	return nil, fmt.Errorf("%w: %s has no Linux namespaces", ErrUnavailable, runtime.GOOS)
}

// Session is nil: no sandbox starts here.
func (sb *Sandbox) Session(i int) *Session { return nil }

// Pid is none: no sandbox starts here.
func (sb *Sandbox) Pid() int { return 0 }

// Thread is a task inside a sandbox; there are none here.
type Thread struct {
	TID, PID    int
	Name, State string
	CPU         time.Duration
	RunDelay    time.Duration
}

// Threads lists nothing: no sandbox starts here.
func (sb *Sandbox) Threads() ([]Thread, error) { return nil, ErrUnavailable }

// ReadThread reads nothing: there is no /proc here.
func ReadThread(tid int) (Thread, bool) { return Thread{}, false }

// Bounds counted nothing: no sandbox starts here.
func (sb *Sandbox) Bounds() cgroup.Stats { return cgroup.Stats{} }

// Kill does nothing: no sandbox starts here.
func (sb *Sandbox) Kill() {}

// Wait reports nothing: no sandbox starts here.
func (sb *Sandbox) Wait() (Result, error) { return Result{}, ErrUnavailable }

// Available refuses on this system.
func Available(root string) error {
	return fmt.Errorf("%w: %s has no Linux namespaces", ErrUnavailable, runtime.GOOS)
}

// PrepareWritable creates dir.
func PrepareWritable(dir string) error { return os.MkdirAll(dir, 0o755) }

// Executable has nothing to check: no sandbox runs here.
func Executable(path string) error { return nil }

// Provided is false: no sandbox root is built here.
func Provided(path string) bool { return false }

// UnmountStaleWork does nothing: no sandbox mounts work directories here.
func UnmountStaleWork() {}
