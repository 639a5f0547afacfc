package cli

import (
	"context"

	"github.com/cacheon/engine/evaluator/lanes"
)

// gpuDriver discovers the machine's GPUs and samples them around every
// read. The default build asks nvidia-smi (lanes.Runner: no cgo, the
// binary stays static); a build with the nvml tag and cgo links NVML
// (evaluator/lanes/nvml).
type gpuDriver interface {
	Discover(ctx context.Context) ([]lanes.GPU, error)
	Read(ctx context.Context) ([]lanes.Sample, error)
	Close() error
	// Name says which backend answered, for the progress lines.
	Name() string
}

// smiDriver is lanes.Runner as a gpuDriver.
type smiDriver struct{ lanes.Runner }

func (smiDriver) Close() error { return nil }
func (smiDriver) Name() string { return "nvidia-smi" }
