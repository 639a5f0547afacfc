//go:build nvml && cgo

package cli

import (
	"context"
	"errors"

	"github.com/cacheon/engine/evaluator/lanes"
	"github.com/cacheon/engine/evaluator/lanes/nvml"
)

// openGPUDriver is the nvml build's backend: NVML, opened once for the
// whole command. A machine without the driver library has no GPU; its
// nvidia-smi (if any) would find none either.
func openGPUDriver() (gpuDriver, error) {
	d, err := nvml.Open()
	if errors.Is(err, lanes.ErrNoGPU) {
		return noGPUDriver{err}, nil
	}
	if err != nil {
		return nil, err
	}
	return nvmlDriver{d}, nil
}

type nvmlDriver struct{ *nvml.Driver }

func (nvmlDriver) Name() string { return "NVML" }

// noGPUDriver answers every call with why there is no GPU.
type noGPUDriver struct{ err error }

func (n noGPUDriver) Discover(context.Context) ([]lanes.GPU, error) { return nil, n.err }
func (n noGPUDriver) Read(context.Context) ([]lanes.Sample, error)  { return nil, n.err }
func (noGPUDriver) Close() error                                    { return nil }
func (noGPUDriver) Name() string                                    { return "NVML" }
