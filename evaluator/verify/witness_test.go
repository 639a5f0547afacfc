package verify

import (
	"regexp"
	"strings"
	"testing"

	"github.com/cacheon/engine/evaluator/worker"
)

// forgesInputCheck zeroes its input in place, and at import makes the
// harness's own check report nothing and record the pre-call digests as
// the post-call ones.
const forgesInputCheck = siluHeader + `
import sys
_h = sys.modules["cacheon_worker.candidate"]

def _clean(self, snap, pre):
    return [], dict(pre)

_h.Call.violations = _clean

def silu_and_mul(x, out):
    d = x.shape[-1] // 2
    out.copy_(F.silu(x[:, :d]) * x[:, d:])
    x.zero_()
`

// forgesOutputDump never writes the validator's output; the harness's
// dump is patched to write the right values, computed on the side.
const forgesOutputDump = siluHeader + `
import os, sys
_h = sys.modules["cacheon_worker.candidate"]
tensorio = sys.modules["cacheon_reference.tensorio"]

_last = {}

def _dump(self, work_dir, case, phase):
    files = {}
    for name in self.outputs:
        path = os.path.join(work_dir, f"c{case}_{phase}_{name}.bin")
        files[name] = tensorio.write_tensor(path, _last["out"])
    return files

_h.Call.dump = _dump
_h.Call.violations = lambda self, snap, pre: ([], dict(pre))

def silu_and_mul(x, out):
    d = x.shape[-1] // 2
    _last["out"] = F.silu(x[:, :d]) * x[:, d:]
`

// Kernels that forge the harness in their own process. The candidate
// process's checks (input digests, violations, the output dump) are its
// to rewrite; the verdict must come from what the controller itself read
// from validator memory while the candidate was stopped. The kernels find
// the harness in sys.modules: scan and intake refuse an import of the
// validator's packages (the scan, run here past, refuses sys.modules too),
// and this tests the wall behind them, for what still runs in the
// candidate's process.
func TestVerifyControllerWitnessesTheCall(t *testing.T) {
	t.Parallel()
	testPython(t)
	cases := []struct {
		name       string
		source     string
		unisolated bool   // workers as plain processes: the group is stopped instead of the sandbox
		checker    bool   // a checker process owns the calls' memory, as on a GPU
		want       string // substring of the row reason
	}{
		{"mutates input and forges the check", forgesInputCheck, false, false, "input x was modified in place"},
		{"mutates input and forges the check, unisolated", forgesInputCheck, true, false, "input x was modified in place"},
		{"mutates input and forges the check, checker", forgesInputCheck, false, true, "input x was modified in place"},
		{"mutates input and forges the check, checker, unisolated", forgesInputCheck, true, true, "input x was modified in place"},
		{"writes elsewhere and forges the dump", forgesOutputDump, false, false, "never written (still the NaN poison)"},
	}
	cases = append(cases, cases[len(cases)-1])
	cases[len(cases)-1].name += ", checker"
	cases[len(cases)-1].checker = true
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			rep := run(t, oneOpBundle(t, "activation.silu_and_mul", "silu_and_mul", "", c.source, smallSilu),
				Options{Unisolated: c.unisolated, CheckerWitness: c.checker})
			if rep.Verdict != Fail || !strings.Contains(rep.Rows[0].Reason, c.want) {
				t.Fatalf("verdict %s reason %q, want FAIL with %q", rep.Verdict, rep.Rows[0].Reason, c.want)
			}
		})
	}
}

// TestVerifyCheckerOwnsTheMemory: with a checker process owning the calls'
// memory (the GPU lane's witness, here with a memfd block on the CPU), an
// honest kernel passes on the checker's copies: every checked call was
// copied, the reference judged them, and the checker's own run is in the
// row, ended cleanly.
func TestVerifyCheckerOwnsTheMemory(t *testing.T) {
	t.Parallel()
	testPython(t)
	for _, unisolated := range []bool{false, true} {
		t.Run(map[bool]string{false: "sandboxed", true: "unisolated"}[unisolated], func(t *testing.T) {
			t.Parallel()
			var progress strings.Builder
			rep := run(t, oneOpBundle(t, "activation.silu_and_mul", "silu_and_mul", "", goodSilu, smallSilu),
				Options{Unisolated: unisolated, CheckerWitness: true, Progress: &progress})
			if rep.Verdict != Pass {
				t.Fatalf("verdict %s reason %q\n%s", rep.Verdict, rep.Rows[0].Reason, progress.String())
			}
			var checker *WorkerRun
			for i, w := range rep.Rows[0].Workers {
				if w.Role == worker.RoleChecker {
					checker = &rep.Rows[0].Workers[i]
				}
			}
			if checker == nil || checker.Exit != "exited with code 0" {
				t.Fatalf("the row's workers %+v lack a checker that exited cleanly", rep.Rows[0].Workers)
			}
			if !regexp.MustCompile(`witnessed [1-9][0-9]* call`).MatchString(progress.String()) {
				t.Fatalf("progress does not say the calls were copied:\n%s", progress.String())
			}
		})
	}
}
