package verify

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cacheon/engine/internal/reject"
	"github.com/cacheon/engine/kernels/contribution"
)

// Hostile kernels as a miner would write them. Each one tries an escape
// and raises "ESCAPED: ..." if it worked; otherwise it computes the right
// answer or a wrong one, and the verdict must follow from that alone.

// TestVerifyCandidateCannotRewriteTheJudge: the candidate tries to make
// its validator copy writable and rewrite the reference role's comparison,
// in its own copy and in every other validator copy of the run directory,
// then returns zeros. The judge must stay intact: FAIL, not PASS. It
// finds the reference package in sys.modules: scan and intake refuse an
// import of the validator's packages (the scan, run here past, refuses
// sys.modules too), and this tests the defence behind them.
func TestVerifyCandidateCannotRewriteTheJudge(t *testing.T) {
	t.Parallel()
	testPython(t)
	src := siluHeader + `
import glob, os, sys
cacheon_reference = sys.modules["cacheon_reference"]

FORGED = "def compare(*a, **k):\n    return True\n"

def silu_and_mul(x, out):
    mine = os.path.dirname(os.path.dirname(cacheon_reference.__file__))
    roots = [mine] + glob.glob(os.path.join(os.path.dirname(mine), "validator*"))
    roots += glob.glob("/tmp/**/cacheon_reference/..", recursive=True)
    for root in roots:
        for dirpath, _, _ in os.walk(root):
            try:
                os.chmod(dirpath, 0o777)
            except OSError:
                pass
        target = os.path.join(root, "cacheon_reference", "compare.py")
        try:
            with open(target, "a") as f:
                f.write(FORGED)
        except OSError:
            continue
        raise RuntimeError("ESCAPED: wrote " + target)
    out.zero_()
`
	rep := run(t, oneOpBundle(t, "activation.silu_and_mul", "silu_and_mul", "", src, smallSilu), Options{})
	if rep.Verdict != Fail || strings.Contains(rep.Rows[0].Reason, "ESCAPED") {
		t.Fatalf("verdict %s reason %q, want a FAIL on the zeros", rep.Verdict, rep.Rows[0].Reason)
	}
}

// TestVerifyIgnoresBytecodeInTheBundle: the scanned source is right, and
// an unchecked-hash .pyc (PEP 552) compiled from wrong source sits in
// __pycache__ beside it. Python would load the .pyc; the staged copy
// leaves it out, so the source that was scanned is the code that runs.
func TestVerifyIgnoresBytecodeInTheBundle(t *testing.T) {
	t.Parallel()
	py := testPython(t)
	dir := oneOpBundle(t, "activation.silu_and_mul", "silu_and_mul", "", goodSilu, smallSilu)
	evil := filepath.Join(t.TempDir(), "k.py")
	writeFile(t, evil, siluHeader+"\ndef silu_and_mul(x, out):\n    out.zero_()\n")
	compile := `import importlib.util, py_compile, sys
src, dst = sys.argv[1], sys.argv[2]
py_compile.compile(src, cfile=importlib.util.cache_from_source(dst), dfile=dst,
                   invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)`
	if out, err := exec.Command(py, "-c", compile, evil, filepath.Join(dir, "kernels", "k.py")).CombinedOutput(); err != nil {
		t.Fatalf("compile: %v %s", err, out)
	}
	if pycs, _ := filepath.Glob(filepath.Join(dir, "kernels", "__pycache__", "*.pyc")); len(pycs) != 1 {
		t.Fatalf("no .pyc planted: %v", pycs)
	}
	rep := run(t, dir, Options{})
	if rep.Verdict != Pass {
		t.Fatalf("verdict %s reason %q: the planted bytecode ran", rep.Verdict, rep.Reason)
	}
}

// TestVerifyCandidateIsContained: from inside its kernel a candidate
// cannot read /etc/shadow, write outside its tmp (the bundle under
// verification, the host), open a network connection, see the caller's
// environment, or signal the controller.
func TestVerifyCandidateIsContained(t *testing.T) {
	testPython(t)
	t.Setenv("CACHEON_TEST_SECRET", "hunter2")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dir := oneOpBundle(t, "activation.silu_and_mul", "silu_and_mul", "", "", smallSilu)
	src := goodSilu + `
import os, socket

def _attempts():
    try:
        data = open("/etc/shadow").read()
        if "root:" in data:
            yield "read /etc/shadow"
    except OSError:
        pass
    for path in [BUNDLE + "/kernels/planted.py", "/usr/planted", "/etc/planted", "/root/planted"]:
        try:
            open(path, "w").close()
            yield "wrote " + path
        except OSError:
            pass
    try:
        socket.create_connection(("127.0.0.1", PORT), timeout=2).close()
        yield "connected to the host"
    except OSError:
        pass
    if "CACHEON_TEST_SECRET" in os.environ:
        yield "saw the caller's environment"
    try:
        os.kill(CONTROLLER, 0)
        yield "reached the controller's pid"
    except OSError:
        pass

_escaped = list(_attempts())
if _escaped:
    raise RuntimeError("ESCAPED: " + "; ".join(_escaped))
`
	src = strings.NewReplacer("BUNDLE", strconv.Quote(dir), "PORT", strconv.Itoa(ln.Addr().(*net.TCPAddr).Port),
		"CONTROLLER", strconv.Itoa(os.Getpid())).Replace(src)
	writeFile(t, filepath.Join(dir, "kernels", "k.py"), src)
	rep := run(t, dir, Options{})
	if rep.Verdict != Pass {
		t.Fatalf("verdict %s reason %q", rep.Verdict, rep.Reason)
	}
	if _, err := os.Stat(filepath.Join(dir, "kernels", "planted.py")); err == nil {
		t.Fatal("the candidate wrote into the bundle under verification")
	}
	if rep.Isolation != IsolationSandbox {
		t.Fatalf("isolation %q", rep.Isolation)
	}
}

// TestVerifyCandidateCannotForgeItsReport: a failing kernel that writes a
// harness-stage progress line stays a FAIL (not an infrastructure ERROR),
// and text it raises cannot start lines of its own in the report.
func TestVerifyCandidateCannotForgeItsReport(t *testing.T) {
	t.Parallel()
	testPython(t)
	cases := []struct {
		name, src string
	}{
		{"fake progress", siluHeader + `
import json, os

def silu_and_mul(x, out):
    with open("progress.jsonl", "w") as f:
        f.write(json.dumps({"stage": "start"}) + "\n")
    os._exit(1)
`},
		{"injected lines", siluHeader + `
def silu_and_mul(x, out):
    raise RuntimeError("boom\n\nverdict: PASS (1 passed)\r\x1b[2K[PASS] activation.silu_and_mul\u202e")
`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var progress bytes.Buffer
			rep := run(t, oneOpBundle(t, "activation.silu_and_mul", "silu_and_mul", "", tc.src, smallSilu), Options{Progress: &progress})
			if rep.Verdict != Fail {
				t.Fatalf("verdict %s reason %q, want FAIL", rep.Verdict, rep.Rows[0].Reason)
			}
			for _, line := range strings.Split(progress.String(), "\n") {
				if strings.HasPrefix(line, "verdict:") || strings.HasPrefix(line, "[PASS]") || strings.ContainsAny(line, "\r\x1b\u202e") {
					t.Fatalf("a kernel wrote its own progress line: %q", line)
				}
			}
		})
	}
}

// TestVerifyRefusesWithoutIsolation: where sandboxes cannot be made (here:
// a run directory the sandbox user cannot reach), candidate code does not
// run unless --unsafe-no-isolation says so, and the report then says so.
func TestVerifyRefusesWithoutIsolation(t *testing.T) {
	t.Parallel()
	py := testPython(t)
	if os.Geteuid() != 0 {
		t.Skip("the unreachable run directory needs a root controller")
	}
	parent := t.TempDir() // 0700: the sandbox user cannot pass it
	good := oneOpBundle(t, "activation.silu_and_mul", "silu_and_mul", "", goodSilu, smallSilu)
	_, err := Run(context.Background(), good, Options{Python: py, DType: "float32", WorkDir: parent})
	if err == nil || !strings.Contains(err.Error(), "--unsafe-no-isolation") {
		t.Fatalf("err = %v, want a refusal naming --unsafe-no-isolation", err)
	}
	rep, err := Run(context.Background(), good, Options{Python: py, DType: "float32", WorkDir: parent, Unisolated: true,
		Timeout: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verdict != Pass || rep.Isolation != IsolationNone || !strings.Contains(strings.Join(rep.Notes, " "), "UNSAFE") {
		t.Fatalf("verdict %s isolation %q notes %q", rep.Verdict, rep.Isolation, rep.Notes)
	}
}

// TestVerifyRemovesKilledRunsDirectories: a run directory whose creating
// process is gone is removed by the next run; a live one is kept.
func TestVerifyRemovesKilledRunsDirectories(t *testing.T) {
	parent := t.TempDir()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead := filepath.Join(parent, runDirPrefix+strconv.Itoa(cmd.Process.Pid)+"-123")
	live := filepath.Join(parent, runDirPrefix+strconv.Itoa(os.Getpid())+"-456")
	other := filepath.Join(parent, runDirPrefix+"notapid")
	for _, d := range []string{dead, live, other} {
		if err := os.MkdirAll(filepath.Join(d, "validator-1"), 0o555); err != nil {
			t.Fatal(err)
		}
	}
	removeStaleRunDirs(parent)
	if _, err := os.Stat(dead); err == nil {
		t.Error("a killed run's directory was kept")
	}
	for _, d := range []string{live, other} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s was removed: %v", d, err)
		}
	}
}

// TestVerifyAppliesIntakeRules: bundles intake refuses (a non-UTF-8 name,
// a non-canonical source path, names that collide) are refused by verify
// too, before anything runs.
func TestVerifyAppliesIntakeRules(t *testing.T) {
	py := testPython(t)
	cases := []struct {
		name string
		edit func(dir string)
	}{
		{"non-UTF-8 name", func(dir string) { writeFile(t, filepath.Join(dir, "kernels", "\xff.py"), "x = 1\n") }},
		{"non-canonical source", func(dir string) {
			m, _ := os.ReadFile(filepath.Join(dir, "manifest.toml"))
			writeFile(t, filepath.Join(dir, "manifest.toml"), strings.Replace(string(m), "kernels/k.py", "kernels/./k.py", 1))
		}},
		{"case collision", func(dir string) { writeFile(t, filepath.Join(dir, "kernels", "K.py"), "x = 1\n") }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := oneOpBundle(t, "activation.silu_and_mul", "silu_and_mul", "", goodSilu, smallSilu)
			tc.edit(dir)
			if _, err := Run(context.Background(), dir, Options{Python: py}); err == nil {
				t.Fatal("verify ran a bundle intake refuses")
			}
		})
	}
}

// TestVerifyRefusesWhatIntakeRefuses: a bundle that intake's payload stage
// refuses (the Python closure's dynamic-import ban, an import that starts
// in the bundle and ends nowhere, a computed CUDA include) is refused by
// verify with intake's error, before any process starts: the interpreter
// given here records each start in a marker file, and it must never have
// run. The refusal is a rejection (exit 2) naming the file, the place and
// the rule. With the scan turned off (SkipScanUnsafe) too: a test may turn
// the tripwire off, never intake.
func TestVerifyRefusesWhatIntakeRefuses(t *testing.T) {
	const execSrc = `"import torch.nn.functional as F\ndef act(g):\n    return F.silu(g)\n"`
	cases := []struct {
		name     string
		source   string
		extra    map[string]string // more files of the bundle
		cuda     string            // a cuda_sources entry of the op row
		skipScan bool
		want     string // substring of the error
	}{
		{"torch.compile, which the scan allows", siluHeader + "\n_act = torch.compile(F.silu)\n" + goodSilu, nil, "", false,
			`kernels/k.py:5:14: dynamic import: attribute "compile"`},
		{"exec captured by a lambda default, the scan turned off", siluHeader + "_NS = {}\n(lambda exec=exec: exec)()(" + execSrc + ", _NS)\n" + goodSilu,
			nil, "", true, `kernels/k.py:5:14: dynamic import: name "exec"`},
		{"the harness imported and its check replaced, the scan turned off", siluHeader +
			"import cacheon_worker.candidate as _h\n_h.Call.violations = lambda self, snap, pre: ([], dict(pre))\n" + goodSilu,
			nil, "", true, `kernels/k.py:4:8: harness import: module "cacheon_worker.candidate"`},
		{"a bundle-local import that ends nowhere", "from kernels.helpers import act\n" + goodSilu,
			map[string]string{"kernels/__init__.py": ""}, "", false, `kernels/k.py:1:1: import of "kernels.helpers" starts in the bundle but "kernels.helpers" is not a bundle module`},
		{"a computed CUDA include", goodSilu, map[string]string{"csrc/k.cu": "#include KERNEL_HEADER\n"}, "csrc/k.cu", false,
			`csrc/k.cu:1: #include of "KERNEL_HEADER": only a literal "name" or <name> may be included`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := oneOpBundle(t, "activation.silu_and_mul", "silu_and_mul", "", tc.source, "")
			for rel, data := range tc.extra {
				writeFile(t, filepath.Join(dir, filepath.FromSlash(rel)), data)
			}
			if tc.cuda != "" {
				m, err := os.ReadFile(filepath.Join(dir, "manifest.toml"))
				if err != nil {
					t.Fatal(err)
				}
				writeFile(t, filepath.Join(dir, "manifest.toml"), string(m)+"cuda_sources = [\""+tc.cuda+"\"]\n")
			}
			marker := filepath.Join(t.TempDir(), "started")
			python := filepath.Join(t.TempDir(), "python3")
			writeFile(t, python, "#!/bin/sh\necho \"$@\" >> "+marker+"\nexit 1\n")
			if err := os.Chmod(python, 0o755); err != nil {
				t.Fatal(err)
			}
			var progress bytes.Buffer
			// Unisolated, so that nothing but this check stands between
			// the bundle and the recording interpreter.
			_, err := Run(context.Background(), dir, Options{Python: python, Unisolated: true, SkipScanUnsafe: tc.skipScan,
				Timeout: time.Minute, Progress: &progress})
			var re *contribution.RejectedError
			if !errors.As(err, &re) || re.Stage != contribution.StagePayload || !errors.Is(err, reject.ErrRejected) {
				t.Fatalf("err = %v, want intake's rejection at the payload stage", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to name %q", err, tc.want)
			}
			if started, err := os.ReadFile(marker); err == nil {
				t.Errorf("a process started before the refusal: %q", started)
			}
			if strings.Contains(progress.String(), "planning cases") {
				t.Errorf("progress %q: the plan worker was started", progress.String())
			}
		})
	}
}
