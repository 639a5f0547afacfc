package engine

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cacheon/engine/evaluator/engine/enginetest"
)

func spec(f enginetest.Fixture, name string) Spec {
	return Spec{Python: f.Python, Root: f.Root, Tree: f.Tree, Model: f.Model, Device: "cpu",
		WorkDir: filepath.Join(f.Run, name), StartTimeout: 3 * time.Minute, BatchTimeout: time.Minute}
}

func TestEngineServesTimedBatches(t *testing.T) {
	f := enginetest.New(t)
	s := spec(f, "b")
	s.SwapTrees = []string{f.Tree}
	e, err := Start(context.Background(), f.Iso, s)
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
		if len(w.Tokens) != 2 || len(w.Tokens[0]) != 6 || w.EngineSeconds <= 0 || w.EngineSeconds > w.HostSeconds ||
			w.PrefillEngineSeconds <= 0 || w.PrefillEngineSeconds > w.PrefillHostSeconds {
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
	// A refused batch leaves the session serving.
	if w, err := e.Batch(context.Background(), prompts, 2); err != nil || len(w.Tokens[0]) != 2 || w.PrefillEngineSeconds <= 0 {
		t.Fatalf("a batch after a refused one: %+v, %v", w, err)
	}
	if _, err := e.Batch(context.Background(), prompts, 1); err == nil {
		t.Fatal("a batch of one new token (no decode step) was served")
	}
	// A hot swap to a tree named at start, and the engine serves the same
	// tokens from the re-imported tree; a swap anywhere else is refused.
	secs, slots, err := e.Swap(context.Background(), f.Tree)
	if err != nil || secs <= 0 || len(slots) == 0 {
		t.Fatalf("swap: %v %v %v", secs, slots, err)
	}
	if w, err := e.Batch(context.Background(), prompts, 6); err != nil || !equal(w.Tokens, first) {
		t.Fatalf("a batch after the swap: %v, %v (before: %v)", w.Tokens, err, first)
	}
	if _, _, err := e.Swap(context.Background(), "/etc"); !isFault(err, FaultRefused) {
		t.Fatalf("a swap to a tree not named at start: %v, want a refused request", err)
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

func TestHostileEnginesAreFaults(t *testing.T) {
	f := enginetest.New(t)
	ready := enginetest.ReadyFrame
	cases := []struct {
		name, source, kind string
		atStart            bool
	}{
		{"forged fast timer", ready + `def d(r):
    time.sleep(3.0)
    send({"id": r["id"], "calls": {}, "tokens": [[1]*r["max_new_tokens"] for _ in r["prompts"]], "seconds": 0.001})
serve(d)
`, FaultTiming, false},
		{"time longer than the bracket", ready + `serve(lambda r: send({"id": r["id"], "calls": {}, "tokens": [[1]*r["max_new_tokens"] for _ in r["prompts"]], "seconds": 30.0}))
`, FaultTiming, false},
		{"forged prefill timer", ready + `for line in inp:
    r = json.loads(line); time.sleep(3.0)
    send({"id": r["id"], "phase": "prefill", "seconds": 0.001})
`, FaultTiming, false},
		{"decode answered without a prefill", ready + `for line in inp:
    r = json.loads(line)
    send({"id": r["id"], "calls": {}, "tokens": [[1]*r["max_new_tokens"] for _ in r["prompts"]], "seconds": 0.0001})
`, FaultGarbage, false},
		{"too few tokens", ready + `serve(lambda r: send({"id": r["id"], "calls": {}, "tokens": [[1] for _ in r["prompts"]], "seconds": 0.0001}))
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
		{"leaves a daemon and dies", ready + `import subprocess
subprocess.Popen(["sleep", "600"], start_new_session=True)
inp.readline(); os._exit(3)
`, FaultExited, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := spec(f, strings.ReplaceAll(c.name, " ", "-"))
			s.Root = f.HostileRoot(t, strings.ReplaceAll(c.name, " ", "-"), enginetest.Prelude+c.source)
			s.StartTimeout, s.BatchTimeout = 20*time.Second, 6*time.Second
			mark := enginetest.Mark(t)
			s.Env = append(s.Env, mark)
			// Whatever the engine did, nothing it started outlives it.
			defer func() {
				if f.Iso.Unsafe {
					return // a new session escapes an unisolated engine's process group
				}
				if pids := enginetest.Strays(mark); len(pids) > 0 {
					t.Errorf("processes %v outlived the engine", pids)
				}
			}()
			e, err := Start(context.Background(), f.Iso, s)
			if c.atStart {
				if !isFault(err, c.kind) {
					t.Fatalf("start: %v, want a %s fault", err, c.kind)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			_, err = e.Batch(context.Background(), [][]int{{1, 2}}, 3)
			e.Close()
			if !isFault(err, c.kind) {
				t.Fatalf("batch: %v, want a %s fault", err, c.kind)
			}
		})
	}
}
