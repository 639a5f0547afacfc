package worker

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	kref "github.com/cacheon/engine/kernels/reference"
	ksubstrate "github.com/cacheon/engine/kernels/substrate"
	kworker "github.com/cacheon/engine/kernels/worker"
)

// DefaultPython is the interpreter used when none is configured. It is
// resolved on PATH and recorded in every report; on hosts where the torch
// install lives elsewhere, pass the interpreter explicitly.
const DefaultPython = "python3"

// PythonEnv is the environment variable that overrides DefaultPython.
const PythonEnv = "CACHEON_PYTHON"

// ResolvePython turns a configured interpreter (empty: $CACHEON_PYTHON, else
// DefaultPython) into an absolute path. It does not follow symlinks: a
// virtual environment's python3 must keep its own path to find its
// site-packages.
func ResolvePython(configured string) (string, error) {
	p := configured
	if p == "" {
		p = os.Getenv(PythonEnv)
	}
	if p == "" {
		p = DefaultPython
	}
	found, err := exec.LookPath(p)
	if err != nil {
		return "", fmt.Errorf("worker interpreter %q: %w", p, err)
	}
	abs, err := filepath.Abs(found)
	if err != nil {
		return "", fmt.Errorf("worker interpreter %q: %w", p, err)
	}
	return abs, nil
}

// ValidatorRoot writes the embedded validator packages under dir (which must
// not exist yet) with read-only files, and returns dir. Workers get dir
// first on sys.path.
func ValidatorRoot(dir string) (string, error) {
	return writeRoot(dir, "validator root", kref.Files, kworker.Files)
}

// EngineRoot writes the embedded engine substrate under dir (which must
// not exist yet) with read-only files, and returns dir: the sys.path root
// of engine sessions.
func EngineRoot(dir string) (string, error) {
	return writeRoot(dir, "engine root", ksubstrate.Files)
}

func writeRoot(dir, what string, packages ...fs.FS) (string, error) {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", fmt.Errorf("%s: %w", what, err)
	}
	for _, src := range packages {
		if err := copyTree(src, dir); err != nil {
			return "", fmt.Errorf("%s: %w", what, err)
		}
	}
	// Directories become read-only last, once every file is in place.
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		return os.Chmod(path, 0o555)
	})
	if err != nil {
		return "", fmt.Errorf("%s: %w", what, err)
	}
	return dir, nil
}

func copyTree(src fs.FS, dst string) error {
	return fs.WalkDir(src, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		target := filepath.Join(dst, filepath.FromSlash(path))
		if d.IsDir() {
			if err := os.MkdirAll(target, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				return err
			}
			return nil
		}
		data, err := fs.ReadFile(src, path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o444)
	})
}

// Unfreeze makes the directories below dir writable again, so a kept run
// directory can be deleted with rm -r by an unprivileged user.
func Unfreeze(dir string) {
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(path, 0o755)
		}
		return nil
	})
}

// RemoveAll deletes a run directory that ValidatorRoot made read-only.
func RemoveAll(dir string) error {
	Unfreeze(dir)
	return os.RemoveAll(dir)
}

// bootstrap is the interpreter's -c program: put the validator root first
// on sys.path and run cacheon_worker as __main__. The interpreter runs
// isolated (-I: no PYTHON* variables, no user site, no current directory on
// the path), so nothing in the caller's environment can shadow the
// validator's packages.
const bootstrap = "import runpy, sys; root = sys.argv.pop(1); sys.path.insert(0, root); " +
	"runpy.run_module('" + kworker.Package + "', run_name='__main__', alter_sys=True)"

// command returns the argv that runs the worker harness.
func command(python, validatorRoot string) []string {
	return []string{python, "-I", "-B", "-u", "-c", bootstrap, validatorRoot}
}

// moduleBootstrap runs the module named by the second argument as
// __main__, with the root named by the first first on sys.path, in the
// same isolated interpreter mode as the harness.
const moduleBootstrap = "import runpy, sys; root = sys.argv.pop(1); module = sys.argv.pop(1); " +
	"sys.path.insert(0, root); runpy.run_module(module, run_name='__main__', alter_sys=True)"

// moduleCommand returns the argv that runs module from root with args.
func moduleCommand(python, root, module string, args []string) []string {
	return append([]string{python, "-I", "-B", "-u", "-c", moduleBootstrap, root, module}, args...)
}

// unisolatedEnv is the caller's environment without PYTHON* variables,
// plus the ones the worker needs (the unsafe mode only).
func unisolatedEnv(extra []string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "PYTHON") {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "PYTHONUNBUFFERED=1", "PYTHONDONTWRITEBYTECODE=1", controlEnv)
	return append(env, extra...)
}

// passedThrough are the caller's variables a sandboxed worker keeps: which
// GPUs it may use and where the driver's libraries are. Nothing else of the
// caller's environment (tokens, keys, paths) reaches candidate code.
var passedThrough = []string{"CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "LD_LIBRARY_PATH",
	"OMP_NUM_THREADS", "NCCL_NVLS_ENABLE", "NCCL_P2P_DISABLE", "NCCL_SHM_DISABLE", "NCCL_DEBUG"}

// controlEnv tells the harness that fd 3 is its control pipe.
const controlEnv = "CACHEON_CONTROL_FD=3"

// sandboxEnv is a sandboxed worker's whole environment.
func sandboxEnv(extra []string) []string {
	env := []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/tmp", "TMPDIR=/tmp", "LANG=C.UTF-8", "LC_ALL=C.UTF-8",
		"PYTHONUNBUFFERED=1", "PYTHONDONTWRITEBYTECODE=1", controlEnv}
	for _, k := range passedThrough {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return append(env, extra...)
}
