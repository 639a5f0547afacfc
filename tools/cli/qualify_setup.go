package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/cacheon/engine/evaluator/audit"
	"github.com/cacheon/engine/evaluator/evidence"
	"github.com/cacheon/engine/evaluator/lanes"
	"github.com/cacheon/engine/evaluator/qualify"
	"github.com/cacheon/engine/evaluator/quality"
	"github.com/cacheon/engine/evaluator/roofline"
	"github.com/cacheon/engine/evaluator/sandbox"
	"github.com/cacheon/engine/evaluator/speed"
	"github.com/cacheon/engine/evaluator/verify"
	"github.com/cacheon/engine/evaluator/worker"
	"github.com/cacheon/engine/evaluator/workload"
	"github.com/cacheon/engine/internal/atomicwrite"
	"github.com/cacheon/engine/internal/reject"
	"github.com/cacheon/engine/models"
	"github.com/cacheon/engine/models/testmodel"
	"github.com/cacheon/engine/stacks/materialize"
	"github.com/cacheon/engine/stacks/plan"
	"github.com/cacheon/engine/stacks/stack"
	"github.com/cacheon/engine/tools/cli/enginecli"
)

// qualificationFlags are the inputs qualify and qualify calibrate share:
// the incumbent, the model, the workload and policy, the interpreter and
// the isolation.
type qualificationFlags struct {
	input      enginecli.StackInputOptions
	deps       enginecli.StackDeps
	incumbent  string
	reference  string
	qualityCal string
	auditKey   string
	model      string
	workload   string
	policy     string
	python     string
	unisolated bool
	quiet      bool // --json: no progress from assembly
}

func (o *qualificationFlags) addFlags(f *pflag.FlagSet) {
	o.input.AddFlags(f)
	f.StringVar(&o.incumbent, "incumbent", filepath.Join("stacks", "incumbent.hcl"), "the incumbent evaluation stack file")
	f.StringVar(&o.reference, "reference", filepath.Join("stacks", "reference.hcl"), "the reference stack the pristine reference T runs (no contribution)")
	f.StringVar(&o.qualityCal, "quality-calibration", "", "quality calibration JSON for T's thresholds (default: the embedded CPU calibration)")
	f.StringVar(&o.auditKey, "audit-secret", "", "file holding the validator's audit secret (32 to 4096 bytes; default: a fresh random one per qualification, recorded only by its commitment)")
	f.StringVar(&o.model, "model", "", "sealed model directory (default: the generated test model)")
	f.StringVar(&o.workload, "workload", "", "workload HCL file (default: the embedded smoke workload)")
	f.StringVar(&o.policy, "policy", "", "speed policy HCL file (default: the embedded v8 policy)")
	f.StringVar(&o.python, "python", "", "engine and worker interpreter (default: $CACHEON_PYTHON, else the first of python3 on PATH, /usr/bin/python3, /usr/local/bin/python3 that the sandbox user can reach and that imports torch)")
	f.BoolVar(&o.unisolated, "unsafe-no-isolation", false, "run engines without a sandbox (the report says so)")
}

// qualification is everything a qualification or a calibration runs
// with, set up: a private run directory (removed by close), the
// isolation, the sealed model, the lanes and their sampler.
type qualification struct {
	run         string
	runDir      *atomicwrite.Scratch // run's lock: a killed run's directory is swept by the next
	iso         worker.Isolation
	workload    *workload.Workload
	policy      speed.Policy
	python      string
	stack       *enginecli.LoadedStack
	materialize materialize.Options
	model       string
	modelDigest string
	quality     qualify.QualityInputs
	auditSecret []byte
	lanes       [2]lanes.Lane
	sample      qualify.Sampler
	gpus        gpuDriver
	controller  string
	// peak and peakSource are the lanes' memory bandwidth ceiling for the
	// roofline floor (0 on the CPU lane or an unlisted GPU).
	peak       float64
	peakSource string
}

// options are the qualification of candidate with this setup: the one
// place both qualify and qualify --ledger build it.
func (q *qualification) options(incumbentPath, candidate string, store *evidence.Store, runDir string, progress func(string, ...any), prior *qualify.Report) qualify.Options {
	return qualify.Options{
		Plan:  plan.Request{Incumbent: q.stack.Assembled, IncumbentPath: incumbentPath, CandidateDir: candidate, Materialize: q.materialize},
		Model: q.model, ModelDigest: q.modelDigest, Workload: q.workload, Policy: q.policy, Store: store, RunDir: runDir, Python: q.python,
		Lanes: q.lanes, Sample: q.sample, Isolation: q.iso, Controller: q.controller, Progress: progress, Reproduces: prior, Quality: q.quality, AuditSecret: q.auditSecret,
		Verify:   verify.Options{Device: q.lanes[1].Device, Python: q.python, Catalog: q.stack.Catalog, Payload: q.stack.Payload},
		LanePeak: q.peak, LanePeakSource: q.peakSource,
	}
}

func (q *qualification) close() {
	if q.gpus != nil {
		_ = q.gpus.Close()
	}
	worker.RemoveAll(q.run)
	if q.runDir != nil {
		q.runDir.Unlock()
	}
}

// qualificationRunBase names the work directories of qualifications:
// each is a locked scratch directory beside it in the temporary directory,
// .cacheon-qualify.work-PID-N, held by its run.
func qualificationRunBase() string { return filepath.Join(os.TempDir(), "cacheon-qualify") }

// qualificationRunDir makes this qualification's work directory, after
// removing those that killed qualifications left behind (3 to 107 MB
// each): unlocked, older than a minute. A live run's directory is locked
// and stays.
func qualificationRunDir(s Streams, quiet bool) (*atomicwrite.Scratch, error) {
	// A killed run's engines may have left their bounded work directories
	// mounted (a tmpfs each, mounted by the controller on the host): they
	// are unmounted first, or its directory could not be removed.
	sandbox.UnmountStaleWork()
	removed, err := atomicwrite.RemoveStale(qualificationRunBase())
	if err != nil && !quiet {
		// Another user's directory, say: sweeping is housekeeping, never
		// a reason not to qualify.
		fmt.Fprintf(s.Err, "cacheon: left the work directories of earlier qualifications: %v\n", err)
	}
	if !quiet {
		for _, p := range removed {
			fmt.Fprintf(s.Err, "cacheon: removed %s, the work directory of a qualification that was killed\n", p)
		}
	}
	return atomicwrite.MkdirScratch(qualificationRunBase(), atomicwrite.KindWork)
}

// setUpQualification reads the inputs and prepares the machine. Its
// errors are the command's: bad inputs are rejections (exit 2), the rest
// usage or I/O (exit 1).
func setUpQualification(ctx context.Context, s Streams, o qualificationFlags) (q *qualification, err error) {
	q = &qualification{}
	if q.workload, err = qualifyWorkload(o.workload); err != nil {
		return nil, err
	}
	if q.policy, err = qualifyPolicy(o.policy); err != nil {
		return nil, err
	}
	// The interpreter is checked before anything runs: one the sandbox
	// user cannot reach, or without torch, would otherwise surface as the
	// abi screen's NO_DECISION, a machine's error reported as a verdict.
	if q.python, err = worker.ChoosePython(ctx, worker.PythonChoice{Configured: o.python, Sandboxed: !o.unisolated}); err != nil {
		return nil, err
	}
	if q.stack, err = enginecli.LoadStack(s, o.incumbent, o.input, o.deps, o.quiet); err != nil {
		return nil, err
	}
	if q.materialize, err = enginecli.MaterializeOptions(s, q.stack, o.deps, true); err != nil {
		return nil, err
	}
	if q.runDir, err = qualificationRunDir(s, o.quiet); err != nil {
		return nil, err
	}
	q.run = q.runDir.Path
	// The named result q is nil once an error is returned, so the clean-up
	// holds its own reference to what was set up.
	made := q
	defer func() {
		if err != nil {
			made.close()
		}
	}()
	if err := sandbox.SearchableDir(q.run); err != nil {
		return nil, err
	}
	q.iso = worker.Isolation{Unsafe: o.unisolated, Hide: []string{q.run}, Roots: worker.NewRootCache()}
	if !o.unisolated {
		if err := sandbox.Available(filepath.Join(q.run, "probe")); err != nil {
			return nil, fmt.Errorf("%w; pass --unsafe-no-isolation to run engines unisolated (the report says so)", err)
		}
	}
	if q.model, q.modelDigest, err = qualifyModel(o.model, q.run); err != nil {
		return nil, err
	}
	if q.quality, err = qualityInputs(s, o, q.run); err != nil {
		return nil, err
	}
	if err := qualityCalibrationFits(o.qualityCal, q); err != nil {
		return nil, err
	}
	// Without --audit-secret every qualification draws its own
	// (qualify.Run): the secret is its authority's (docs/reference/
	// settlement.md), so a reproduction never shares the first attempt's
	// authority or audit seed.
	if o.auditKey != "" {
		if q.auditSecret, err = audit.LoadSecret(o.auditKey); err != nil {
			return nil, err
		}
	}
	if q.gpus, err = openGPUDriver(); err != nil {
		return nil, err
	}
	gpus, gerr := q.gpus.Discover(ctx)
	if gerr != nil && !isNoGPU(gerr) {
		return nil, fmt.Errorf("GPU discovery (%s): %w", q.gpus.Name(), gerr)
	}
	if q.lanes, err = lanes.Plan(gpus, q.workload.Engine.TensorParallel); err != nil {
		return nil, reject.Wrap(err)
	}
	q.peak, q.peakSource = roofline.LanesPeak(laneGPUNames(gpus, q.lanes))
	if q.lanes[1].Device == "cuda" {
		q.iso.Devices = lanes.DeviceNodes()
		q.sample = q.gpus.Read
		if !o.quiet {
			fmt.Fprintf(s.Err, "cacheon: lanes: %d GPU(s) found through %s, sampled around every read\n", len(gpus), q.gpus.Name())
		}
	}
	q.controller, _ = selfDigest()
	return q, nil
}

// laneGPUNames are the driver's names of the GPUs either lane uses.
func laneGPUNames(gpus []lanes.GPU, l [2]lanes.Lane) []string {
	var names []string
	for _, lane := range l {
		for _, uuid := range lane.GPUs {
			for _, g := range gpus {
				if g.UUID == uuid {
					names = append(names, g.Name)
				}
			}
		}
	}
	return names
}

// lanesName says which lanes a calibration measured.
func lanesName(l [2]lanes.Lane) string {
	switch {
	case l[1].Device != "cuda":
		return "cpu"
	case l[0].Shared:
		return "cuda shared"
	}
	return "cuda disjoint"
}

// readReport reads a qualification report file.
func readReport(path string) (*qualify.Report, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	r, err := qualify.ParseReport(data)
	if err != nil {
		return nil, reject.Wrap(fmt.Errorf("%s: %w", path, err))
	}
	return r, nil
}

func qualifyWorkload(path string) (*workload.Workload, error) {
	if path == "" {
		return qualify.DefaultWorkload()
	}
	w, diags := workload.Load(path)
	if diags.HasErrors() {
		if _, err := os.Stat(path); err != nil {
			return nil, err
		}
		return nil, reject.Wrap(diags)
	}
	return w, nil
}

func qualifyPolicy(path string) (speed.Policy, error) {
	if path == "" {
		return qualify.DefaultPolicy(), nil
	}
	p, diags := speed.LoadPolicyFile(path)
	if diags.HasErrors() {
		if _, err := os.Stat(path); err != nil {
			return speed.Policy{}, err
		}
		return speed.Policy{}, reject.Wrap(diags)
	}
	return p, nil
}

// qualifyModel returns the sealed model to serve and its content digest:
// the one given, or the test model written into the run directory.
func qualifyModel(dir, run string) (string, string, error) {
	if dir == "" {
		dir = filepath.Join(run, "model")
		if _, err := testmodel.Write(dir, testmodel.DefaultShape(false), 3); err != nil {
			return "", "", err
		}
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", "", err
	}
	if !othersCanReach(abs) {
		// The sandbox user could not reach it (a Bazel output base under
		// a 0700 home): engines serve a copy in the run directory, sealed
		// below like any model.
		cp := filepath.Join(run, "model-copy")
		if err := copyModel(abs, cp); err != nil {
			return "", "", fmt.Errorf("copy the model %s where the sandbox can read it: %w", abs, err)
		}
		abs = cp
	}
	rc, err := models.Provision(abs, models.Options{})
	if err != nil {
		return "", "", err
	}
	return abs, rc.ContentDigest, nil
}

func isNoGPU(err error) bool { return errors.Is(err, lanes.ErrNoGPU) }

// selfDigest is the SHA-256 of the running binary, for the report.
func selfDigest() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	f, err := os.Open(exe)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// othersCanReach reports whether every directory above path lets any user
// through, as the sandbox's unprivileged user needs.
func othersCanReach(path string) bool {
	for d := filepath.Dir(path); ; d = filepath.Dir(d) {
		info, err := os.Stat(d)
		if err != nil || info.Mode().Perm()&0o001 == 0 {
			return false
		}
		if d == filepath.Dir(d) {
			return true
		}
	}
}

// copyModel copies the regular files of a model directory (config.json,
// the safetensors shards) into a new directory dst.
func copyModel(src, dst string) error {
	if err := os.Mkdir(dst, 0o755); err != nil {
		return err
	}
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil || rel == "." {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.Mkdir(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s: not a regular file", p)
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o444)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
}

// qualityInputs materializes the reference stack (no contribution at all)
// for the pristine reference T and reads its quality calibration.
func qualityInputs(s Streams, o qualificationFlags, run string) (qualify.QualityInputs, error) {
	var in qualify.QualityInputs
	ref, err := enginecli.LoadStack(s, o.reference, o.input, o.deps, o.quiet)
	if err != nil {
		return in, err
	}
	if ref.Assembled.File.Kind != stack.Reference {
		return in, reject.Wrap(fmt.Errorf("%s: the reference must be a reference stack, this is a %s stack", o.reference, ref.Assembled.File.Kind))
	}
	mopts, err := enginecli.MaterializeOptions(s, ref, o.deps, true)
	if err != nil {
		return in, err
	}
	in.ReferenceTree = filepath.Join(run, "reference")
	noContribution := func(id string, _ stack.Ref) (string, error) {
		return "", fmt.Errorf("%s: the reference stack names contribution %s", o.reference, id)
	}
	if _, err := materialize.Materialize(ref.Assembled.Manifest, noContribution, in.ReferenceTree, mopts); err != nil {
		return in, err
	}
	if o.qualityCal == "" {
		in.Calibration, err = quality.DefaultCalibration()
		return in, err
	}
	data, err := os.ReadFile(o.qualityCal)
	if err != nil {
		return in, err
	}
	if in.Calibration, err = quality.ParseCalibration(o.qualityCal, data); err != nil {
		return in, reject.Wrap(err)
	}
	return in, nil
}

// qualityCalibrationFits refuses, before any engine starts, a calibration
// file given with --quality-calibration that was measured for other
// inputs: T would only end NO_DECISION with it after the whole run. The
// embedded default is left to T, which says the same in its reason.
func qualityCalibrationFits(file string, q *qualification) error {
	cal := q.quality.Calibration
	if file == "" || cal == nil || cal.Status != quality.Calibrated {
		return nil
	}
	wd, err := q.workload.Digest()
	if err != nil {
		return err
	}
	tree, err := materialize.Verify(q.quality.ReferenceTree)
	if err != nil {
		return fmt.Errorf("reference tree: %w", err)
	}
	if err := cal.Fits(q.modelDigest, wd, tree.TreeDigest.String()); err != nil {
		return reject.Wrap(fmt.Errorf("%s: %w", file, err))
	}
	return nil
}
