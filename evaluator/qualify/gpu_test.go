package qualify

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cacheon/engine/evaluator/engine"
	"github.com/cacheon/engine/evaluator/engine/enginetest"
	"github.com/cacheon/engine/evaluator/lanes"
	"github.com/cacheon/engine/evaluator/speed"
	"github.com/cacheon/engine/evaluator/workload"
)

const gpuWorkload = `
workload "gpu-aa" {
  max_new_tokens = 64
  temperature    = 0
  warmup         = 3
  conditioning   = 1
  engine {
    tensor_parallel = 1
    cuda_graphs     = true
  }
  prompts {
    seed       = 3
    batches    = 11
    batch_size = 8
    prompt_len = 32
    vocab_size = 64
  }
}
`

// gpuArms are stock B, C and B′ engines on the GPU with CUDA graphs,
// sandboxed, over the GPU test workload.
func gpuArms(t *testing.T) (enginetest.Fixture, *workload.Workload, []Arm) {
	t.Helper()
	f := newFixture(t)
	f.Iso.Devices = lanes.DeviceNodes()
	w, diags := workload.Parse("gpu.hcl", []byte(gpuWorkload))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	var arms []Arm
	for _, r := range []speed.Role{speed.B, speed.C, speed.BPrime} {
		arms = append(arms, Arm{Role: r, Spec: engine.Spec{Python: f.Python, Root: f.Root, Tree: f.Tree, Model: f.Model,
			Device: "cuda", Graph: true, WorkDir: armDir(f.Run, r), StartTimeout: 5 * time.Minute, BatchTimeout: 2 * time.Minute}})
	}
	return f, w, arms
}

// TestCalibrateOnTheGPU runs stock-versus-stock rounds of the v8 schedule
// on a GPU, in sandboxed engines with CUDA graphs: the A/A noise of the
// lane. It runs only where CACHEON_TEST_DEVICE=cuda; the rounds and the
// calibration are written to $CACHEON_TEST_OUT when set.
func TestCalibrateOnTheGPU(t *testing.T) {
	if os.Getenv("CACHEON_TEST_DEVICE") != "cuda" {
		t.Skip("set CACHEON_TEST_DEVICE=cuda to run on a GPU")
	}
	f, w, arms := gpuArms(t)
	p := testPolicy()
	p.MinWindows = 8
	start := time.Now()
	c, err := Calibrate(context.Background(), RoundsOptions{Isolation: f.Iso, Arms: arms, Workload: w, Policy: p,
		Sample: lanes.Runner{}.Read, Rounds: 5, Lanes: "cuda shared", Progress: func(i int, r CalibrationRound) {
			t.Logf("round %d: B %s C %s B′ %s: %s %s", i, r.B, r.C, r.BPrime, r.Decision, r.Reason)
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("noise floor %s, supports max_noise %s and min_margin %s (supported %v), %s", c.NoiseFloor, c.MaxNoise, c.MinMargin, c.Supported, time.Since(start).Round(time.Second))
	if out := os.Getenv("CACHEON_TEST_OUT"); out != "" {
		data, _ := json.MarshalIndent(c, "", "  ")
		if err := os.WriteFile(filepath.Join(out, "calibration-gpu.json"), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestIdleEnginesAreQuietOnTheGPU: stock engines on a GPU, with CUDA
// graphs, consume no more than the idle bound while they wait for another
// engine's read (the noisy-neighbour check must not refuse honest CUDA
// engines). It runs only where CACHEON_TEST_DEVICE=cuda.
func TestIdleEnginesAreQuietOnTheGPU(t *testing.T) {
	if os.Getenv("CACHEON_TEST_DEVICE") != "cuda" {
		t.Skip("set CACHEON_TEST_DEVICE=cuda to run on a GPU")
	}
	f, w, arms := gpuArms(t)
	// The accounting sees into the sandbox: an engine that loaded torch
	// and CUDA has consumed CPU time, and its tree shows it.
	e, err := engine.Start(context.Background(), f.Iso, arms[0].Spec)
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := e.CPUSeconds()
	_, _ = e.Close()
	if err != nil || loaded < 0.5 {
		t.Fatalf("a started engine's tree consumed %g CPU-seconds (%v)", loaded, err)
	}
	t.Logf("a started engine's tree: %.2f CPU-seconds", loaded)
	p := testPolicy()
	p.MinWindows = 8
	for round := 0; round < 3; round++ {
		for i := range arms {
			arms[i].Spec.WorkDir = filepath.Join(f.Run, fmt.Sprint(round), string(arms[i].Role))
		}
		ev := runSpeedSets(context.Background(), f.Iso, arms, w, p, lanes.Runner{}.Read, 0)
		t.Logf("round %d: %s %s", round, ev.Decision, ev.Reason)
		requireQuietNeighbours(t, ev, 6)
	}
}
