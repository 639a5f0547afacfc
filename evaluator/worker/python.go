package worker

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/cacheon/engine/evaluator/sandbox"
	kref "github.com/cacheon/engine/kernels/reference"
	ksubstrate "github.com/cacheon/engine/kernels/substrate"
	kworker "github.com/cacheon/engine/kernels/worker"
)

// DefaultPython is the interpreter ResolvePython takes when none is
// configured, resolved on PATH. The commands choose theirs with
// ChoosePython, which tries it first and checks it.
const DefaultPython = "python3"

// PythonEnv is the environment variable that overrides DefaultPython.
const PythonEnv = "CACHEON_PYTHON"

// ResolvePython turns a configured interpreter (empty: $CACHEON_PYTHON, else
// DefaultPython) into an absolute path. It does not follow symlinks: a
// virtual environment's python3 must keep its own path to find its
// site-packages. It checks nothing more: the libraries take the
// interpreter their caller chose (ChoosePython) and resolve it again.
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

// PythonCandidates are the interpreters ChoosePython tries, in order, when
// neither --python nor $CACHEON_PYTHON names one. python3 on PATH comes
// first, so that the caller's own choice (an activated virtual
// environment) is kept, as it always was. Then the two places an
// interpreter that every user may reach lives: /usr/bin/python3, the
// distribution's, where its torch package installs (Debian's
// python3-torch); and /usr/local/bin/python3, a locally built one or a
// container image's (the official Python images, torch from pip). They
// are the fallback for the common case of a PATH whose python3 is a
// user-level manager's shim (pyenv) under a 0700 home, which the sandbox
// user cannot reach.
var PythonCandidates = []string{DefaultPython, "/usr/bin/python3", "/usr/local/bin/python3"}

// PythonProbeTimeout bounds ProbeTorch. Importing torch takes a second or
// two, more on a loaded machine; the bound is for an interpreter that
// hangs, and generous, since refusing a working one stops the command.
const PythonProbeTimeout = 60 * time.Second

// PythonChoice is what ChoosePython chooses from.
type PythonChoice struct {
	// Configured is the interpreter the command was given (--python); ""
	// reads $CACHEON_PYTHON, and without it Candidates are tried.
	Configured string
	// Candidates are tried in order when nothing is configured; nil is
	// PythonCandidates.
	Candidates []string
	// Sandboxed says the workers run in the sandbox, whose user must
	// reach the interpreter (sandbox.Executable); false when they run
	// unisolated, as the caller.
	Sandboxed bool
	// Probe says why python cannot run the workers, nil when it can; nil
	// is ProbeTorch.
	Probe func(ctx context.Context, python string) error
}

// ChoosePython picks the worker interpreter before any worker starts: the
// configured one, which must pass, or the first candidate that passes.
// Passing is two checks: the sandbox user can reach it (when Sandboxed),
// and Probe (one short subprocess; nothing is cached). When nothing
// passes, the error (a *PythonError) names each interpreter tried, why it
// was refused, and the fix: a machine set up wrong is refused at once, as
// the caller's error (exit 1), never reported as a qualification's
// NO_DECISION.
func ChoosePython(ctx context.Context, c PythonChoice) (string, error) {
	perr := &PythonError{}
	candidates := c.Candidates
	switch {
	case c.Configured != "":
		perr.Source, candidates = "--python", []string{c.Configured}
	case os.Getenv(PythonEnv) != "":
		perr.Source, candidates = "$"+PythonEnv, []string{os.Getenv(PythonEnv)}
	case candidates == nil:
		candidates = PythonCandidates
	}
	probe := c.Probe
	if probe == nil {
		probe = ProbeTorch
	}
	seen := map[string]bool{}
	for _, name := range candidates {
		refuse := func(path, why string) {
			perr.Tried = append(perr.Tried, PythonRefusal{Name: name, Path: path, Why: why})
		}
		found, err := exec.LookPath(name)
		if err != nil {
			refuse("", "not found")
			continue
		}
		path, err := filepath.Abs(found)
		if err != nil {
			refuse("", err.Error())
			continue
		}
		if seen[path] {
			continue // python3 on PATH is one of the fixed paths: tried once
		}
		seen[path] = true
		if c.Sandboxed {
			if err := sandbox.Executable(path); err != nil {
				refuse(path, "the sandbox user cannot reach it: "+err.Error())
				continue
			}
		}
		if err := probe(ctx, path); err != nil {
			if ctx.Err() != nil {
				return "", ctx.Err()
			}
			refuse(path, err.Error())
			continue
		}
		return path, nil
	}
	return "", perr
}

// PythonError is a worker interpreter refused before any worker started.
type PythonError struct {
	// Source names where a configured interpreter came from ("--python",
	// "$CACHEON_PYTHON"); "" when the candidates were tried.
	Source string
	Tried  []PythonRefusal
}

// PythonRefusal is one interpreter tried and why it was refused.
type PythonRefusal struct {
	Name string // as given or listed
	Path string // as found; "" when it was not
	Why  string
}

func (e *PythonError) Error() string {
	var b strings.Builder
	if e.Source != "" {
		fmt.Fprintf(&b, "worker interpreter from %s refused:", e.Source)
	} else {
		fmt.Fprintf(&b, "no worker interpreter found; tried:")
	}
	for _, t := range e.Tried {
		name := t.Name
		if t.Path != "" && t.Path != t.Name {
			name += " (" + t.Path + ")"
		}
		fmt.Fprintf(&b, "\n  %s: %s", name, t.Why)
	}
	fmt.Fprintf(&b, "\nset %s (or pass --python) to an interpreter that has torch and that every user can reach, "+
		"e.g. %s=/usr/bin/python3, or install torch for one (Debian: apt-get install python3-torch)", PythonEnv, PythonEnv)
	return b.String()
}

// ProbeTorch says why python cannot import torch, nil when it can: one
// isolated interpreter (-I, as workers run) in the environment a
// sandboxed worker gets, bounded by PythonProbeTimeout.
func ProbeTorch(ctx context.Context, python string) error {
	ctx, cancel := context.WithTimeout(ctx, PythonProbeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, "-I", "-c", "import torch")
	cmd.Env, cmd.Dir = sandboxEnv(nil), "/"
	// A child that keeps the output pipe open does not hold the probe.
	cmd.WaitDelay = time.Second
	out, err := cmd.CombinedOutput()
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		return fmt.Errorf("import torch did not finish within %s", PythonProbeTimeout)
	case err != nil:
		msg := lastLine(strings.TrimSpace(string(out)))
		if len(msg) > 300 {
			msg = msg[:300] + "…"
		}
		if msg == "" {
			msg = err.Error()
		}
		return fmt.Errorf("it cannot import torch: %s", msg)
	}
	return nil
}

// ValidatorRoot writes the embedded validator packages under dir (which must
// not exist yet) with read-only files, and returns dir. Workers get dir
// first on sys.path.
func ValidatorRoot(dir string) (string, error) {
	return writeRoot(dir, "validator root", kref.Files, kworker.Files)
}

// JudgeRoot is ValidatorRoot with the engine substrate beside the
// validator packages: the audit's judge reads a MoE layer's experts from
// the model with the substrate's own loader and stacking, so that it sees
// them as the audited engine did. The substrate is the validator's code;
// no candidate code is in either.
func JudgeRoot(dir string) (string, error) {
	return writeRoot(dir, "judge root", kref.Files, kworker.Files, ksubstrate.Files)
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
