//go:build !linux

package sandbox

import (
	"context"
	"fmt"
	"os"
	"runtime"
)

// Run refuses: sandboxes need Linux namespaces.
func Run(ctx context.Context, s Spec) (Result, error) {
	return Result{Exits: make([]Exit, len(s.Procs))}, fmt.Errorf("%w: %s has no Linux namespaces", ErrUnavailable, runtime.GOOS)
}

// Available refuses on this system.
func Available(root string) error {
	return fmt.Errorf("%w: %s has no Linux namespaces", ErrUnavailable, runtime.GOOS)
}

// PrepareWritable creates dir.
func PrepareWritable(dir string) error { return os.MkdirAll(dir, 0o755) }
