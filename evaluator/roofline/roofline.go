// Package roofline is the speed stage's plausibility floor. A decode step
// of a dense model reads every weight matrix once, whatever the batch, so
// no engine can generate a step faster than its lane can stream the
// model's weights from memory. A timed window shorter than that floor was
// not measured honestly (work hidden from the clock, a cache of answers, a
// timer patched): the stage refuses it rather than grading it.
//
// The floor is deliberately generous: it counts only the weights beyond a
// cache allowance (an L2-resident model can beat the memory bandwidth),
// never the KV cache or activations, and the bandwidth ceiling is the
// device's peak. An honest engine runs well above it; a cheat that makes
// a window look several times faster than the hardware allows does not.
package roofline

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/cacheon/engine/models/safetensors"
)

// CacheAllowance is how many bytes of weights the floor assumes a device
// may serve from on-chip cache instead of memory (an H200's L2 is 50 MiB).
const CacheAllowance = 64 << 20

// Bound is a lane's floor: the weights a decode step must stream and the
// lane's peak memory bandwidth. A zero PeakBytesPerSecond means no ceiling
// is known for the lane's device and the gate is not applied (Source says
// why).
type Bound struct {
	WeightBytes        int64   `json:"weight_bytes"`
	PeakBytesPerSecond float64 `json:"peak_bytes_per_second"`
	Source             string  `json:"source"`
}

// Applied reports whether the bound can refuse anything.
func (b Bound) Applied() bool { return b.PeakBytesPerSecond > 0 && b.WeightBytes > CacheAllowance }

// FloorSeconds is the least time steps decode steps can take.
func (b Bound) FloorSeconds(steps int) float64 {
	if !b.Applied() || steps <= 0 {
		return 0
	}
	return float64(steps) * float64(b.WeightBytes-CacheAllowance) / b.PeakBytesPerSecond
}

// peaks are the peak memory bandwidths of datacenter GPUs, in bytes per
// second, from their vendors' data sheets, keyed by a substring of the
// name the driver reports. Longer keys are tried first, so "H100 PCIe"
// wins over "H100".
var peaks = map[string]float64{
	"H200":           4.8e12,
	"H100 NVL":       3.9e12,
	"H100 PCIe":      2.0e12,
	"H100":           3.35e12,
	"H800":           3.35e12,
	"GH200":          4.0e12,
	"B200":           8.0e12,
	"B100":           8.0e12,
	"A100-SXM4-80GB": 2.039e12,
	"A100 80GB PCIe": 1.935e12,
	"A100":           1.555e12,
	"L40S":           0.864e12,
	"L40":            0.864e12,
	"L4":             0.3e12,
}

// PeakBandwidth is the peak memory bandwidth of the GPU the driver names
// name, and where it comes from; ok is false for a device not in the
// table (the gate is then not applied, and the report says so).
func PeakBandwidth(name string) (bytesPerSecond float64, source string, ok bool) {
	keys := make([]string, 0, len(peaks))
	for k := range peaks {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if len(keys[i]) != len(keys[j]) {
			return len(keys[i]) > len(keys[j])
		}
		return keys[i] < keys[j]
	})
	for _, k := range keys {
		if strings.Contains(name, k) {
			return peaks[k], fmt.Sprintf("%s: %s peak memory bandwidth %g B/s (data sheet)", name, k, peaks[k]), true
		}
	}
	return 0, fmt.Sprintf("%s: no peak memory bandwidth known; the roofline floor is not applied", name), false
}

// WeightBytes is the bytes of weights a decode step of the model in dir
// reads: every tensor of its safetensors files except the input
// embedding, of which a step reads only the rows of its tokens (unless
// the model has no separate LM head, when the embedding is the head and is
// read whole).
func WeightBytes(dir string) (int64, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.safetensors"))
	if err != nil {
		return 0, err
	}
	if len(files) == 0 {
		return 0, fmt.Errorf("model %s: no .safetensors file", dir)
	}
	sort.Strings(files)
	var total, embed int64
	head := false
	for _, path := range files {
		f, err := os.Open(path)
		if err != nil {
			return 0, err
		}
		st, err := f.Stat()
		if err != nil {
			f.Close()
			return 0, err
		}
		sf, err := safetensors.Read(f, st.Size())
		f.Close()
		if err != nil {
			return 0, fmt.Errorf("model %s: %w", path, err)
		}
		for _, e := range sf.Header.Tensors {
			n := e.End - e.Begin
			switch e.Name {
			case "model.embed_tokens.weight":
				embed += n
				continue
			case "lm_head.weight":
				head = true
			}
			total += n
		}
	}
	if !head {
		total += embed
	}
	return total, nil
}

// LanesPeak is the ceiling for lanes whose GPUs the driver names names:
// the largest of their peak bandwidths, so that the floor is the most
// lenient any of them allows. A GPU not in the table leaves no ceiling
// (0), and an empty list (the CPU lane) too.
func LanesPeak(names []string) (bytesPerSecond float64, source string) {
	if len(names) == 0 {
		return 0, "the cpu lane: no peak memory bandwidth known; the roofline floor is not applied"
	}
	var sources []string
	for _, n := range names {
		p, s, ok := PeakBandwidth(n)
		if !ok {
			return 0, s
		}
		if p > bytesPerSecond {
			bytesPerSecond = p
		}
		sources = append(sources, s)
	}
	sort.Strings(sources)
	return bytesPerSecond, strings.Join(dedupe(sources), "; ")
}

func dedupe(sorted []string) []string {
	out := sorted[:0]
	for i, s := range sorted {
		if i == 0 || s != sorted[i-1] {
			out = append(out, s)
		}
	}
	return out
}
