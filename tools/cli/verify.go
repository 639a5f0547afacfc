package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cacheon/engine/evaluator/verify"
	"github.com/cacheon/engine/internal/reject"
	"github.com/cacheon/engine/kernels/contribution"
	"github.com/cacheon/engine/tools/cli/enginecli"
)

type verifyOptions struct {
	bundle    string // the bundle directory
	device    string
	dtype     string
	seed      int64
	worldSize int
	python    string
	timeout   time.Duration
	jsonOut   bool
	keepWork  bool
	unsafe    bool
	quiet     bool
	catalog   string
	patchers  string
}

func newVerifyCommand(s Streams) *cobra.Command {
	var o verifyOptions
	cmd := &cobra.Command{
		Use:   "verify BUNDLE",
		Short: "Check a kernel bundle's correctness against the validator's fp32 references",
		Long: `Verify runs every op row of BUNDLE whose slot is registered on validator
inputs and judges its outputs against the validator's fp32 truth, the same
check a validator runs before it measures anything.

The bundle is statically scanned first (as cacheon scan does); a policy
violation fails every row before any bundle code runs. Then intake's
payload check runs on it, the one cacheon bundle inspect and cacheon stack
materialize run: the Python import closure of the op sources (with its
dynamic-import ban), the CUDA include closure of the declared CUDA sources
and the rebuild plan's reviewed patchers (--patchers, as for bundle
inspect). A bundle it refuses is rejected before any worker starts, naming
the file, the place and the rule.

The cacheon process never loads bundle code. For each op row it spawns fresh
Python worker processes: one per rank runs the row's entry on generated
inputs and validator-allocated outputs, then a separate process that never
imports the bundle regenerates the inputs, computes the truth and compares.
Every worker runs in its own process group under --timeout; a kernel that
raises, hangs, crashes its process, writes NaN, writes a new tensor instead
of the given output, re-strides an output or modifies an input fails.

Each case is called twice eagerly (the second time with fresh inputs written
into the same tensors). On --device cuda, op slots (and blocks or
collectives whose metadata says graph_safe) must also pass the CUDA graph
gate: one capture, then three replays on fresh inputs with the outputs
poisoned before each. Collective slots run over --world-size ranks (gloo
on CPU, NCCL on CUDA with one GPU per rank).

Shapes are the slot's catalog shapes with their token, batch and context
counts jittered from --seed; an op row's declared domain (manifest dtypes
and architectures, metadata bounds and capabilities) decides which cases
apply. A case outside it is N/A and never runs.

The worker interpreter is --python, else $CACHEON_PYTHON, else the first
of python3 on PATH, /usr/bin/python3 and /usr/local/bin/python3 that the
sandbox user can reach (every directory on the way to it, links
followed, open to others) and that imports torch; it needs torch (and
triton for Triton kernels). A configured interpreter that fails either
check, or no candidate passing, is refused before any worker starts
(exit 1), naming each interpreter tried and why. The interpreter and its
torch version are recorded in the report.

Exit codes: 0 every applicable row passed; 2 a row failed, nothing was
applicable, or the bundle was rejected before any worker ran (invalid
manifest, metadata or rebuild.json, an intake limit or name rule broken,
intake's payload check failed);
1 a usage or infrastructure error (no bundle or manifest to read, no
interpreter, no torch, a worker of the validator's own failing).`,
		Example: `  # CPU check of a pure-torch kernel
  cacheon verify kernels/contributions/silu_and_mul_torch --device cpu --dtype float32

  # Full check on a GPU, machine-readable
  cacheon verify ./my-bundle --device cuda --dtype bfloat16 --json

  # Pick the interpreter that has torch installed
  cacheon verify ./my-bundle --python /usr/bin/python3 --timeout 2m`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.bundle = args[0]
			return runVerify(cmd.Context(), s, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.device, "device", "cpu", "device to verify on: cpu or cuda")
	f.StringVar(&o.dtype, "dtype", verify.DefaultDType, "activation dtype: bfloat16, float16 or float32")
	f.Int64Var(&o.seed, "seed", 0, "seed for inputs and shape jitter")
	f.IntVar(&o.worldSize, "world-size", verify.DefaultWorldSize, "ranks for collective slots")
	f.StringVar(&o.python, "python", "", "worker interpreter (default $CACHEON_PYTHON, else the first of python3 on PATH, /usr/bin/python3, /usr/local/bin/python3 that the sandbox user can reach and that imports torch)")
	f.DurationVar(&o.timeout, "timeout", verify.DefaultTimeout, "wall-clock limit per worker process")
	f.BoolVar(&o.jsonOut, "json", false, "print the report as JSON")
	f.BoolVar(&o.keepWork, "keep-work", false, "keep the run directory (worker logs, raw outputs) and print its path")
	f.BoolVar(&o.quiet, "quiet", false, "no progress lines on stderr")
	f.BoolVar(&o.unsafe, "unsafe-no-isolation", false, "run workers WITHOUT the sandbox (the caller's user, files, network "+
		"and environment); only where namespaces cannot be made, on a machine you can throw away; the report says so")
	f.StringVar(&o.catalog, "catalog", "", "target catalog HCL whose slot contracts verification follows (default: the built-in catalog)")
	f.StringVar(&o.patchers, "patchers", "", "directory of reviewed rebuild patcher files, over the built-in build_cuda_ext.py (for bundles with a rebuild.json)")
	return cmd
}

func runVerify(ctx context.Context, s Streams, o verifyOptions) error {
	bundle := o.bundle
	var progress io.Writer = s.Err
	if o.quiet {
		progress = io.Discard
	}
	digests, err := enginecli.PatcherDigests(o.patchers)
	if err != nil {
		return err
	}
	// Intake's payload options, as bundle inspect builds them.
	deps := enginecli.DefaultBundleDeps()
	opts := verify.Options{
		Unisolated: o.unsafe,
		Device:     o.device, DType: o.dtype, Seed: o.seed, WorldSize: o.worldSize, Python: o.python,
		Timeout: o.timeout, KeepWork: o.keepWork, Progress: progress, ChoosePython: true,
		Payload: contribution.PayloadOptions{Closure: deps.Closure, CUDACheck: deps.CUDACheck, PatcherDigests: digests},
	}
	if o.catalog != "" {
		l, err := enginecli.LoadCatalogArg([]string{o.catalog})
		if err != nil {
			return fmt.Errorf("--catalog: %w", err)
		}
		if l.Diags.HasErrors() {
			l.WriteDiagnostics(s.Err)
			return reject.Errorf("--catalog %s: the catalog does not validate", o.catalog)
		}
		opts.Catalog = l.Catalog
	}
	rep, err := verify.Run(ctx, bundle, opts)
	if err != nil {
		if errors.Is(err, verify.ErrUsage) {
			return err
		}
		return fmt.Errorf("verify %s: %w", bundle, err)
	}
	if o.jsonOut {
		if err := enginecli.WriteJSON(s.Out, rep); err != nil {
			return err
		}
	} else {
		writeVerifyText(s.Out, rep)
	}
	switch rep.Verdict {
	case verify.Pass:
		return nil
	case verify.Error:
		return enginecli.AlreadyReported(fmt.Errorf("verify %s: the verification did not complete (%s)", bundle, rep.Verdict))
	default:
		return enginecli.AlreadyReported(reject.Errorf("verify %s: verdict %s", bundle, rep.Verdict))
	}
}

func writeVerifyText(w io.Writer, rep *verify.Report) {
	p := verify.Printable // every string below may come from the bundle or a worker
	fmt.Fprintf(w, "bundle: %s  abi: %s  ops: %d\n", p(rep.BundleID), p(rep.ABI), len(rep.Rows))
	fmt.Fprintf(w, "content hash: %s  isolation: %s\n", rep.ContentHash, rep.Isolation)
	wi := rep.Worker
	triton := "none"
	if wi.Triton != nil {
		triton = *wi.Triton
	}
	dev := rep.Device
	if wi.DeviceName != "" {
		dev += " (" + wi.DeviceName + ")"
	}
	fmt.Fprintf(w, "worker: %s  python %s  torch %s  triton %s\n", wi.Python, wi.PythonVersion, wi.Torch, triton)
	fmt.Fprintf(w, "device: %s  arch %s  dtype %s  seed %d  timeout %s\n", dev, wi.Architecture, rep.DType, rep.Seed, wi.Timeout)
	if rep.Scan.Violations == 0 && rep.Scan.Advisories == 0 {
		fmt.Fprintln(w, "scan: clean")
	} else {
		fmt.Fprintf(w, "scan: %d violation(s), %d advisory finding(s)\n", rep.Scan.Violations, rep.Scan.Advisories)
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(w, "note: %s\n", p(n))
	}
	for _, row := range rep.Rows {
		fmt.Fprintf(w, "\n[%s] %s [variant '%s']  %s:%s\n", row.Verdict, p(row.Slot), p(row.Variant), p(row.Source), p(row.Entry))
		if row.Correctness != "" {
			tol := ""
			if row.Tolerance != nil {
				tol = fmt.Sprintf(", atol %g rtol %g", row.Tolerance.Atol, row.Tolerance.Rtol)
			}
			graph := map[string]string{verify.GraphRequired: "graph gate required", verify.GraphNotRequired: "graph gate not required",
				verify.GraphCPU: "graph gate not run on cpu"}[row.Graph]
			ranks := ""
			if row.WorldSize > 1 {
				ranks = fmt.Sprintf(", %d ranks", row.WorldSize)
			}
			fmt.Fprintf(w, "  %s%s; %s%s\n", p(row.Correctness), tol, graph, ranks)
		}
		for _, c := range row.Cases {
			shape := c.Describe
			if c.Name != "" {
				shape = c.Name + ": " + shape
			}
			if !c.Jittered {
				shape += " (catalog shape)"
			}
			extra := ""
			if c.Graph != "" && c.Graph != "captured" {
				extra = " [graph " + strings.ReplaceAll(c.Graph, "_", " ") + "]"
			}
			fmt.Fprintf(w, "  case %d  %-36s %-4s %s%s\n", c.Index, p(shape), c.Verdict, p(c.Reason), p(extra))
		}
		fmt.Fprintf(w, "  => %s\n", p(row.Reason))
	}
	c := rep.Counts()
	fmt.Fprintf(w, "\nverdict: %s (%d passed, %d failed, %d errors, %d not applicable, %d skipped)\n",
		rep.Verdict, c[verify.Pass], c[verify.Fail], c[verify.Error], c[verify.NotApplicable], c[verify.Skip])
	if rep.Verdict != verify.Pass {
		fmt.Fprintf(w, "reason: %s\n", p(rep.Reason))
	}
}
