package prebuild

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cacheon/engine/evaluator/sandbox"
	"github.com/cacheon/engine/evaluator/worker"
	"github.com/cacheon/engine/kernels/patchers"
)

// probeScript is the build_cuda_ext patcher (kernels/patchers):
// it runs in the compiler sandbox with the worker interpreter (validator
// code, never the contribution's) and says where that interpreter's torch
// keeps its C++ headers and libraries, which ABI it was built with, and
// which compiler is used, with that compiler's version.
//
// It lives in kernels/patchers, whose digest a bundle's rebuild step binds.
var probeScript = patchers.BuildCUDAExt

// toolchain is what the probe found.
type toolchain struct {
	Torch           string   `json:"torch"`
	CXX11ABI        bool     `json:"cxx11_abi"`
	CUDAHome        string   `json:"cuda_home"`
	TorchCUDA       string   `json:"torch_cuda"`
	Include         []string `json:"include"`
	Lib             []string `json:"lib"`
	Compiler        string   `json:"compiler"`
	CompilerVersion string   `json:"compiler_version"`
}

// ErrToolchain marks a host that lacks what the prebuild needs: torch's
// C++ headers (Debian: libtorch-dev), a C++ compiler, or nvcc for the
// cuda target. It is an infrastructure failure, never the contribution's.
var ErrToolchain = errors.New("prebuild toolchain unavailable")

// probe runs the probe script in the sandbox and checks the toolchain.
func (b *builder) probe(ctx context.Context) (*toolchain, error) {
	dir := filepath.Join(b.run, "probe")
	if err := b.prepareWritable(dir); err != nil {
		return nil, err
	}
	script := filepath.Join(b.run, patchers.BuildCUDAExtName)
	if err := os.WriteFile(script, []byte(probeScript), 0o444); err != nil {
		return nil, err
	}
	out := filepath.Join(dir, "toolchain.json")
	// -I: the caller's PYTHON* variables and user site-packages are not read.
	argv := []string{b.python, "-I", script, out, b.o.Target, b.o.Compiler}
	res, err := b.exec(ctx, argv, dir, []string{script}, []string{dir})
	if err != nil {
		return nil, err
	}
	if res.timedOut {
		return nil, &NoDecisionError{Reason: fmt.Sprintf("the toolchain probe ran past the prebuild's budget of %s", b.o.Timeout)}
	}
	if res.code != 0 {
		return nil, fmt.Errorf("%w: the toolchain probe (%s) %s: %s", ErrToolchain, b.python, res.describe(),
			lastLines(res.stderr, 3))
	}
	data, err := readBounded(out, 1<<20)
	if err != nil {
		return nil, fmt.Errorf("toolchain probe: %w", err)
	}
	var tc toolchain
	if err := json.Unmarshal(data, &tc); err != nil {
		return nil, fmt.Errorf("toolchain probe: %w", err)
	}
	if tc.Compiler == "" {
		want := "a C++ compiler (g++)"
		if b.o.Target == "cuda" {
			want = "nvcc (torch reports CUDA_HOME " + quoteOrNone(tc.CUDAHome) + ")"
		}
		return nil, fmt.Errorf("%w: no %s for target %s", ErrToolchain, want, b.o.Target)
	}
	if b.o.Target == "cuda" && tc.TorchCUDA == "" {
		return nil, fmt.Errorf("%w: torch %s in %s is built without CUDA", ErrToolchain, tc.Torch, b.python)
	}
	found := false
	for _, inc := range tc.Include {
		if _, err := os.Stat(filepath.Join(inc, "torch", "library.h")); err == nil {
			found = true
			break
		}
	}
	if !found {
		return nil, fmt.Errorf("%w: torch %s in %s has no C++ headers (torch/library.h under %s); on Debian install libtorch-dev",
			ErrToolchain, tc.Torch, b.python, strings.Join(tc.Include, ", "))
	}
	return &tc, nil
}

func quoteOrNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// Available reports whether this host can prebuild for target with the
// interpreter python: sandboxes can be made (unless unisolated), and the
// probe finds torch's C++ headers and the compiler. The error wraps
// ErrToolchain or sandbox.ErrUnavailable.
func Available(ctx context.Context, python, target string, unisolated bool) error {
	o := Options{Bundle: "-", Store: "-", Target: target, Unisolated: unisolated}
	if err := o.normalize(); err != nil {
		return err
	}
	py, err := worker.ResolvePython(python)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrToolchain, err)
	}
	dir, err := os.MkdirTemp("", "cacheon-prebuild-probe-")
	if err != nil {
		return err
	}
	defer worker.RemoveAll(dir)
	if err := sandbox.SearchableDir(dir); err != nil {
		return err
	}
	if !unisolated {
		if err := sandbox.Available(filepath.Join(dir, ".probe")); err != nil {
			return err
		}
	}
	b := &builder{o: o, run: dir, python: py, deadline: time.Now().Add(2 * time.Minute)}
	_, err = b.probe(ctx)
	return err
}
