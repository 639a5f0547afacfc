package qualify

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"

	"github.com/cacheon/engine/evaluator/speed"
	"github.com/cacheon/engine/evaluator/workload"
)

// The default inputs of a qualification on embedded defaults: a smoke
// workload that fits the CPU lane, and a v8 policy with the test
// thresholds, bound to a calibration document that says it is
// uncalibrated. Reports name both by digest like any other input.
var (
	//go:embed defaults/cpu.workload.hcl
	defaultWorkload []byte
	//go:embed defaults/cpu.calibration.json
	defaultCalibration []byte
)

// DefaultWorkload is the embedded smoke workload.
func DefaultWorkload() (*workload.Workload, error) {
	w, diags := workload.Parse("defaults/cpu.workload.hcl", defaultWorkload)
	if diags.HasErrors() {
		return nil, diags
	}
	return w, nil
}

// UncalibratedDigest is the SHA-256 of the embedded "uncalibrated"
// calibration document the default policy is bound to. Settlement refuses
// to crown on a report whose calibration is this one.
func UncalibratedDigest() string {
	sum := sha256.Sum256(defaultCalibration)
	return hex.EncodeToString(sum[:])
}

// DefaultPolicy is the embedded v8 policy: the test thresholds, bound to
// the embedded "uncalibrated" calibration document by its SHA-256.
func DefaultPolicy() speed.Policy {
	cal := UncalibratedDigest()
	return speed.Policy{Version: speed.V8, MinMargin: 0.005, NoiseMultiplier: 2, MaxNoise: 0.02, MinWindows: 5,
		MaxWindowScatter: 0.25, MaxConditioningSlowdown: 2, MaxStageSeconds: 600, MaxQualificationSeconds: 1800,
		CalibrationDigest: cal, CalibrationContextDigest: cal}
}
