//go:build nvml && cgo

// Package nvml discovers and samples a machine's GPUs through NVML, the
// driver's management library, as an alternative to lanes.Runner's
// nvidia-smi queries.
//
// It links github.com/NVIDIA/go-nvml, which needs cgo and opens
// libnvidia-ml.so.1 at run time, so it is compiled only with the nvml build
// tag (go build -tags nvml ./tools/cmd/cacheon): the default controller
// stays one static binary without cgo. Both backends answer with the same
// lanes.GPU and lanes.Sample values, and a machine without the driver
// library is lanes.ErrNoGPU in both, the CPU lane only. NVML answers a
// sample in microseconds where nvidia-smi starts a process, which matters
// when a read is sampled before and after.
package nvml

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/cacheon/engine/evaluator/lanes"
)

// Driver is an initialized NVML. Close releases it.
type Driver struct {
	closed bool
}

// Open initializes NVML. Where the library or the driver is missing, or
// the machine has no device, the error is lanes.ErrNoGPU.
func Open() (*Driver, error) {
	switch ret := nvml.Init(); ret {
	case nvml.SUCCESS:
		return &Driver{}, nil
	case nvml.ERROR_LIBRARY_NOT_FOUND, nvml.ERROR_DRIVER_NOT_LOADED, nvml.ERROR_NOT_FOUND:
		return nil, fmt.Errorf("%w: NVML: %v", lanes.ErrNoGPU, ret)
	default:
		return nil, fmt.Errorf("NVML init: %v", ret)
	}
}

// Close shuts NVML down; a second Close does nothing.
func (d *Driver) Close() error {
	if d.closed {
		return nil
	}
	d.closed = true
	if ret := nvml.Shutdown(); ret != nvml.SUCCESS {
		return fmt.Errorf("NVML shutdown: %v", ret)
	}
	return nil
}

// errClosed is a call on a closed Driver.
var errClosed = errors.New("NVML driver is closed")

// devices returns every device handle in index order.
func (d *Driver) devices() ([]nvml.Device, error) {
	if d.closed {
		return nil, errClosed
	}
	n, ret := nvml.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("NVML device count: %v", ret)
	}
	if n == 0 {
		return nil, lanes.ErrNoGPU
	}
	out := make([]nvml.Device, n)
	for i := range out {
		dev, ret := nvml.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("NVML device %d: %v", i, ret)
		}
		out[i] = dev
	}
	return out, nil
}

// Discover lists the machine's GPUs in index order, as lanes.Runner does.
func (d *Driver) Discover(ctx context.Context) ([]lanes.GPU, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	devs, err := d.devices()
	if err != nil {
		return nil, err
	}
	var gpus []lanes.GPU
	for i, dev := range devs {
		uuid, ret := dev.GetUUID()
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("NVML device %d UUID: %v", i, ret)
		}
		name, ret := dev.GetName()
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("NVML device %d name: %v", i, ret)
		}
		mem, ret := dev.GetMemoryInfo()
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("NVML device %d memory: %v", i, ret)
		}
		gpus = append(gpus, lanes.GPU{Index: i, UUID: uuid, Name: name, MemoryMiB: int(mem.Total >> 20)})
	}
	return gpus, nil
}

// Read samples every GPU once: SM and memory clocks, power, temperature
// and the active clock-event (throttle) reasons, in the form nvidia-smi
// prints them ("0x" and 16 hex digits).
func (d *Driver) Read(ctx context.Context) ([]lanes.Sample, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	devs, err := d.devices()
	if err != nil {
		return nil, err
	}
	at := time.Now().UTC().Format(time.RFC3339Nano)
	var out []lanes.Sample
	for i, dev := range devs {
		uuid, ret := dev.GetUUID()
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("NVML device %d UUID: %v", i, ret)
		}
		sm, r1 := dev.GetClockInfo(nvml.CLOCK_SM)
		memc, r2 := dev.GetClockInfo(nvml.CLOCK_MEM)
		mw, r3 := dev.GetPowerUsage()
		temp, r4 := dev.GetTemperature(nvml.TEMPERATURE_GPU)
		reasons, r5 := dev.GetCurrentClocksEventReasons()
		if r5 == nvml.ERROR_FUNCTION_NOT_FOUND { // a driver older than the event-reason API
			reasons, r5 = dev.GetCurrentClocksThrottleReasons()
		}
		for _, r := range []nvml.Return{r1, r2, r3, r4, r5} {
			if r != nvml.SUCCESS {
				// A device that stops answering is a lane gone: the
				// qualification makes that NO_DECISION.
				return nil, fmt.Errorf("NVML device %d (%s) sample: %v", i, uuid, r)
			}
		}
		out = append(out, lanes.Sample{UUID: uuid, At: at, SMClockMHz: int(sm), MemClockMHz: int(memc),
			PowerW: float64(mw) / 1000, TemperatureC: int(temp), ThrottleActive: fmt.Sprintf("0x%016x", reasons)})
	}
	return out, nil
}
