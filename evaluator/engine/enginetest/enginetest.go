// Package enginetest sets up what a test of real engine sessions needs:
// an interpreter with torch, the embedded engine root, a sealed test
// model and an empty (stock) engine tree, all where the sandbox user can
// read them.
package enginetest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cacheon/engine/evaluator/sandbox"
	"github.com/cacheon/engine/evaluator/worker"
	"github.com/cacheon/engine/models"
	"github.com/cacheon/engine/models/testmodel"
)

// Fixture is one test's engine set-up.
type Fixture struct {
	Python string // interpreter with torch ($CACHEON_TEST_PYTHON, else /usr/bin/python3)
	Root   string // from worker.EngineRoot
	Model  string // a sealed test model
	// ModelDigest is Model's content digest, as qualify names it (the
	// embedded quality calibration was measured on this model).
	ModelDigest string
	Tree        string // an empty engine tree: the stock engine
	Run         string // a run directory, hidden from every engine
	Iso         worker.Isolation
}

// Interpreter is the test interpreter ($CACHEON_TEST_PYTHON, else
// /usr/bin/python3) and whether it imports torch and numpy. Checking takes
// an interpreter start and a torch import, seconds on a small machine: a
// package whose tests each make a fixture can check once, in its
// TestMain, and make every fixture with NewWith.
type Interpreter struct {
	Python string
	// Missing is the output of the failed import, "" when it succeeded.
	Missing string
}

// CheckInterpreter checks the test interpreter.
func CheckInterpreter() Interpreter {
	py := os.Getenv("CACHEON_TEST_PYTHON")
	if py == "" {
		py = "/usr/bin/python3"
	}
	in := Interpreter{Python: py}
	if out, err := exec.Command(py, "-c", "import torch, numpy").CombinedOutput(); err != nil {
		in.Missing = strings.TrimSpace(string(out))
		if in.Missing == "" {
			in.Missing = err.Error()
		}
	}
	return in
}

// New makes a fixture, skipping the test where torch is missing. Where no
// sandbox can be made the engines run unisolated, unless
// CACHEON_REQUIRE_SANDBOX is set, where that fails the test.
func New(t testing.TB) Fixture {
	t.Helper()
	return NewWith(t, CheckInterpreter())
}

// NewWith is New with the interpreter checked already.
func NewWith(t testing.TB, in Interpreter) Fixture {
	t.Helper()
	py := in.Python
	if in.Missing != "" {
		t.Skipf("engine tests need torch in %s: %s", py, in.Missing)
	}
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := sandbox.SearchableDir(d); err != nil {
			t.Fatal(err)
		}
	}
	f := Fixture{Python: py, Model: filepath.Join(dir, "model"), Tree: filepath.Join(dir, "tree"), Run: filepath.Join(dir, "run")}
	if err := sandbox.Available(filepath.Join(dir, "probe")); err != nil {
		if os.Getenv("CACHEON_REQUIRE_SANDBOX") != "" {
			t.Fatalf("sandbox required: %v", err)
		}
		t.Logf("no sandbox here (%v): engines run unisolated", err)
		f.Iso.Unsafe = true
	}
	if _, err := testmodel.Write(f.Model, testmodel.DefaultShape(false), 3); err != nil {
		t.Fatal(err)
	}
	rc, err := models.Provision(f.Model, models.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f.ModelDigest = rc.ContentDigest
	for _, d := range []string{f.Tree, f.Run} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	root, err := worker.EngineRoot(filepath.Join(dir, "engine-root"))
	if err != nil {
		t.Fatal(err)
	}
	f.Root, f.Iso.Hide = root, []string{f.Run}
	return f
}

// HostileRoot writes an engine root whose session module is source: what
// a kernel that took over the engine process could make it do.
func (f Fixture) HostileRoot(t testing.TB, name, source string) string {
	t.Helper()
	root := filepath.Join(filepath.Dir(f.Root), "hostile-"+name)
	pkg := filepath.Join(root, "cacheon_substrate")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pkg, "__init__.py"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pkg, "session.py"), []byte(source), 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

// Prelude opens the session pipes for a hostile session module.
const Prelude = `import json, os, sys, time
out = os.fdopen(5, "w", buffering=1)
inp = os.fdopen(4, "r")
def send(o):
    out.write(json.dumps(o) + "\n"); out.flush()
def serve(decode):
    """Answers every prefill at once and honestly, and every decode with
    decode(the batch request). A line that is no request (an audit
    session's first line, its sample's seed and rate) is read and left."""
    batch = None
    for line in inp:
        r = json.loads(line)
        if "id" not in r:
            continue
        if r.get("op") == "batch":
            batch = r
            send({"id": r["id"], "phase": "prefill", "seconds": 0.0001})
        else:
            decode(batch)
`

// ReadyFrame is a well-formed ready frame for a hostile session module.
const ReadyFrame = `send({"ready": True, "protocol": "cacheon-engine-session-v3", "substrate": "0"*64, "device": "cpu", "slots": {}})
`

// Mark is an environment entry unique to this test, to give every engine
// it starts, so that Strays can find what they left behind.
func Mark(t testing.TB) string {
	return "CACHEON_TEST_MARK=" + strings.ReplaceAll(t.Name(), "/", "_") + "-" + strconv.Itoa(os.Getpid())
}

// Strays lists the pids of live processes whose environment holds mark:
// after an engine is closed there must be none.
func Strays(mark string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue
		}
		for _, kv := range strings.Split(string(env), "\x00") {
			if kv == mark {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}
