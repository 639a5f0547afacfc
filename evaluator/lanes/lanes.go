// Package lanes finds the GPUs of a machine, carves them into the lanes a
// qualification runs its engines on, and samples their clocks, power and
// throttle reasons around every read. Clocks are only ever read, never
// set: noise is controlled by the protocol, not by locking the machine.
//
// Runner's discovery and sampling run nvidia-smi's query interface, which
// ships with every driver, rather than linking NVML: the default
// controller stays one static binary with no cgo, and a machine without
// the driver is simply a machine with the CPU lane only. A build with the
// nvml tag and cgo has the NVML backend, evaluator/lanes/nvml, which
// answers with the same GPU and Sample values.
package lanes

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// GPU is one device as discovery found it.
type GPU struct {
	Index     int    `json:"index"`
	UUID      string `json:"uuid"`
	Name      string `json:"name"`
	MemoryMiB int    `json:"memory_mib"`
}

// Sample is one reading of a device's state.
type Sample struct {
	UUID           string  `json:"uuid"`
	At             string  `json:"at"` // RFC 3339 with nanoseconds, UTC
	SMClockMHz     int     `json:"sm_clock_mhz"`
	MemClockMHz    int     `json:"mem_clock_mhz"`
	PowerW         float64 `json:"power_w"`
	TemperatureC   int     `json:"temperature_c"`
	ThrottleActive string  `json:"throttle_reasons"` // the driver's bit mask, e.g. "0x0000000000000000"
}

// Lane is a set of devices one engine runs on.
type Lane struct {
	Name   string   `json:"name"`
	Device string   `json:"device"` // "cpu" or "cuda"
	GPUs   []string `json:"gpus"`   // UUIDs
	// Shared is true when the machine had too few GPUs for disjoint lanes
	// and both logical lanes use the same devices.
	Shared bool `json:"shared_device"`
}

// ErrNoGPU is discovery on a machine without NVIDIA GPUs or driver.
var ErrNoGPU = errors.New("no NVIDIA GPU")

// Runner queries the driver through nvidia-smi.
type Runner struct {
	NvidiaSMI string // the nvidia-smi to run; "" = look it up on PATH
}

func (r Runner) query(ctx context.Context, fields string) ([][]string, error) {
	bin := r.NvidiaSMI
	if bin == "" {
		p, err := exec.LookPath("nvidia-smi")
		if err != nil {
			return nil, ErrNoGPU
		}
		bin = p
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, "--query-gpu="+fields, "--format=csv,noheader,nounits")
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		msg := strings.TrimSpace(stderr.String() + " " + string(out))
		if strings.Contains(msg, "NVIDIA-SMI has failed") || strings.Contains(msg, "No devices were found") {
			return nil, fmt.Errorf("%w: %s", ErrNoGPU, msg)
		}
		return nil, fmt.Errorf("nvidia-smi: %v: %s", err, msg)
	}
	rd := csv.NewReader(bytes.NewReader(out))
	rd.TrimLeadingSpace = true
	rows, err := rd.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("nvidia-smi output: %w", err)
	}
	return rows, nil
}

// Discover lists the machine's GPUs in index order; ErrNoGPU where there
// are none.
func (r Runner) Discover(ctx context.Context) ([]GPU, error) {
	rows, err := r.query(ctx, "index,uuid,name,memory.total")
	if err != nil {
		return nil, err
	}
	var gpus []GPU
	for i, row := range rows {
		if len(row) != 4 {
			return nil, fmt.Errorf("nvidia-smi row %d: %d fields, want 4: %q", i, len(row), row)
		}
		idx, err1 := strconv.Atoi(row[0])
		mem, err2 := strconv.Atoi(row[3])
		if err1 != nil || err2 != nil || !strings.HasPrefix(row[1], "GPU-") {
			return nil, fmt.Errorf("nvidia-smi row %d: %q", i, row)
		}
		gpus = append(gpus, GPU{Index: idx, UUID: row[1], Name: row[2], MemoryMiB: mem})
	}
	if len(gpus) == 0 {
		return nil, ErrNoGPU
	}
	return gpus, nil
}

// Read samples every GPU once.
func (r Runner) Read(ctx context.Context) ([]Sample, error) {
	rows, err := r.query(ctx, "uuid,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active")
	if err != nil {
		return nil, err
	}
	at := time.Now().UTC().Format(time.RFC3339Nano)
	var out []Sample
	for i, row := range rows {
		if len(row) != 6 {
			return nil, fmt.Errorf("nvidia-smi sample row %d: %d fields, want 6: %q", i, len(row), row)
		}
		s := Sample{UUID: row[0], At: at, ThrottleActive: row[5]}
		s.SMClockMHz, _ = strconv.Atoi(row[1])
		s.MemClockMHz, _ = strconv.Atoi(row[2])
		s.PowerW, _ = strconv.ParseFloat(row[3], 64)
		s.TemperatureC, _ = strconv.Atoi(row[4])
		out = append(out, s)
	}
	return out, nil
}

// Plan carves the two lanes of a qualification (baseline and candidate),
// tp GPUs each: physically disjoint when there are 2·tp GPUs, both on the
// same first tp GPUs (Shared) when there are at least tp, the CPU lane
// when there are none. Fewer than tp GPUs is an error: the workload's
// engine cannot run here.
func Plan(gpus []GPU, tp int) ([2]Lane, error) {
	if tp < 1 {
		return [2]Lane{}, fmt.Errorf("lanes: tensor parallel size %d", tp)
	}
	if len(gpus) == 0 {
		if tp != 1 {
			return [2]Lane{}, fmt.Errorf("lanes: the CPU lane runs tensor parallel size 1, the workload asks for %d", tp)
		}
		return [2]Lane{{Name: "baseline", Device: "cpu", GPUs: []string{}}, {Name: "candidate", Device: "cpu", GPUs: []string{}, Shared: true}}, nil
	}
	if len(gpus) < tp {
		return [2]Lane{}, fmt.Errorf("lanes: %d GPUs, the workload needs %d per engine", len(gpus), tp)
	}
	uuids := func(g []GPU) []string {
		var out []string
		for _, x := range g {
			out = append(out, x.UUID)
		}
		return out
	}
	if len(gpus) >= 2*tp {
		return [2]Lane{{Name: "baseline", Device: "cuda", GPUs: uuids(gpus[:tp])}, {Name: "candidate", Device: "cuda", GPUs: uuids(gpus[tp : 2*tp])}}, nil
	}
	return [2]Lane{{Name: "baseline", Device: "cuda", GPUs: uuids(gpus[:tp]), Shared: true}, {Name: "candidate", Device: "cuda", GPUs: uuids(gpus[:tp]), Shared: true}}, nil
}

// Exchange swaps the lanes' roles, as a reproduction runs.
func Exchange(l [2]Lane) [2]Lane {
	a, b := l[1], l[0]
	a.Name, b.Name = "baseline", "candidate"
	return [2]Lane{a, b}
}

// DeviceNodes lists the NVIDIA device nodes a CUDA worker needs bound
// into its sandbox.
func DeviceNodes() []string {
	var out []string
	for _, pattern := range []string{"/dev/nvidia*", "/dev/nvidia-caps/*", "/dev/dri/*"} {
		matches, _ := filepath.Glob(pattern)
		for _, m := range matches {
			if fi, err := os.Stat(m); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
				out = append(out, m)
			}
		}
	}
	return out
}
