package engine

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cacheon/engine/evaluator/sandbox"
	"github.com/cacheon/engine/evaluator/worker"
	"github.com/cacheon/engine/tools/model/testmodel"
)

// fixture is what an engine test needs: an interpreter with torch, an
// engine root, a sealed test model and an empty (stock) engine tree, all
// where the sandbox user can read them.
type fixture struct {
	python, root, model, tree, run string
	iso                            worker.Isolation
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	py := os.Getenv("CACHEON_TEST_PYTHON")
	if py == "" {
		py = "/usr/bin/python3"
	}
	if out, err := exec.Command(py, "-c", "import torch, numpy").CombinedOutput(); err != nil {
		t.Skipf("engine tests need torch in %s: %s", py, strings.TrimSpace(string(out)))
	}
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := sandbox.SearchableDir(d); err != nil {
			t.Fatal(err)
		}
	}
	f := fixture{python: py, model: filepath.Join(dir, "model"), tree: filepath.Join(dir, "tree"), run: filepath.Join(dir, "run")}
	if err := sandbox.Available(filepath.Join(dir, "probe")); err != nil {
		if os.Getenv("CACHEON_REQUIRE_SANDBOX") != "" {
			t.Fatalf("sandbox required: %v", err)
		}
		t.Logf("no sandbox here (%v): engines run unisolated", err)
		f.iso.Unsafe = true
	}
	if _, err := testmodel.Write(f.model, testmodel.DefaultShape(false), 3); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{f.tree, f.run} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	root, err := worker.EngineRoot(filepath.Join(dir, "engine-root"))
	if err != nil {
		t.Fatal(err)
	}
	f.root = root
	f.iso.Hide = []string{f.run}
	return f
}

func (f fixture) spec(name string) Spec {
	return Spec{Python: f.python, Root: f.root, Tree: f.tree, Model: f.model, Device: "cpu",
		WorkDir: filepath.Join(f.run, name), StartTimeout: 3 * time.Minute, BatchTimeout: time.Minute}
}

func TestEngineServesTimedBatches(t *testing.T) {
	f := newFixture(t)
	e, err := Start(context.Background(), f.iso, f.spec("b"))
	if err != nil {
		t.Fatal(err)
	}
	if e.Ready.Protocol != Protocol || e.Ready.Device != "cpu" || len(e.Ready.Substrate) != 64 {
		t.Fatalf("ready %+v", e.Ready)
	}
	prompts := [][]int{{1, 2, 3, 4}, {5, 6, 7, 8}}
	var first [][]int
	for i := 0; i < 3; i++ {
		w, err := e.Batch(context.Background(), prompts, 6)
		if err != nil {
			t.Fatal(err)
		}
		if len(w.Tokens) != 2 || len(w.Tokens[0]) != 6 || w.Seconds <= 0 || w.Seconds > w.HostSeconds {
			t.Fatalf("window %+v", w)
		}
		if i == 0 {
			first = w.Tokens
		} else if !equal(first, w.Tokens) {
			t.Fatalf("greedy generation changed between batches: %v then %v", first, w.Tokens)
		}
	}
	if _, err := e.Batch(context.Background(), [][]int{{1 << 30}}, 2); !isFault(err, FaultRefused) {
		t.Fatalf("out-of-vocabulary batch: %v, want a refused batch", err)
	}
	out, err := e.Close()
	if err != nil || !out.Clean() {
		t.Fatalf("close: %+v, %v", out, err)
	}
}

func equal(a, b [][]int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if len(a[i]) != len(b[i]) {
			return false
		}
		for j := range a[i] {
			if a[i][j] != b[i][j] {
				return false
			}
		}
	}
	return true
}

func isFault(err error, kind string) bool {
	var f *Fault
	return errors.As(err, &f) && f.Kind == kind
}

// hostileModule writes a fake engine module into a copy of the engine
// root: what a kernel that took over the engine process could do.
func hostileRoot(t *testing.T, f fixture, name, source string) string {
	t.Helper()
	root := filepath.Join(filepath.Dir(f.root), "hostile-"+name)
	if err := os.MkdirAll(filepath.Join(root, "cacheon_substrate"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{"__init__.py", "session.py"} {
		body := ""
		if file == "session.py" {
			body = source
		}
		if err := os.WriteFile(filepath.Join(root, "cacheon_substrate", file), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

const hostilePrelude = `import json, os, sys, time
out = os.fdopen(5, "w", buffering=1)
inp = os.fdopen(4, "r")
def send(o):
    out.write(json.dumps(o) + "\n"); out.flush()
`

func TestHostileEnginesAreFaults(t *testing.T) {
	f := newFixture(t)
	ready := `send({"ready": True, "protocol": "cacheon-engine-session-v1", "substrate": "0"*64, "device": "cpu", "slots": {}})
`
	cases := []struct {
		name, source, kind string
		atStart            bool
	}{
		{"forged fast timer", ready + `for line in inp:
    r = json.loads(line); time.sleep(0.5)
    send({"id": r["id"], "tokens": [[1]*r["max_new_tokens"] for _ in r["prompts"]], "seconds": 0.001})
`, FaultTiming, false},
		{"time longer than the bracket", ready + `for line in inp:
    r = json.loads(line)
    send({"id": r["id"], "tokens": [[1]*r["max_new_tokens"] for _ in r["prompts"]], "seconds": 30.0})
`, FaultTiming, false},
		{"too few tokens", ready + `for line in inp:
    r = json.loads(line)
    send({"id": r["id"], "tokens": [[1] for _ in r["prompts"]], "seconds": 0.0001})
`, FaultTokens, false},
		{"garbage frame", ready + `for line in inp:
    out.write("I am the verdict: PASS\n"); out.flush()
`, FaultGarbage, false},
		{"frame for another batch", ready + `for line in inp:
    r = json.loads(line)
    send({"id": r["id"] + 7, "tokens": [], "seconds": 0.1})
`, FaultGarbage, false},
		{"hangs", ready + `time.sleep(600)
`, FaultTimeout, false},
		{"exits mid-batch", ready + `inp.readline(); os._exit(0)
`, FaultExited, false},
		{"never ready", `time.sleep(600)
`, FaultStart, true},
		{"other protocol", `send({"ready": True, "protocol": "v0", "substrate": "", "device": "cpu", "slots": {}})
time.sleep(600)
`, FaultProtocol, true},
		{"huge line", ready + `inp.readline(); out.write("x" * (65 << 20)); out.flush(); time.sleep(600)
`, FaultGarbage, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := f.spec(strings.ReplaceAll(c.name, " ", "-"))
			s.Root = hostileRoot(t, f, strings.ReplaceAll(c.name, " ", "-"), hostilePrelude+c.source)
			s.StartTimeout, s.BatchTimeout = 20*time.Second, 3*time.Second
			e, err := Start(context.Background(), f.iso, s)
			if c.atStart {
				if !isFault(err, c.kind) {
					t.Fatalf("start: %v, want a %s fault", err, c.kind)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			_, err = e.Batch(context.Background(), [][]int{{1, 2}}, 3)
			if !isFault(err, c.kind) {
				t.Fatalf("batch: %v, want a %s fault", err, c.kind)
			}
		})
	}
}
