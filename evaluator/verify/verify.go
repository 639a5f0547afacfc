package verify

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/cacheon/engine/catalog"
	"github.com/cacheon/engine/evaluator/lanes"
	"github.com/cacheon/engine/evaluator/prebuild"
	"github.com/cacheon/engine/evaluator/sandbox"
	"github.com/cacheon/engine/evaluator/worker"
	"github.com/cacheon/engine/kernels/bundle"
	"github.com/cacheon/engine/kernels/contribution"
	"github.com/cacheon/engine/kernels/scan"
)

// Options configure a verify run.
type Options struct {
	Device    string        // "cpu" or "cuda"
	DType     string        // "bfloat16", "float16" or "float32"
	Seed      int64         // case seeds and shape jitter derive from it
	WorldSize int           // ranks for collective slots
	Python    string        // worker interpreter; "" = $CACHEON_PYTHON or python3 on PATH (see ChoosePython)
	Timeout   time.Duration // per worker process
	WorkDir   string        // parent of the run directory; "" = the system temp dir
	KeepWork  bool          // keep the run directory (worker logs, raw outputs)
	Progress  io.Writer     // one line per step; nil = silent
	// Catalog states every slot's contract: call signature, catalog shapes,
	// graph-dynamic inputs, correctness policy, tolerances. nil = the default
	// catalog compiled into the binary. Workers receive each slot's contract
	// from it; the Python side keeps only the slots' semantics.
	Catalog *catalog.Catalog
	// SkipScanUnsafe runs bundle code even when the static scan finds
	// policy violations. Only for testing the runtime defences themselves:
	// the scan is the tripwire that keeps known-bad code out of workers.
	// It never skips intake's payload check (see Payload).
	SkipScanUnsafe bool
	// Payload are the options of intake's payload stage, which every
	// bundle passes before any worker starts (see intakePayload): the
	// closure functions and the reviewed patchers' digests that intake
	// (bundle inspect, stack materialize) is given. A nil Closure is
	// contribution.PythonClosure, a nil CUDACheck
	// contribution.CUDAIncludeCheck; with no PatcherDigests, a rebuild.json
	// step binds only the validator's own patchers.
	Payload contribution.PayloadOptions
	// Unisolated runs workers without a sandbox, as plain child processes
	// with the caller's user, files, network and environment
	// (--unsafe-no-isolation). Without it, a host where sandboxes cannot be
	// made refuses to run candidate code.
	Unisolated bool
	// CheckerWitness has a checker process own the checked calls' memory
	// on the CPU too (a memfd block), as one always does on a GPU, where
	// the controller cannot read device memory itself (worker.Checker).
	// By default the CPU lane's calls live in the controller's own arena
	// files, which cost no process.
	CheckerWitness bool
	// Limits bound each sandboxed worker (memory, processes, files).
	Limits sandbox.Limits
	// NativeArtifact is a sealed prebuild artifact of this bundle (a
	// directory of an evaluator/prebuild store) for its cuda_sources rows;
	// "" prebuilds them in the run directory. Workers load the sealed
	// libraries and never compile.
	NativeArtifact string
	// PrebuildTimeout bounds the prebuild; 0 = prebuild.DefaultTimeout.
	PrebuildTimeout time.Duration
	// ChoosePython picks the interpreter with worker.ChoosePython (Python
	// as its --python), once the bundle's own checks pass and before any
	// worker starts, so that an interpreter the sandbox user cannot reach
	// or without torch is refused as the machine's error, naming the fix.
	// The command line sets it; a caller that chose the interpreter
	// already (qualify) leaves it false and Python is resolved as given.
	ChoosePython bool
}

// Defaults for Options fields left zero.
const (
	DefaultDType     = "bfloat16"
	DefaultWorldSize = 2
	DefaultTimeout   = 10 * time.Minute
)

// ErrUsage marks an invalid option.
var ErrUsage = errors.New("invalid verify options")

func (o *Options) normalize() error {
	if o.Device == "" {
		o.Device = "cpu"
	}
	if o.Device != "cpu" && o.Device != "cuda" {
		return fmt.Errorf("%w: device %q (want cpu or cuda)", ErrUsage, o.Device)
	}
	if o.DType == "" {
		o.DType = DefaultDType
	}
	switch o.DType {
	case "bfloat16", "float16", "float32":
	default:
		return fmt.Errorf("%w: dtype %q (want bfloat16, float16 or float32)", ErrUsage, o.DType)
	}
	if o.WorldSize == 0 {
		o.WorldSize = DefaultWorldSize
	}
	if o.WorldSize < 2 || o.WorldSize > 64 {
		return fmt.Errorf("%w: world size %d (want 2..64)", ErrUsage, o.WorldSize)
	}
	if o.Seed < 0 {
		return fmt.Errorf("%w: seed %d is negative", ErrUsage, o.Seed)
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
	if o.Payload.Closure == nil {
		o.Payload.Closure = contribution.PythonClosure
	}
	if o.Payload.CUDACheck == nil {
		o.Payload.CUDACheck = contribution.CUDAIncludeCheck
	}
	if o.Catalog == nil {
		c, err := catalog.Default()
		if err != nil {
			return err
		}
		o.Catalog = c
	}
	return nil
}

// Run verifies the bundle at dir: every op row whose slot is registered is
// run in fresh worker processes on validator inputs and judged against the
// fp32 truth. The returned error is a usage or infrastructure failure that
// prevented a report (an unreadable manifest, no interpreter, a broken
// plan); a candidate's failure is a FAIL row in the report, never an error.
func Run(ctx context.Context, dir string, o Options) (*Report, error) {
	if err := o.normalize(); err != nil {
		return nil, err
	}
	bundleDir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	// Intake's rules first (limits, names, canonical paths): verify runs
	// no bundle that intake would refuse.
	if err := bundle.CheckBundlePaths(bundleDir); err != nil {
		return nil, err
	}
	if _, err := bundle.Load(bundleDir); err != nil {
		return nil, err
	}
	parent := o.WorkDir
	if parent == "" {
		parent = os.TempDir()
	}
	removeStaleRunDirs(parent)
	// The pid in the name lets a later run tell a killed run's directory
	// from a live one's.
	runDir, err := os.MkdirTemp(o.WorkDir, fmt.Sprintf("%s%d-", runDirPrefix, os.Getpid()))
	if err != nil {
		return nil, fmt.Errorf("run directory: %w", err)
	}
	if !o.KeepWork {
		defer worker.RemoveAll(runDir)
	} else {
		defer worker.Unfreeze(runDir)
		fmt.Fprintf(o.Progress, "work directory: %s\n", runDir)
	}
	if err := sandbox.SearchableDir(runDir); err != nil {
		return nil, fmt.Errorf("run directory: %w", err)
	}
	// Everything from here reads the staged copy: the manifest, the scan
	// and every worker see the same bytes.
	staged := filepath.Join(runDir, "bundle")
	snap, contentHash, err := stageBundle(bundleDir, staged)
	if err != nil {
		return nil, err
	}
	m, err := bundle.Load(staged)
	if err != nil {
		return nil, err
	}
	// The static scan is the first gate: a bundle with policy violations
	// never reaches a worker.
	sc, err := scan.Bundle(staged)
	if err != nil {
		return nil, fmt.Errorf("static scan: %w", err)
	}
	rep := &Report{Schema: ReportSchema, Bundle: bundleDir, BundleID: m.BundleID, ABI: m.ABIVersion, ContentHash: contentHash.String(),
		Device: o.Device, DType: o.DType, Seed: o.Seed, WorldSize: o.WorldSize, Notes: []string{},
		Scan: scanSummary(sc), Isolation: IsolationSandbox}
	if differ := contractsDifferFromDefault(o.Catalog, m); len(differ) > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("the catalog in use (digest %s) states other contracts than the "+
			"default catalog for %s", o.Catalog.Digest(), strings.Join(differ, ", ")))
	}
	if sc.Violations > 0 && !o.SkipScanUnsafe {
		reason := fmt.Sprintf("static scan found %d violation(s), first: %s (see cacheon scan)", sc.Violations, rep.Scan.First)
		for _, op := range m.Ops {
			rep.Rows = append(rep.Rows, RowResult{Slot: op.Slot, Variant: op.Variant, Source: op.Source, Entry: op.Entry,
				Verdict: Fail, Reason: reason, Cases: []CaseResult{}, Workers: []WorkerRun{}})
		}
		fmt.Fprintf(o.Progress, "[FAIL] %s\n", Printable(reason))
		rep.decide()
		return rep, nil
	}
	if sc.Violations > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("static scan violations ignored (unsafe): %d", sc.Violations))
	}
	if sc.Advisories > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("static scan advisory: %s", rep.Scan.FirstAdvisory))
	}
	if err := intakePayload(snap, o.Payload); err != nil {
		return nil, err
	}

	var python string
	if o.ChoosePython {
		python, err = worker.ChoosePython(ctx, worker.PythonChoice{Configured: o.Python, Sandboxed: !o.Unisolated})
	} else {
		python, err = worker.ResolvePython(o.Python)
	}
	if err != nil {
		return nil, err
	}
	iso := worker.Isolation{Unsafe: o.Unisolated, Hide: []string{runDir}, Limits: o.Limits, Roots: worker.NewRootCache()}
	if o.Unisolated {
		rep.Isolation = IsolationNone
		rep.Notes = append(rep.Notes, "UNSAFE: workers ran without isolation (--unsafe-no-isolation): candidate code "+
			"had the caller's user, files, network and environment")
		fmt.Fprintln(o.Progress, "warning: running candidate code WITHOUT isolation (--unsafe-no-isolation)")
	} else if err := sandbox.Available(filepath.Join(runDir, ".probe")); err != nil {
		return nil, fmt.Errorf("%w; refusing to run candidate code uncontained (--unsafe-no-isolation runs it anyway, "+
			"on a machine you can throw away)", err)
	}
	if o.Device == "cuda" {
		iso.Devices = lanes.DeviceNodes()
	}
	r := &runner{ctx: ctx, o: o, iso: iso, python: python, runDir: runDir, bundle: staged}
	plan, err := r.plan(m)
	if err != nil {
		return nil, err
	}
	if o.Device == "cuda" && !plan.Env.CUDAAvailable {
		return nil, fmt.Errorf("device cuda: torch in %s (%s) reports no usable CUDA device", python, plan.Env.Torch)
	}
	rep.Worker = workerInfo(python, plan.Env, o.Timeout)
	if o.Device == "cpu" {
		rep.Notes = append(rep.Notes, "running on CPU: the CUDA graph gate does not run here, and kernels that "+
			"need a GPU (Triton, CUDA) cannot pass; verify on --device cuda before proposing")
	}

	nativeVerdict, nativeReason, err := r.prebuild(m, rep)
	if err != nil {
		return nil, err
	}
	if nativeVerdict != "" {
		fmt.Fprintf(o.Progress, "[%s] %s\n", nativeVerdict, Printable(nativeReason))
	}

	domainErr := bundle.CheckVariantDomains(m)
	for i := range m.Ops {
		op := &m.Ops[i]
		row := RowResult{Slot: op.Slot, Variant: op.Variant, Source: op.Source, Entry: op.Entry, Cases: []CaseResult{}, Workers: []WorkerRun{}}
		slot, registered := o.Catalog.Slot(op.Slot)
		ps, planned := plan.Slots[op.Slot]
		switch {
		case !registered:
			row.Verdict, row.Reason = Skip, "not a registered slot"
		case !planned || !ps.Known:
			row.Verdict = Error
			row.Reason = fmt.Sprintf("the catalog registers slot %s but this validator has no reference semantics "+
				"(generators, fp32 truth) for it", op.Slot)
		case ps.ContractError != "":
			row.Verdict, row.Reason = Error, ps.ContractError
		case len(op.CUDASources) > 0 && nativeVerdict != "":
			row.Verdict, row.Reason = nativeVerdict, nativeReason
		case domainErr != nil:
			row.Verdict, row.Reason = Fail, domainErr.Error()
		default:
			r.verifyRow(i, op, worker.ContractOf(slot), ps, plan.Env, &row)
		}
		fmt.Fprintf(o.Progress, "[%s] %s [variant '%s']: %s\n", row.Verdict, Printable(row.Slot), Printable(row.Variant), Printable(row.Reason))
		rep.Rows = append(rep.Rows, row)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	rep.decide()
	return rep, nil
}

// contractsDifferFromDefault lists the bundle's slots whose contract in c
// differs from the default catalog's. The catalog digest cannot tell: shapes
// and the call signature guide verification but are not part of any identity.
func contractsDifferFromDefault(c *catalog.Catalog, m *bundle.Manifest) []string {
	def, err := catalog.Default()
	if err != nil {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for _, op := range m.Ops {
		if seen[op.Slot] {
			continue
		}
		seen[op.Slot] = true
		s, ok := c.Slot(op.Slot)
		if !ok {
			continue
		}
		d, ok := def.Slot(op.Slot)
		if !ok || !reflect.DeepEqual(worker.ContractOf(s), worker.ContractOf(d)) {
			out = append(out, op.Slot)
		}
	}
	sort.Strings(out)
	return out
}

type runner struct {
	ctx    context.Context
	o      Options
	iso    worker.Isolation
	python string
	runDir string
	bundle string // the staged copy
	roots  int
	native *prebuild.Sealed // the cuda_sources rows' libraries; nil when none
}

// validatorRoot writes a fresh copy of the validator's packages for one
// worker (or one group of ranks): no worker ever sees the copy another
// role runs from.
func (r *runner) validatorRoot() (string, error) {
	r.roots++
	return worker.ValidatorRoot(filepath.Join(r.runDir, fmt.Sprintf("validator-%d", r.roots)))
}

// plan runs the plan role for the bundle's slots the catalog registers,
// sending each slot's catalog contract.
func (r *runner) plan(m *bundle.Manifest) (*worker.PlanResult, error) {
	slots := map[string]bool{}
	for _, op := range m.Ops {
		slots[op.Slot] = true
	}
	names := make([]string, 0, len(slots))
	for s := range slots {
		names = append(names, s)
	}
	sort.Strings(names)
	contracts := []worker.SlotContract{}
	for _, name := range names {
		if s, ok := r.o.Catalog.Slot(name); ok {
			contracts = append(contracts, worker.ContractOf(s))
		}
	}
	dir := filepath.Join(r.runDir, "plan")
	req := worker.PlanRequest{Protocol: worker.Protocol, Role: worker.RolePlan, WorkDir: dir, Contracts: contracts,
		Seed: r.o.Seed, WorldSize: r.o.WorldSize, Device: r.o.Device}
	fmt.Fprintf(r.o.Progress, "planning cases with %s\n", r.python)
	root, err := r.validatorRoot()
	if err != nil {
		return nil, err
	}
	out, err := worker.Run(r.ctx, r.iso, worker.Spec{Python: r.python, ValidatorRoot: root, WorkDir: dir, Request: req, Timeout: r.validatorTimeout()})
	if err != nil {
		return nil, err
	}
	if !out.Clean() {
		return nil, fmt.Errorf("worker interpreter %s could not plan the cases (%s): %s", r.python, out.Describe(),
			lastLine(worker.Tail(dir, worker.StderrFile, 2000)))
	}
	var plan worker.PlanResult
	if err := worker.ReadResult(dir, &plan); err != nil {
		return nil, err
	}
	if plan.HarnessError != "" {
		return nil, fmt.Errorf("plan worker: %s", plan.HarnessError)
	}
	return &plan, nil
}

// validatorTimeout bounds workers that run only validator code (plan,
// reference). --timeout is for candidate code; a short one must not starve
// the validator's own work on a loaded host.
func (r *runner) validatorTimeout() time.Duration {
	if r.o.Timeout > DefaultTimeout {
		return r.o.Timeout
	}
	return DefaultTimeout
}

func workerInfo(python string, env worker.Env, timeout time.Duration) WorkerInfo {
	w := WorkerInfo{Python: python, PythonVersion: env.PythonVersion, Torch: env.Torch, Triton: env.Triton,
		DeviceName: env.DeviceName, Timeout: timeout.String()}
	if env.Architecture != nil {
		w.Architecture = *env.Architecture
	}
	return w
}

func lastLine(s string) string {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '\n' {
			return s[i+1:]
		}
	}
	return s
}
