//go:build !(nvml && cgo)

package cli

// openGPUDriver is the default build's backend: nvidia-smi.
func openGPUDriver() (gpuDriver, error) { return smiDriver{}, nil }
