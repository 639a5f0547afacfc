//go:build nvml && cgo

package nvml

import (
	"context"
	"errors"
	"testing"

	"github.com/cacheon/engine/evaluator/lanes"
)

// TestAgreesWithNvidiaSMI discovers and samples the machine through NVML
// and through nvidia-smi and requires the same devices and consistent
// readings. Without a driver both must say lanes.ErrNoGPU.
func TestAgreesWithNvidiaSMI(t *testing.T) {
	ctx := context.Background()
	smi := lanes.Runner{}
	want, smiErr := smi.Discover(ctx)
	d, err := Open()
	if errors.Is(err, lanes.ErrNoGPU) {
		if !errors.Is(smiErr, lanes.ErrNoGPU) {
			t.Fatalf("NVML finds no GPU (%v), nvidia-smi found %v (%v)", err, want, smiErr)
		}
		t.Skipf("no GPU here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if smiErr != nil {
		t.Fatalf("NVML opened but nvidia-smi failed: %v", smiErr)
	}
	got, err := d.Discover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("NVML found %d GPUs, nvidia-smi %d", len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		// nvidia-smi rounds memory.total to MiB as NVML does; allow one
		// MiB of difference in how each rounds.
		if g.UUID != w.UUID || g.Name != w.Name || g.Index != w.Index || g.MemoryMiB < w.MemoryMiB-1 || g.MemoryMiB > w.MemoryMiB+1 {
			t.Errorf("device %d: NVML %+v, nvidia-smi %+v", i, g, w)
		}
	}
	samples, err := d.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	smiSamples, err := smi.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range samples {
		t.Logf("NVML %+v\nsmi  %+v", s, smiSamples[i])
		if s.UUID != got[i].UUID || s.SMClockMHz <= 0 || s.MemClockMHz <= 0 || s.PowerW <= 0 || s.TemperatureC <= 0 || len(s.ThrottleActive) != 18 {
			t.Errorf("sample %d: %+v", i, s)
		}
		// A memory clock is fixed for a device at a given state, and both
		// read it within a second of each other.
		if s.MemClockMHz != smiSamples[i].MemClockMHz {
			t.Errorf("memory clock: NVML %d MHz, nvidia-smi %d MHz", s.MemClockMHz, smiSamples[i].MemClockMHz)
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Read(ctx); !errors.Is(err, errClosed) {
		t.Fatalf("read after close: %v", err)
	}
}
