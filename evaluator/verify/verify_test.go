package verify

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cacheon/engine/catalog"
	"github.com/cacheon/engine/evaluator/worker"
)

// testPython is the interpreter the tests run workers with: $CACHEON_TEST_PYTHON,
// else /usr/bin/python3 (where Debian's python3-torch installs torch).
func testPython(t *testing.T) string {
	t.Helper()
	p := os.Getenv("CACHEON_TEST_PYTHON")
	if p == "" {
		p = "/usr/bin/python3"
	}
	torchOnce.Do(func() {
		out, err := exec.Command(p, "-c", "import torch, numpy; print(torch.__version__)").CombinedOutput()
		if err != nil {
			torchErr = strings.TrimSpace(string(out))
			if torchErr == "" {
				torchErr = err.Error()
			}
		}
	})
	if torchErr != "" {
		t.Skipf("verify tests need torch and numpy in %s (apt-get install python3-torch python3-numpy, or set CACHEON_TEST_PYTHON): %s", p, lastLine(torchErr))
	}
	return p
}

var (
	torchOnce sync.Once
	torchErr  string
)

// oneOpBundle writes a one-op bundle with the given kernel source and metadata
// JSON ("" for none) and returns its directory.
func oneOpBundle(t *testing.T, slot, entry, prepare, source, metadata string) string {
	t.Helper()
	dir := t.TempDir()
	m := "bundle_id = \"test\"\nabi_version = \"cacheon-op-abi-v0\"\n\n[[ops]]\n" +
		"slot = \"" + slot + "\"\nsource = \"kernels/k.py\"\nentry = \"" + entry + "\"\n"
	if prepare != "" {
		m += "prepare = \"" + prepare + "\"\n"
	}
	if metadata != "" {
		m += "metadata = \"metadata/k.json\"\n"
		writeFile(t, filepath.Join(dir, "metadata", "k.json"), metadata)
	}
	writeFile(t, filepath.Join(dir, "manifest.toml"), m)
	writeFile(t, filepath.Join(dir, "kernels", "k.py"), source)
	return dir
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func run(t *testing.T, dir string, o Options) *Report {
	t.Helper()
	o.Python = testPython(t)
	// These tests exercise the runtime defences, so hostile fixtures that
	// the static scan would stop (ctypes, fork) must reach the worker.
	o.SkipScanUnsafe = true
	if o.DType == "" {
		o.DType = "float32"
	}
	if o.Timeout == 0 {
		o.Timeout = 2 * time.Minute
	}
	rep, err := Run(context.Background(), dir, o)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return rep
}

// smallSilu keeps silu cases to the small catalog shapes.
const smallSilu = `{"max_num_tokens": 200}`

const siluHeader = "import torch\nimport torch.nn.functional as F\n\n"

const goodSilu = siluHeader + `
def silu_and_mul(x, out):
    d = x.shape[-1] // 2
    out.copy_(F.silu(x[:, :d].float()).to(x.dtype) * x[:, d:])
`

func TestVerifyBadKernelsFail(t *testing.T) {
	t.Parallel()
	testPython(t)
	cases := []struct {
		name   string
		source string
		want   string // substring of the row reason
	}{
		{"raises", siluHeader + `
def silu_and_mul(x, out):
    raise ValueError("no kernel today")
`, "raised ValueError: no kernel today"},
		{"new output tensor", siluHeader + `
def silu_and_mul(x, out):
    d = x.shape[-1] // 2
    out = F.silu(x[:, :d]) * x[:, d:]
    return out
`, "never written (still the NaN poison)"},
		{"mutates input", siluHeader + `
def silu_and_mul(x, out):
    d = x.shape[-1] // 2
    out.copy_(F.silu(x[:, :d]) * x[:, d:])
    x.mul_(0.5)
`, "input x was modified in place"},
		{"writes NaN", siluHeader + `
def silu_and_mul(x, out):
    d = x.shape[-1] // 2
    out.copy_(F.silu(x[:, :d]) * x[:, d:])
    out[0, 0] = float("nan")
`, "1 non-finite where finite expected"},
		{"writes nothing", siluHeader + `
def silu_and_mul(x, out):
    pass
`, "never written (still the NaN poison)"},
		{"wrong math", siluHeader + `
def silu_and_mul(x, out):
    d = x.shape[-1] // 2
    out.copy_(x[:, :d] * x[:, d:])
`, "outside atol"},
		{"re-strides output", siluHeader + `
def silu_and_mul(x, out):
    d = x.shape[-1] // 2
    out.set_((F.silu(x[:, :d]) * x[:, d:]).t().contiguous().t())
`, "output out changed"},
		{"caches by data pointer", siluHeader + `
_seen = {}

def silu_and_mul(x, out):
    key = (x.data_ptr(), tuple(x.shape))
    if key not in _seen:
        d = x.shape[-1] // 2
        _seen[key] = F.silu(x[:, :d]) * x[:, d:]
    out.copy_(_seen[key])
`, "repeat call on fresh inputs"},
		{"tampers with the generator", siluHeader + `
import sys

# Reached without an import, which scan and intake refuse for the
# validator's packages.
gen = sys.modules["cacheon_reference.slots.activation"]
gen.randn = lambda g, shape, dtype, scale=1.0: torch.zeros(shape, dtype=dtype)

def silu_and_mul(x, out):
    d = x.shape[-1] // 2
    out.copy_(F.silu(x[:, :d]) * x[:, d:])
`, "differs from the validator's regenerated input"},
		{"exits quietly", siluHeader + `
import os

def silu_and_mul(x, out):
    os._exit(0)
`, "exited before finishing, during case 0, eager call"},
		{"exits like the harness", siluHeader + `
import os

def silu_and_mul(x, out):
    os._exit(3)
`, "exited with code 3 during case 0, eager call"},
		{"segfaults", siluHeader + `
import ctypes

def silu_and_mul(x, out):
    ctypes.string_at(0)
`, "killed by SIGSEGV during case 0, eager call"},
		{"forges its record", siluHeader + `
import os

def silu_and_mul(x, out):
    with open("result.json", "w") as f:
        f.write("{not json")
    os._exit(0)
`, "exited before finishing"},
		{"missing entry", siluHeader + `
def something_else(x, out):
    pass
`, "entry 'silu_and_mul' is not defined"},
		{"import error", siluHeader + `
from torch import no_such_name_here
`, "ImportError"},
	}
	for _, tc := range cases {
		tc := tc
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rep := run(t, oneOpBundle(t, "activation.silu_and_mul", "silu_and_mul", "", tc.source, smallSilu), Options{})
			if rep.Verdict != Fail {
				t.Fatalf("verdict %s (%s), want FAIL", rep.Verdict, rep.Reason)
			}
			if got := rep.Rows[0].Reason; !strings.Contains(got, tc.want) {
				t.Fatalf("reason %q does not mention %q", got, tc.want)
			}
		})
	}
}

func TestVerifyHangTimesOutAndKillsTheGroup(t *testing.T) {
	t.Parallel()
	testPython(t)
	// The kernel's child leaves its session, which a process-group kill
	// would miss; the sandbox's PID namespace ends it anyway.
	src := siluHeader + `
import os, time

def silu_and_mul(x, out):
    pid = os.fork()
    if pid == 0:
        os.setsid()
        time.sleep(3600)
        os._exit(0)
    time.sleep(3600)
`
	parent := searchableTempDir(t)
	rep, took, timeout := runHanging(t, oneOpBundle(t, "activation.silu_and_mul", "silu_and_mul", "", src, smallSilu), Options{WorkDir: parent})
	if rep.Verdict != Fail || !strings.Contains(rep.Rows[0].Reason, "timed out after") {
		t.Fatalf("verdict %s reason %q, want FAIL by timeout", rep.Verdict, rep.Rows[0].Reason)
	}
	if took > 4*timeout {
		t.Fatalf("a hanging kernel held verify for %s under a %s timeout", took, timeout)
	}
	// Every worker's command line names its validator copy under parent.
	deadline := time.Now().Add(5 * time.Second)
	for pid := processMentioning(parent); pid != ""; pid = processMentioning(parent) {
		if time.Now().After(deadline) {
			t.Fatalf("the kernel's process %s outlived the timeout", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// hangTimeout is the first timeout runHanging gives a hanging kernel: on
// a quiet two-core host a worker reaches candidate code in a few seconds,
// even beside the other tests' workers.
const hangTimeout = 10 * time.Second

// runHanging verifies dir, whose kernel hangs, under a timeout of
// hangTimeout, and returns the report, how long the run took and the
// timeout it ran under. The timeout counts from the workers' start, so on
// a loaded host a worker can spend all of it importing torch and never
// reach the kernel: the row is then an infrastructure ERROR "before
// loading the candidate", a run that did not exercise the hang at all.
// Such a run is repeated with the timeout doubled, three times at most;
// any other report is returned as it is.
func runHanging(t *testing.T, dir string, o Options) (*Report, time.Duration, time.Duration) {
	t.Helper()
	o.Timeout = hangTimeout
	for attempt := 0; ; attempt++ {
		start := time.Now()
		rep := run(t, dir, o)
		took := time.Since(start)
		if attempt == 3 || rep.Verdict != Error || len(rep.Rows) != 1 || !strings.Contains(rep.Rows[0].Reason, "before loading the candidate") {
			return rep, took, o.Timeout
		}
		t.Logf("no worker reached the kernel in %s (%s): again with %s", o.Timeout, rep.Rows[0].Reason, 2*o.Timeout)
		o.Timeout *= 2
	}
}

// processMentioning returns the pid of a live process whose command line
// contains s, or "".
func processMentioning(s string) string {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		data, err := os.ReadFile(p)
		pid := filepath.Base(filepath.Dir(p))
		if err == nil && strings.Contains(string(data), s) && alive(pid) {
			return pid
		}
	}
	return ""
}

// searchableTempDir is a t.TempDir the sandbox user can pass through.
func searchableTempDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// alive reports whether pid is a live (not zombie) process.
func alive(pid string) bool {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		stat, err := os.ReadFile("/proc/" + pid + "/stat")
		if err != nil {
			return false
		}
		// state is the field after the parenthesized command name.
		s := string(stat)
		if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) && s[i+2] == 'Z' {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}

func TestVerifyGoodKernelsPass(t *testing.T) {
	t.Parallel()
	testPython(t)
	cases := []struct {
		name, slot, entry, prepare, source, metadata string
		o                                            Options
	}{
		{"silu", "activation.silu_and_mul", "silu_and_mul", "", goodSilu, smallSilu, Options{}},
		{"silu bf16", "activation.silu_and_mul", "silu_and_mul", "", goodSilu, smallSilu, Options{DType: "bfloat16"}},
		{"rmsnorm", "norm.rmsnorm", "rmsnorm", "", `import torch

def rmsnorm(x, weight, out, eps):
    xf = x.float()
    out.copy_((xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(x.dtype))
`, `{"max_num_tokens": 200}`, Options{DType: "float16"}},
		{"decode attention", "attention.decode", "decode", "", `import torch

def decode(q, k, v, seq_lens, sm_scale, out):
    B, Hq, D = q.shape
    S, Hkv = k.shape[1], k.shape[2]
    g = Hq // Hkv
    for b in range(B):
        n = int(seq_lens[b])
        kk = k[b, :n].float().repeat_interleave(g, dim=1)
        vv = v[b, :n].float().repeat_interleave(g, dim=1)
        s = torch.einsum("hd,shd->hs", q[b].float(), kk) * sm_scale
        out[b].copy_(torch.einsum("hs,shd->hd", s.softmax(-1), vv).to(out.dtype))
`, "", Options{DType: "bfloat16"}},
		{"moe with prepare", "moe.fused_experts", "experts", "prep", `import torch
import torch.nn.functional as F

def prep(w13, w2):
    return (w13, w2)

def experts(x, topk_ids, topk_weights, prepared, out):
    w13, w2 = prepared
    inter = w13.shape[1] // 2
    acc = torch.zeros(out.shape, dtype=torch.float32)
    for t in range(x.shape[0]):
        for j in range(topk_ids.shape[1]):
            e = int(topk_ids[t, j])
            h = w13[e].float() @ x[t].float()
            a = F.silu(h[:inter]) * h[inter:]
            acc[t] += float(topk_weights[t, j]) * (w2[e].float() @ a)
    out.copy_(acc.to(out.dtype))
`, `{"max_num_tokens": 12}`, Options{DType: "bfloat16"}},
		{"all-reduce over gloo", "collective.all_reduce", "all_reduce", "", `import torch.distributed as dist

def all_reduce(x, out, group):
    out.copy_(x)
    dist.all_reduce(out, group=group)
`, `{"max_num_tokens": 16}`, Options{}},
		// The regrow case of a collective with a prepare step reuses the
		// prepared state across its three token counts.
		{"expert-parallel moe with prepare over gloo", "moe.fused_experts_reduce", "experts", "prep", `import torch
import torch.distributed as dist
import torch.nn.functional as F

def prep(w13, w2):
    return (w13, w2)

def experts(x, topk_ids, topk_weights, prepared, out, group):
    w13, w2 = prepared
    inter = w13.shape[1] // 2
    acc = torch.zeros(out.shape, dtype=torch.float32)
    for t in range(x.shape[0]):
        for j in range(topk_ids.shape[1]):
            e = int(topk_ids[t, j])
            h = w13[e].float() @ x[t].float()
            a = F.silu(h[:inter]) * h[inter:]
            acc[t] += float(topk_weights[t, j]) * (w2[e].float() @ a)
    dist.all_reduce(acc, group=group)
    out.copy_(acc.to(out.dtype))
`, `{"max_num_tokens": 12}`, Options{}},
	}
	for _, tc := range cases {
		tc := tc
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rep := run(t, oneOpBundle(t, tc.slot, tc.entry, tc.prepare, tc.source, tc.metadata), tc.o)
			if rep.Verdict != Pass {
				t.Fatalf("verdict %s: %s\nrows: %+v", rep.Verdict, rep.Reason, rep.Rows)
			}
			applicable := 0
			for _, c := range rep.Rows[0].Cases {
				if c.Verdict == Pass {
					applicable++
				}
			}
			if applicable == 0 {
				t.Fatal("no case ran")
			}
			if rep.Rows[0].Kind == string(catalog.SlotCollective) {
				checkRegrowPassed(t, rep.Rows[0])
			}
		})
	}
}

func TestVerifyCollectiveRankFailures(t *testing.T) {
	t.Parallel()
	testPython(t)
	cases := []struct {
		name, source, want string
		hangs              bool
	}{
		{"skips the reduce", `
def all_reduce(x, out, group):
    out.copy_(x)
`, "outside atol", false},
		{"one rank hangs", `import time
import torch.distributed as dist

def all_reduce(x, out, group):
    if dist.get_rank(group) == 1:
        time.sleep(3600)
    out.copy_(x)
    dist.all_reduce(out, group=group)
`, "timed out", true},
		{"one rank crashes", `import os
import torch.distributed as dist

def all_reduce(x, out, group):
    if dist.get_rank(group) == 1:
        os._exit(9)
    out.copy_(x)
    dist.all_reduce(out, group=group)
`, "rank 1 exited with code 9", false},
	}
	for _, tc := range cases {
		tc := tc
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := oneOpBundle(t, "collective.all_reduce", "all_reduce", "", tc.source, `{"max_num_tokens": 4}`)
			var rep *Report
			if tc.hangs {
				rep, _, _ = runHanging(t, dir, Options{})
			} else {
				rep = run(t, dir, Options{})
			}
			if rep.Verdict != Fail || !strings.Contains(rep.Rows[0].Reason, tc.want) {
				t.Fatalf("verdict %s reason %q, want FAIL mentioning %q", rep.Verdict, rep.Rows[0].Reason, tc.want)
			}
		})
	}
}

func TestVerifyRowsWithoutVerdict(t *testing.T) {
	t.Parallel()
	testPython(t)
	t.Run("domain excludes every case", func(t *testing.T) {
		t.Parallel()
		rep := run(t, oneOpBundle(t, "activation.silu_and_mul", "silu_and_mul", "", goodSilu, `{"dtypes": ["float16"]}`), Options{DType: "float32"})
		if rep.Verdict != Fail || rep.Rows[0].Verdict != NotApplicable {
			t.Fatalf("verdict %s row %s, want FAIL with an N/A row", rep.Verdict, rep.Rows[0].Verdict)
		}
		if !strings.Contains(rep.Rows[0].Reason, "dtype float32 not in float16") {
			t.Fatalf("reason %q", rep.Rows[0].Reason)
		}
	})
	t.Run("unknown slot", func(t *testing.T) {
		t.Parallel()
		rep := run(t, oneOpBundle(t, "activation.gelu", "gelu", "", goodSilu, ""), Options{})
		if rep.Verdict != Fail || rep.Rows[0].Verdict != Skip {
			t.Fatalf("verdict %s row %s, want FAIL with a SKIP row", rep.Verdict, rep.Rows[0].Verdict)
		}
	})
	t.Run("prepare missing", func(t *testing.T) {
		t.Parallel()
		rep := run(t, oneOpBundle(t, "moe.fused_experts", "experts", "", "def experts(*a):\n    pass\n", `{"max_num_tokens": 5}`), Options{})
		if rep.Verdict != Fail || !strings.Contains(rep.Rows[0].Reason, "needs a prepare callable") {
			t.Fatalf("verdict %s reason %q", rep.Verdict, rep.Rows[0].Reason)
		}
	})
}

// TestVerifyMissingDependency: a missing Triton, which the trusted plan
// worker also sees missing, is the host's problem (ERROR); any other
// missing module is the kernel's (FAIL), since the record that claims it
// comes from the candidate's own process and could be forged to dodge a
// FAIL.
func TestVerifyMissingDependency(t *testing.T) {
	t.Parallel()
	py := testPython(t)
	if exec.Command(py, "-c", "import triton").Run() == nil {
		t.Skip("triton is installed here")
	}
	cases := []struct{ module, verdict, reason string }{
		{"triton", Error, `cannot import "triton"`},
		{"triton_that_is_not_installed", Fail, `imports "triton_that_is_not_installed", which the worker interpreter does not provide`},
	}
	for _, tc := range cases {
		dir := oneOpBundle(t, "activation.silu_and_mul", "silu_and_mul", "", siluHeader+"import "+tc.module+"\n"+goodSilu, smallSilu)
		rep := run(t, dir, Options{})
		if rep.Verdict != tc.verdict || !strings.Contains(rep.Rows[0].Reason, tc.reason) {
			t.Fatalf("%s: verdict %s reason %q, want %s %q", tc.module, rep.Verdict, rep.Rows[0].Reason, tc.verdict, tc.reason)
		}
	}
}

func TestVerifyKeepWorkLeavesARemovableRecord(t *testing.T) {
	t.Parallel()
	testPython(t)
	parent := searchableTempDir(t)
	run(t, oneOpBundle(t, "activation.silu_and_mul", "silu_and_mul", "", goodSilu, `{"max_num_tokens": 4}`),
		Options{KeepWork: true, WorkDir: parent})
	runs, err := filepath.Glob(filepath.Join(parent, "cacheon-verify-*"))
	if err != nil || len(runs) != 1 {
		t.Fatalf("run directories %v, %v", runs, err)
	}
	for _, rel := range []string{"plan/result.json", "rows/00-activation.silu_and_mul-default/rank0/request.json",
		"rows/00-activation.silu_and_mul-default/witness0/c0_eager.bin", "rows/00-activation.silu_and_mul-default/reference/result.json",
		"validator-1/cacheon_worker/__main__.py", "validator-2/cacheon_worker/__main__.py", "bundle/manifest.toml"} {
		if _, err := os.Stat(filepath.Join(runs[0], rel)); err != nil {
			t.Errorf("kept run lacks %s: %v", rel, err)
		}
	}
	// rm -r by an unprivileged user needs every directory writable.
	err = filepath.WalkDir(runs[0], func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if info, _ := d.Info(); d.IsDir() && info.Mode().Perm()&0o200 == 0 {
			t.Errorf("%s stayed read-only", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestVerifyStaticScanGatesExecution(t *testing.T) {
	t.Parallel()
	testPython(t)
	marker := filepath.Join(t.TempDir(), "ran")
	src := siluHeader + "import subprocess\n\ndef silu_and_mul(x, out):\n    open(" + "\"" + marker + "\"" + ", \"w\").close()\n"
	dir := oneOpBundle(t, "activation.silu_and_mul", "silu_and_mul", "", src, smallSilu)
	rep, err := Run(context.Background(), dir, Options{Python: testPython(t), DType: "float32"})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verdict != Fail || !strings.Contains(rep.Rows[0].Reason, "static scan found") || rep.Scan.Violations < 2 {
		t.Fatalf("verdict %s reason %q scan %+v, want a scan FAIL", rep.Verdict, rep.Rows[0].Reason, rep.Scan)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("bundle code ran although the scan failed it")
	}
	if len(rep.Rows[0].Workers) != 0 {
		t.Fatalf("workers were started: %+v", rep.Rows[0].Workers)
	}
}

func TestVerifyInfrastructureErrors(t *testing.T) {
	t.Parallel()
	good := oneOpBundle(t, "activation.silu_and_mul", "silu_and_mul", "", goodSilu, smallSilu)
	t.Run("interpreter without torch", func(t *testing.T) {
		noTorch := filepath.Join(searchableTempDir(t), "python3")
		writeFile(t, noTorch, "#!/bin/sh\necho 'ModuleNotFoundError: No module named torch' >&2\nexit 1\n")
		if err := os.Chmod(noTorch, 0o755); err != nil {
			t.Fatal(err)
		}
		_, err := Run(context.Background(), good, Options{Python: noTorch, Timeout: time.Minute})
		if err == nil || !strings.Contains(err.Error(), "No module named torch") {
			t.Fatalf("err = %v, want the interpreter's import error", err)
		}
	})
	t.Run("a chosen interpreter without torch is refused before any worker", func(t *testing.T) {
		noTorch := filepath.Join(searchableTempDir(t), "python3")
		writeFile(t, noTorch, "#!/bin/sh\necho 'ModuleNotFoundError: No module named torch' >&2\nexit 1\n")
		if err := os.Chmod(noTorch, 0o755); err != nil {
			t.Fatal(err)
		}
		var progress strings.Builder
		_, err := Run(context.Background(), good, Options{Python: noTorch, ChoosePython: true, Timeout: time.Minute, Progress: &progress})
		var perr *worker.PythonError
		if !errors.As(err, &perr) || !strings.Contains(err.Error(), noTorch+": it cannot import torch") || strings.Contains(progress.String(), "planning cases") {
			t.Fatalf("err = %v (progress %q), want the interpreter refused before any worker", err, progress.String())
		}
	})
	t.Run("missing interpreter", func(t *testing.T) {
		_, err := Run(context.Background(), good, Options{Python: "/nonexistent/python3"})
		if err == nil || !strings.Contains(err.Error(), "/nonexistent/python3") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("bad options", func(t *testing.T) {
		for _, o := range []Options{{Device: "tpu"}, {DType: "int8"}, {WorldSize: 1}, {Seed: -1}} {
			if _, err := Run(context.Background(), good, o); err == nil || !strings.Contains(err.Error(), "invalid verify options") {
				t.Errorf("%+v: err = %v", o, err)
			}
		}
	})
	t.Run("no manifest", func(t *testing.T) {
		if _, err := Run(context.Background(), t.TempDir(), Options{}); err == nil || !strings.Contains(err.Error(), "manifest.toml") {
			t.Fatalf("err = %v", err)
		}
	})
}

// editedCatalog is the default catalog with each old span of its source
// (which must occur exactly once) replaced by new.
func editedCatalog(t *testing.T, edits ...[2]string) *catalog.Catalog {
	t.Helper()
	src := string(catalog.DefaultSource())
	for _, e := range edits {
		if n := strings.Count(src, e[0]); n != 1 {
			t.Fatalf("span %q occurs %d times in %s; an edit needs it exactly once", e[0], n, catalog.DefaultFile)
		}
		src = strings.Replace(src, e[0], e[1], 1)
	}
	c, diags := catalog.Parse([]byte(src), "edited-targets.hcl")
	if diags.HasErrors() {
		t.Fatalf("edited catalog: %v", diags)
	}
	return c
}

// Spans of catalog/targets.hcl that belong to activation.silu_and_mul alone.
const (
	siluCorrectness = "verification_profile_id = \"activation.silu_and_mul.verify.v1\"\n\n  correctness {\n    mode = \"allclose\"\n  }"
	siluTolerances  = "tolerances = tolerance_set.standard\n\n  shape_params = [\"T\", \"d\"]"
	siluShapes      = "shapes       = [[1, 1024], [8, 1024], [128, 4096], [4096, 4096], [333, 2880]]"
	siluCall        = "call                 = [\"x\", \"out\"]\n  outputs              = [\"out\"]\n  graph_dynamic_inputs = [\"x\"]"
	float32Standard = `float32  = { atol = "0.00001", rtol = "0.00001" }`
)

// TestVerifyFollowsTheCatalog runs the same kernel under the default catalog
// and under an edited copy: the edit alone (a tolerance, a correctness mode
// and threshold, the shapes, the call signature) changes the verdict.
func TestVerifyFollowsTheCatalog(t *testing.T) {
	t.Parallel()
	testPython(t)
	// silu computed in bfloat16: about 3 significant digits, far outside the
	// float32 tolerance 1e-5, well inside 0.02.
	bf16Silu := siluHeader + `
def silu_and_mul(x, out):
    d = x.shape[-1] // 2
    out.copy_((F.silu(x[:, :d].bfloat16()) * x[:, d:].bfloat16()).float())
`
	// One wrong element per call: allclose fails, a 0.99 matched ratio passes.
	oneWrong := siluHeader + `
def silu_and_mul(x, out):
    d = x.shape[-1] // 2
    out.copy_(F.silu(x[:, :d]) * x[:, d:])
    out[0, 0] = 1000.0
`
	cases := []struct {
		name    string
		edits   [][2]string // nil: the default catalog
		source  string
		verdict string
		reason  string
		check   func(t *testing.T, row RowResult)
	}{
		{"default float32 tolerance fails a bfloat16 kernel", nil, bf16Silu, Fail, "outside atol=1e-05 rtol=1e-05", nil},
		{"a wider float32 tolerance passes it", [][2]string{{float32Standard, `float32  = { atol = "0.02", rtol = "0.02" }`}},
			bf16Silu, Pass, "", func(t *testing.T, row RowResult) {
				if row.Tolerance == nil || row.Tolerance.Atol != 0.02 || row.Tolerance.Rtol != 0.02 {
					t.Errorf("tolerance %+v, want the catalog's 0.02/0.02", row.Tolerance)
				}
			}},
		{"allclose fails one wrong element", nil, oneWrong, Fail, "1 of", nil},
		{"matched_ratio 0.99 passes it", [][2]string{{siluCorrectness, strings.Replace(siluCorrectness,
			`mode = "allclose"`, "mode      = \"matched_ratio\"\n    min_ratio = \"0.99\"", 1)}},
			oneWrong, Pass, "", func(t *testing.T, row RowResult) {
				if row.Correctness != "matched_ratio >= 0.99" {
					t.Errorf("correctness %q, want the catalog's matched_ratio >= 0.99", row.Correctness)
				}
			}},
		{"matched_ratio 1 fails it", [][2]string{{siluCorrectness, strings.Replace(siluCorrectness,
			`mode = "allclose"`, "mode      = \"matched_ratio\"\n    min_ratio = \"1\"", 1)}},
			oneWrong, Fail, "need 1", nil},
		{"catalog shapes", [][2]string{{siluShapes, "shapes       = [[2, 512], [5, 256]]"}}, goodSilu, Pass, "",
			func(t *testing.T, row RowResult) {
				var ds []int64
				for _, c := range row.Cases {
					ds = append(ds, c.Params["d"])
				}
				if len(ds) != 2 || ds[0] != 512 || ds[1] != 256 {
					t.Errorf("cases ran with d = %v, want the catalog's [512 256]", ds)
				}
			}},
		{"a call the semantics cannot honour", [][2]string{{siluCall, strings.ReplaceAll(siluCall, `"x"`, `"inp"`)}},
			goodSilu, Error, "call argument 'inp' is not an input this validator generates", func(t *testing.T, row RowResult) {
				if len(row.Workers) != 0 {
					t.Errorf("workers ran for a contract the plan refused: %+v", row.Workers)
				}
			}},
		{"a dtype the catalog states no tolerance for", [][2]string{{siluTolerances,
			strings.Replace(siluTolerances, "tolerance_set.standard", `{ bfloat16 = { atol = "0.02", rtol = "0.02" } }`, 1)}},
			goodSilu, Fail, "the catalog states no float32 tolerance for activation.silu_and_mul (it states bfloat16)",
			func(t *testing.T, row RowResult) {
				if row.Verdict != NotApplicable {
					t.Errorf("row %s, want N/A", row.Verdict)
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := Options{}
			if tc.edits != nil {
				o.Catalog = editedCatalog(t, tc.edits...)
			}
			rep := run(t, oneOpBundle(t, "activation.silu_and_mul", "silu_and_mul", "", tc.source, `{"max_num_tokens": 40}`), o)
			row := rep.Rows[0]
			if rep.Verdict != tc.verdict || !strings.Contains(row.Reason, tc.reason) {
				t.Fatalf("verdict %s, row %s: %q; want %s mentioning %q", rep.Verdict, row.Verdict, row.Reason, tc.verdict, tc.reason)
			}
			noted := strings.Contains(strings.Join(rep.Notes, "\n"), "states other contracts than the default catalog for activation.silu_and_mul")
			if noted != (tc.edits != nil) {
				t.Errorf("notes %q: edited catalog %v, but a note on other contracts %v", rep.Notes, tc.edits != nil, noted)
			}
			if tc.check != nil {
				tc.check(t, row)
			}
		})
	}
}
