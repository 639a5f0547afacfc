package roofline

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/cacheon/engine/models/testmodel"
)

func TestPeakBandwidth(t *testing.T) {
	for _, c := range []struct {
		name string
		want float64
		ok   bool
	}{
		{"NVIDIA H200", 4.8e12, true},
		{"NVIDIA GH200 480GB", 4.0e12, true},
		{"NVIDIA H100 80GB HBM3", 3.35e12, true},
		{"NVIDIA H100 PCIe", 2.0e12, true},
		{"NVIDIA H100 NVL", 3.9e12, true},
		{"NVIDIA A100-SXM4-80GB", 2.039e12, true},
		{"NVIDIA A100-SXM4-40GB", 1.555e12, true},
		{"NVIDIA L40S", 0.864e12, true},
		{"NVIDIA L4", 0.3e12, true},
		{"NVIDIA GeForce RTX 4090", 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, source, ok := PeakBandwidth(c.name)
			if got != c.want || ok != c.ok || source == "" {
				t.Fatalf("PeakBandwidth(%q) = %g, %q, %v; want %g, %v", c.name, got, source, ok, c.want, c.ok)
			}
		})
	}
}

func TestFloorSeconds(t *testing.T) {
	for _, c := range []struct {
		name  string
		b     Bound
		steps int
		want  float64
	}{
		// The H200 runs' 8-layer model: 983 MB less the 131 MB embedding.
		{"8-layer model on an H200", Bound{WeightBytes: 852_000_000, PeakBytesPerSecond: 4.8e12}, 63, 63 * float64(852_000_000-CacheAllowance) / 4.8e12},
		{"a model inside the cache allowance", Bound{WeightBytes: CacheAllowance, PeakBytesPerSecond: 4.8e12}, 63, 0},
		{"no known ceiling", Bound{WeightBytes: 852_000_000}, 63, 0},
		{"no steps", Bound{WeightBytes: 852_000_000, PeakBytesPerSecond: 4.8e12}, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := c.b.FloorSeconds(c.steps); math.Abs(got-c.want) > 1e-15 {
				t.Fatalf("FloorSeconds(%d) = %g, want %g", c.steps, got, c.want)
			}
		})
	}
}

// TestWeightBytes: every tensor but the input embedding, read from the
// sealed model's safetensors header.
func TestWeightBytes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "model")
	s := testmodel.DefaultShape(false)
	if _, err := testmodel.Write(dir, s, 1); err != nil {
		t.Fatal(err)
	}
	h, err := testmodel.Header(s)
	if err != nil {
		t.Fatal(err)
	}
	var want int64
	for _, e := range h.Tensors {
		if e.Name != "model.embed_tokens.weight" {
			want += e.End - e.Begin
		}
	}
	got, err := WeightBytes(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got != want || got == 0 || got >= h.DataSize() {
		t.Fatalf("WeightBytes = %d, want %d of %d", got, want, h.DataSize())
	}
	if err := os.Remove(filepath.Join(dir, "model.safetensors")); err != nil {
		t.Fatal(err)
	}
	if _, err := WeightBytes(dir); err == nil {
		t.Fatal("a model without weights has a weight size")
	}
}

func TestLanesPeak(t *testing.T) {
	for _, c := range []struct {
		name  string
		names []string
		want  float64
	}{
		{"the cpu lane", nil, 0},
		{"two H200s", []string{"NVIDIA H200", "NVIDIA H200"}, 4.8e12},
		{"mixed: the most lenient", []string{"NVIDIA H100 PCIe", "NVIDIA H200"}, 4.8e12},
		{"an unknown GPU leaves no ceiling", []string{"NVIDIA H200", "NVIDIA GeForce RTX 4090"}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, source := LanesPeak(c.names)
			if got != c.want || source == "" {
				t.Fatalf("LanesPeak(%q) = %g, %q; want %g", c.names, got, source, c.want)
			}
		})
	}
}
