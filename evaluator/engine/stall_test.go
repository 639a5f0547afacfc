package engine

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cacheon/engine/evaluator/engine/enginetest"
)

// TestStalledEnginesEndWithinTheStallWindow: an engine that stops making
// progress during a batch is ended once a stall window passes, long before
// its batch time limit, as a stalled fault (the candidate's loss when it
// ran the candidate's code); an engine whose serving thread keeps working
// through the window is left to answer.
func TestStalledEnginesEndWithinTheStallWindow(t *testing.T) {
	f := enginetest.New(t)
	t.Parallel()
	cases := []struct {
		name, source string
		// cpu is the sandbox's CPU quota; 0 = the default.
		cpu  float64
		kind string // "" = served
		says string
	}{
		{"sleeps through a batch", enginetest.ReadyFrame + `inp.readline(); time.sleep(600)
`, 0, FaultStalled, "nothing in it runs"},
		// The noisy neighbour of the issue: threads a kernel starts burn
		// the CPU and hold the interpreter lock, and the serving thread,
		// which gives the lock up at every pause, hardly ever gets it back.
		// Under a fifth of a CPU the burners exhaust the sandbox's quota
		// whatever else the host runs, so the reading does not depend on
		// how loaded the test machine is (on an idle host the default
		// quota shows the same; on a loaded one the burners alone may not
		// reach a tenth of the window, and the host is blamed instead).
		{"its own threads starve its serving thread", enginetest.ReadyFrame + `import threading
def burn():
    while True:
        pass
inp.readline()
for _ in range(3):
    threading.Thread(target=burn, daemon=True).start()
for _ in range(1000000):
    time.sleep(0.0005)
`, 0.2, FaultStalled, "its own threads starve its serving thread"},
		{"works for longer than the window", enginetest.ReadyFrame + `def d(r):
    t0 = time.monotonic()
    while time.monotonic() - t0 < 3: pass
    send({"id": r["id"], "calls": {}, "tokens": [[1]*r["max_new_tokens"] for _ in r["prompts"]], "seconds": time.monotonic() - t0})
serve(d)
`, 0, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			name := strings.ReplaceAll(c.name, " ", "-")
			s := spec(f, name)
			s.Root = f.HostileRoot(t, name, enginetest.Prelude+c.source)
			s.StartTimeout, s.BatchTimeout, s.StallWindow = time.Minute, 4*time.Minute, time.Second
			mark := enginetest.Mark(t)
			s.Env = append(s.Env, mark)
			iso := f.Iso
			iso.Limits.CPU = c.cpu
			e, err := Start(context.Background(), iso, s)
			if err != nil {
				t.Fatal(err)
			}
			_, err = e.Batch(context.Background(), [][]int{{1, 2}}, 3)
			e.Close()
			if pids := enginetest.Strays(mark); len(pids) > 0 && !f.Iso.Unsafe {
				t.Errorf("processes %v outlived the engine", pids)
			}
			if c.kind == "" {
				if err != nil {
					t.Fatalf("an engine that works was stopped: %v", err)
				}
				return
			}
			var fault *Fault
			if !errors.As(err, &fault) || fault.Kind != c.kind || !strings.Contains(fault.Detail, c.says) {
				t.Fatalf("batch: %v, want a %s fault that says %q", err, c.kind, c.says)
			}
			t.Logf("%s: %v", c.name, err)
		})
	}
}

// TestThreadsLeftRunningAreNamed: a thread a kernel started that keeps
// running after the batch that started it is named in the next batch's
// window.
func TestThreadsLeftRunningAreNamed(t *testing.T) {
	f := enginetest.New(t)
	t.Parallel()
	s := spec(f, "left-running")
	s.Root = f.HostileRoot(t, "left-running", enginetest.Prelude+enginetest.ReadyFrame+`import ctypes, threading
def burn():
    ctypes.CDLL(None).prctl(15, b"kernel-burner", 0, 0, 0)
    while True:
        sum(range(1000))
started = []
def d(r):
    if not started:
        threading.Thread(target=burn, daemon=True).start(); started.append(1)
    send({"id": r["id"], "calls": {}, "tokens": [[1]*r["max_new_tokens"] for _ in r["prompts"]], "seconds": 0.0001})
serve(d)
`)
	e, err := Start(context.Background(), f.Iso, s)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	w, err := e.Batch(context.Background(), [][]int{{1, 2}}, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(w.LeftRunning) != 0 {
		t.Errorf("the first batch names threads left running before it: %+v", w.LeftRunning)
	}
	// The engine has nothing to do for a second.
	time.Sleep(time.Second)
	w, err = e.Batch(context.Background(), [][]int{{1, 2}}, 3)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, l := range w.LeftRunning {
		found = found || l.Name == "kernel-burner"
	}
	if !found {
		t.Fatalf("left running: %+v, want the kernel-burner thread", w.LeftRunning)
	}
	t.Logf("left running: %+v", w.LeftRunning)
}
