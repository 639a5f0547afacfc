package prebuild

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/cacheon/engine/evaluator/sandbox"
	"github.com/cacheon/engine/evaluator/worker"
	"github.com/cacheon/engine/internal/reject"
	"github.com/cacheon/engine/kernels/bundle"
	"github.com/cacheon/engine/kernels/cudaclosure"
	"github.com/cacheon/engine/kernels/patchers"
)

// Options configure one prebuild.
type Options struct {
	// Bundle is the bundle directory (a staged, read-only copy: the
	// compiler reads the same bytes the scan read), or a materialized
	// engine tree, whose runtime manifest has the same op rows.
	Bundle string
	// Store is the artifact store: the sealed artifact is Store/<digest hex>.
	Store string
	// WorkDir is the parent of the build's run directory; "" = the system
	// temp dir. The run directory is removed at the end.
	WorkDir string
	// Target is "cpu" (the declared .cu files are compiled as host C++ by
	// the C++ compiler: they must hold host code only) or "cuda" (nvcc).
	Target string
	// Arch is the CUDA architecture of the cuda target; "" = DefaultArch.
	Arch string
	// Python is the interpreter whose torch the libraries are built
	// against and later loaded by; "" = $CACHEON_PYTHON or python3.
	Python string
	// Compiler overrides the compiler (an absolute path); "" = g++ for cpu,
	// nvcc from torch's CUDA_HOME (or PATH) for cuda.
	Compiler string
	// Timeout is the budget of the whole prebuild (probe and every
	// library); 0 = DefaultTimeout. Past it the prebuild is NO_DECISION.
	Timeout time.Duration
	// Limits bound the compiler child; zero fields take the sandbox
	// defaults.
	Limits sandbox.Limits
	// Unisolated runs the compiler as a plain child process, without a
	// sandbox (--unsafe-no-isolation).
	Unisolated bool
	// Progress gets one line per step; nil = silent.
	Progress io.Writer
}

// Defaults.
const (
	DefaultTimeout = 10 * time.Minute
	DefaultArch    = "sm_90" // the H200
	// LogTailBytes is how much of each compiler log a receipt keeps.
	LogTailBytes = 4000
	// FirstErrorLines is how many error lines a compile rejection quotes.
	FirstErrorLines = 6
)

// ReceiptSchema names the receipt format.
const ReceiptSchema = "prebuild-receipt-v1"

// Receipt says how an artifact was built. It is evidence beside the seal,
// not part of it: durations and host paths differ from build to build.
type Receipt struct {
	Schema          string `json:"schema"`
	Seal            string `json:"seal"` // the artifact digest (hex)
	Target          string `json:"target"`
	Arch            string `json:"arch,omitempty"`
	Torch           string `json:"torch"`
	TorchCUDA       string `json:"torch_cuda,omitempty"`
	Compiler        string `json:"compiler"`
	CompilerVersion string `json:"compiler_version"`
	Isolation       string `json:"isolation"` // "sandbox" or "none"
	// Patcher is the SHA-256 of the build_cuda_ext patcher that probed
	// the toolchain: the digest the contribution's rebuild step binds.
	Patcher    string `json:"patcher_sha256"`
	Steps      []Step `json:"steps"`
	Outputs    []File `json:"outputs"`
	DurationMS int64  `json:"duration_ms"`
}

// Step is one library's compile.
type Step struct {
	Slot       string   `json:"slot"`
	Variant    string   `json:"variant"`
	Library    string   `json:"library"`
	Argv       []string `json:"argv"`
	DurationMS int64    `json:"duration_ms"`
	LogTail    string   `json:"log_tail"`
}

// Result is a sealed prebuild.
type Result struct {
	Sealed  *Sealed
	Receipt Receipt
}

// NoDecisionError is a prebuild that could not decide anything about the
// contribution: it ran past its budget. Qualification reports it as
// NO_DECISION, never as a loss.
type NoDecisionError struct{ Reason string }

func (e *NoDecisionError) Error() string { return "prebuild: no decision: " + e.Reason }

// ErrCompile is the class of a contribution whose sources do not compile;
// it is a rejection (errors.Is(err, reject.ErrRejected)).
var ErrCompile = reject.New("cuda sources do not compile")

// ErrUsage marks invalid options.
var ErrUsage = errors.New("invalid prebuild options")

// Rows returns the bundle's op rows that declare cuda_sources, in manifest
// order.
func Rows(m *bundle.Manifest) []*bundle.Op {
	var rows []*bundle.Op
	for i := range m.Ops {
		if len(m.Ops[i].CUDASources) > 0 {
			rows = append(rows, &m.Ops[i])
		}
	}
	return rows
}

var archRE = regexp.MustCompile(`^sm_[0-9]{2,3}a?$`)

func (o *Options) normalize() error {
	if o.Bundle == "" || o.Store == "" {
		return fmt.Errorf("%w: a bundle and an artifact store are required", ErrUsage)
	}
	switch o.Target {
	case "cpu":
		if o.Arch != "" {
			return fmt.Errorf("%w: arch %q is for the cuda target", ErrUsage, o.Arch)
		}
	case "cuda":
		if o.Arch == "" {
			o.Arch = DefaultArch
		}
		if !archRE.MatchString(o.Arch) {
			return fmt.Errorf("%w: arch %q (want sm_XY, for example %s)", ErrUsage, o.Arch, DefaultArch)
		}
	default:
		return fmt.Errorf("%w: target %q (want cpu or cuda)", ErrUsage, o.Target)
	}
	if o.Compiler != "" && !filepath.IsAbs(o.Compiler) {
		return fmt.Errorf("%w: compiler %q must be an absolute path", ErrUsage, o.Compiler)
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Timeout < 0 {
		return fmt.Errorf("%w: timeout %s is negative", ErrUsage, o.Timeout)
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	return nil
}

// builder is one prebuild in progress.
type builder struct {
	o        Options
	bundle   string // absolute
	run      string // the run directory
	python   string
	deadline time.Time
	runs     int // child processes run so far (names their logs)
	// roots are the interpreter's library directories and toolchain the
	// directories of torch's headers and libraries and of CUDA, bound
	// read-only into every compiler sandbox: its root holds only /usr of
	// the host (see worker-sandbox.md), and a virtual environment or a
	// CUDA under /opt lies elsewhere.
	roots     *worker.RootCache
	toolchain []string
}

// Build compiles every row of the bundle that declares cuda_sources into
// one library per row, seals the outputs in Store and returns the reopened
// artifact with its receipt. Errors: a rejection (ErrCompile, a refused
// include closure) is the contribution's FAIL; *NoDecisionError is over
// budget; anything else is the host's.
func Build(ctx context.Context, o Options) (*Result, error) {
	start := time.Now()
	if err := o.normalize(); err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(o.Bundle)
	if err != nil {
		return nil, err
	}
	m, err := bundle.Load(dir)
	if err != nil {
		return nil, err
	}
	rows := Rows(m)
	if len(rows) == 0 {
		return nil, fmt.Errorf("%w: bundle %s declares no cuda_sources: nothing to prebuild", ErrUsage, dir)
	}
	// The include closure first: a source whose includes cannot be known
	// statically, or that reaches outside its declared files, is never
	// handed to a compiler.
	for _, op := range rows {
		if _, err := cudaclosure.Build(os.DirFS(dir), op.CUDASources); err != nil {
			return nil, reject.Errorf("%s [%s]: %w", op.Slot, op.Variant, err)
		}
	}
	python, err := worker.ResolvePython(o.Python)
	if err != nil {
		return nil, err
	}
	parent := o.WorkDir
	if parent == "" {
		parent = os.TempDir()
	}
	run, err := os.MkdirTemp(parent, "cacheon-prebuild-")
	if err != nil {
		return nil, fmt.Errorf("prebuild run directory: %w", err)
	}
	defer worker.RemoveAll(run)
	if err := sandbox.SearchableDir(run); err != nil {
		return nil, err
	}
	b := &builder{o: o, bundle: dir, run: run, python: python, deadline: start.Add(o.Timeout), roots: worker.NewRootCache()}
	if !o.Unisolated {
		if err := sandbox.Available(filepath.Join(run, ".probe")); err != nil {
			return nil, fmt.Errorf("%w; refusing to compile contribution sources uncontained", err)
		}
	}
	fmt.Fprintf(o.Progress, "prebuild: probing the %s toolchain of %s\n", o.Target, python)
	tc, err := b.probe(ctx)
	if err != nil {
		return nil, err
	}
	b.toolchain = worker.BindDirs(append(append([]string{tc.CUDAHome}, tc.Include...), tc.Lib...)...)
	staging := filepath.Join(run, "staging")
	out := filepath.Join(staging, "out")
	for _, d := range []string{staging, out, filepath.Join(staging, "tmp")} {
		if err := b.prepareWritable(d); err != nil {
			return nil, err
		}
	}
	art := Artifact{Schema: ArtifactSchema, Target: o.Target, Arch: o.Arch, Torch: tc.Torch, Libraries: []Library{}}
	rec := Receipt{Schema: ReceiptSchema, Target: o.Target, Arch: o.Arch, Torch: tc.Torch, TorchCUDA: tc.TorchCUDA,
		Compiler: tc.Compiler, CompilerVersion: tc.CompilerVersion, Isolation: "sandbox", Patcher: patchers.Digest(patchers.BuildCUDAExt), Steps: []Step{}}
	if o.Unisolated {
		rec.Isolation = "none"
	}
	for i, op := range rows {
		lib := Library{Slot: op.Slot, Variant: op.Variant, Path: libraryName(i, op)}
		var units []string
		for _, src := range op.CUDASources {
			sum, size, err := hashFile(filepath.Join(dir, filepath.FromSlash(src)))
			if err != nil {
				return nil, err
			}
			lib.Sources = append(lib.Sources, File{Path: src, SHA256: sum, Size: size})
			if strings.HasSuffix(src, ".cu") {
				units = append(units, filepath.Join(dir, filepath.FromSlash(src)))
			}
		}
		if len(units) == 0 {
			return nil, reject.Errorf("%s [%s]: cuda_sources declare headers only: no .cu translation unit to compile", op.Slot, op.Variant)
		}
		argv := b.argv(tc, units, filepath.Join(out, filepath.FromSlash(lib.Path)))
		fmt.Fprintf(o.Progress, "prebuild: compiling %s [%s] (%d translation unit(s)) with %s\n", op.Slot, op.Variant, len(units), filepath.Base(tc.Compiler))
		t0 := time.Now()
		res, err := b.exec(ctx, argv, staging, []string{dir}, []string{staging})
		if err != nil {
			return nil, err
		}
		step := Step{Slot: op.Slot, Variant: op.Variant, Library: lib.Path, Argv: argv, DurationMS: time.Since(t0).Milliseconds(),
			LogTail: tail(res.stdout+res.stderr, LogTailBytes)}
		rec.Steps = append(rec.Steps, step)
		if res.timedOut {
			return nil, &NoDecisionError{Reason: fmt.Sprintf("compiling %s [%s] ran past the prebuild's budget of %s", op.Slot, op.Variant, o.Timeout)}
		}
		if res.code != 0 {
			return nil, fmt.Errorf("%w: %s [%s]: %s %s:\n%s", ErrCompile, op.Slot, op.Variant, filepath.Base(tc.Compiler), res.describe(),
				firstErrors(res.stderr+res.stdout, FirstErrorLines))
		}
		switch fi, err := os.Lstat(filepath.Join(out, filepath.FromSlash(lib.Path))); {
		case err != nil:
			return nil, fmt.Errorf("%w: %s [%s]: the compiler exited 0 but wrote no library %s", ErrCompile, op.Slot, op.Variant, lib.Path)
		case !fi.Mode().IsRegular():
			return nil, fmt.Errorf("%w: %s [%s]: the library %s is not a regular file (%s)", ErrCompile, op.Slot, op.Variant, lib.Path, fi.Mode().Type())
		}
		art.Libraries = append(art.Libraries, lib)
	}
	files, err := inventory(out)
	if err != nil {
		return nil, reject.Errorf("prebuild outputs: %w", err)
	}
	art.Files = files
	sealed, err := seal(o.Store, out, &art)
	if err != nil {
		return nil, err
	}
	rec.Seal = sealed.Digest.Hex
	rec.Outputs = files
	rec.DurationMS = time.Since(start).Milliseconds()
	fmt.Fprintf(o.Progress, "prebuild: sealed %d librar(ies) as %s\n", len(art.Libraries), sealed.Digest.Hex)
	return &Result{Sealed: sealed, Receipt: rec}, nil
}

// libraryName is row i's library path inside the artifact.
func libraryName(i int, op *bundle.Op) string {
	safe := func(s string) string {
		return strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' {
				return r
			}
			return '_'
		}, s)
	}
	return fmt.Sprintf("%02d-%s-%s.so", i, safe(op.Slot), safe(op.Variant))
}

// argv is the compile command of one library: every translation unit of
// the row into one shared library linked against torch.
func (b *builder) argv(tc *toolchain, units []string, lib string) []string {
	abi := "0"
	if tc.CXX11ABI {
		abi = "1"
	}
	argv := []string{tc.Compiler}
	if b.o.Target == "cpu" {
		// A .cu file is a CUDA translation unit; on the cpu target the host
		// compiler reads it as C++ (no __CUDACC__), so it must hold host
		// code only.
		argv = append(argv, "-x", "c++", "-std=c++17", "-O2", "-fPIC", "-shared", "-Wno-deprecated-declarations")
	} else {
		num := strings.TrimPrefix(b.o.Arch, "sm_")
		argv = append(argv, "-x", "cu", "-std=c++17", "-O3", "-shared", "-Xcompiler", "-fPIC",
			"-gencode", fmt.Sprintf("arch=compute_%s,code=sm_%s", num, num), "--expt-relaxed-constexpr",
			// As torch's extension builder: c10's half types and CUDA's
			// would otherwise both define the conversions.
			"-D__CUDA_NO_HALF_OPERATORS__", "-D__CUDA_NO_HALF_CONVERSIONS__",
			"-D__CUDA_NO_BFLOAT16_CONVERSIONS__", "-D__CUDA_NO_HALF2_OPERATORS__", "-cudart", "shared")
	}
	argv = append(argv, "-D_GLIBCXX_USE_CXX11_ABI="+abi, "-I"+b.bundle)
	for _, inc := range tc.Include {
		argv = append(argv, "-I"+inc)
	}
	argv = append(argv, units...)
	for _, l := range tc.Lib {
		argv = append(argv, "-L"+l)
	}
	argv = append(argv, "-lc10", "-ltorch", "-ltorch_cpu")
	if b.o.Target == "cuda" {
		argv = append(argv, "-lc10_cuda", "-ltorch_cuda")
	}
	return append(argv, "-o", lib)
}

// ran is how one child process ended.
type ran struct {
	code     int
	signal   string
	timedOut bool
	stdout   string
	stderr   string
}

func (r ran) describe() string {
	if r.signal != "" {
		return "was killed by " + r.signal
	}
	return fmt.Sprintf("exited %d", r.code)
}

// exec runs argv in dir inside a sandbox that sees the host read-only,
// readOnly bound, writable the only writable host paths, no device nodes
// and no network, for what is left of the budget.
func (b *builder) exec(ctx context.Context, argv []string, dir string, readOnly, writable []string) (ran, error) {
	left := time.Until(b.deadline)
	if left <= 0 {
		return ran{timedOut: true}, nil
	}
	logs := filepath.Join(b.run, "logs")
	if err := b.prepareWritable(logs); err != nil {
		return ran{}, err
	}
	// The sandbox's init creates the log files, as the sandbox user.
	b.runs++
	stdout := filepath.Join(logs, fmt.Sprintf("%02d.out", b.runs))
	stderr := filepath.Join(logs, fmt.Sprintf("%02d.err", b.runs))
	env := []string{"PATH=" + b.pathEnv(argv[0]), "HOME=" + dir, "TMPDIR=" + filepath.Join(dir, "tmp"), "LC_ALL=C", "LANG=C"}
	if b.o.Target == "cuda" {
		env = append(env, "CUDA_VISIBLE_DEVICES=")
	}
	var r ran
	var err error
	if b.o.Unisolated {
		r, err = b.execPlain(ctx, argv, dir, env, stdout, stderr, left)
	} else {
		r, err = b.execSandboxed(ctx, argv, dir, env, readOnly, writable, logs, stdout, stderr, left)
	}
	if err != nil {
		return r, err
	}
	r.stdout = readTail(stdout, 64<<10)
	r.stderr = readTail(stderr, 64<<10)
	return r, ctx.Err()
}

func (b *builder) execSandboxed(ctx context.Context, argv []string, dir string, env, readOnly, writable []string, logs, stdout, stderr string, left time.Duration) (ran, error) {
	root := filepath.Join(b.run, "root")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return ran{}, err
	}
	// The host's /tmp is out of sight in the sandbox: a program there
	// (a compiler given by path) is bound in, read-only.
	ro := append(append([]string{}, readOnly...), argv[0])
	if b.o.Compiler != "" && b.o.Compiler != argv[0] {
		ro = append(ro, b.o.Compiler)
	}
	roots, err := b.roots.Roots(ctx, b.python)
	if err != nil {
		return ran{}, err
	}
	ro = append(append(ro, roots...), b.toolchain...)
	s := sandbox.Spec{
		Procs:    []sandbox.Proc{{Path: argv[0], Args: argv, Env: env, Dir: dir, Stdout: stdout, Stderr: stderr}},
		Root:     root,
		ReadOnly: ro,
		Writable: append(append([]string{}, writable...), logs),
		Hide:     b.hidden(argv[0]),
		Limits:   b.o.Limits,
		Timeout:  left,
		Log:      filepath.Join(b.run, "sandbox.log"),
	}
	res, err := sandbox.Run(ctx, s)
	if err != nil {
		log, _ := os.ReadFile(s.Log)
		return ran{}, fmt.Errorf("prebuild compiler sandbox: %w (%s)", err, strings.TrimSpace(string(log)))
	}
	e := res.Exits[0]
	if !e.Started && !res.TimedOut {
		return ran{}, fmt.Errorf("prebuild: %s could not be started in the sandbox", argv[0])
	}
	return ran{code: e.Code, signal: e.Signal, timedOut: res.TimedOut}, nil
}

func (b *builder) execPlain(ctx context.Context, argv []string, dir string, env []string, stdout, stderr string, left time.Duration) (ran, error) {
	cctx, cancel := context.WithTimeout(ctx, left)
	defer cancel()
	cmd := exec.CommandContext(cctx, argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = dir, env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	so, err := os.Create(stdout)
	if err != nil {
		return ran{}, err
	}
	defer so.Close()
	se, err := os.Create(stderr)
	if err != nil {
		return ran{}, err
	}
	defer se.Close()
	cmd.Stdout, cmd.Stderr = so, se
	err = cmd.Run()
	r := ran{timedOut: cctx.Err() == context.DeadlineExceeded && ctx.Err() == nil}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			r.signal = ws.Signal().String()
		}
	default:
		return r, fmt.Errorf("prebuild: running %s: %w", argv[0], err)
	}
	return r, nil
}

// hidden are host directories the compiler child does not see: the run
// directory (but for what is bound back) and the home directories, unless
// the toolchain itself lives there.
func (b *builder) hidden(compiler string) []string {
	hide := []string{b.run}
	for _, h := range []string{"/root", "/home"} {
		if within(b.python, h) || within(compiler, h) || within(b.bundle, h) || within(b.run, h) || within(b.o.Store, h) {
			continue
		}
		if fi, err := os.Stat(h); err == nil && fi.IsDir() {
			hide = append(hide, h)
		}
	}
	return hide
}

func within(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// pathEnv is the compiler child's PATH: the compiler's own directory
// (nvcc finds cicc, ptxas and the host compiler through it) and the
// system's.
func (b *builder) pathEnv(compiler string) string {
	return strings.Join([]string{filepath.Dir(compiler), "/usr/local/bin", "/usr/bin", "/bin"}, ":")
}

func (b *builder) prepareWritable(dir string) error {
	if b.o.Unisolated {
		return os.MkdirAll(dir, 0o755)
	}
	return sandbox.PrepareWritable(dir)
}

func readTail(p string, n int64) string {
	f, err := os.Open(p)
	if err != nil {
		return ""
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > n {
		_, _ = f.Seek(fi.Size()-n, io.SeekStart)
	}
	data, _ := io.ReadAll(io.LimitReader(f, n))
	return string(data)
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

var errorLine = regexp.MustCompile(`(?i)(\berror\b|: cannot )`)

// firstErrors returns the compiler's first error lines (the rest of a
// C++ error cascade says little), or the log's last lines when no line
// says error.
func firstErrors(log string, n int) string {
	var got []string
	for _, line := range strings.Split(log, "\n") {
		if errorLine.MatchString(line) {
			got = append(got, strings.TrimRight(line, "\r"))
			if len(got) == n {
				break
			}
		}
	}
	if len(got) == 0 {
		return lastLines(log, n)
	}
	return strings.Join(got, "\n")
}
