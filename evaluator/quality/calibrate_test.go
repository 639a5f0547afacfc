package quality

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cacheon/engine/evaluator/engine"
)

// defaultCalibrationFile is where the calibration run writes the
// embedded default.
const defaultCalibrationFile = "defaults/cpu.quality-calibration.json"

// TestCalibrateDefaultOnTheCPU is the calibration run behind the embedded
// default: three stock-versus-stock rounds (B, C and B′ all the
// incumbent, fresh engines each round) on the test model, teacher-forced
// by the reference. It rewrites the default with
//
//	CACHEON_QUALITY_CALIBRATE=1 go test ./evaluator/quality -run TestCalibrateDefaultOnTheCPU -count=1 -v
//
// and otherwise checks that the embedded default is what the run
// computes (the CPU lane is deterministic).
func TestCalibrateDefaultOnTheCPU(t *testing.T) {
	if testing.Short() {
		t.Skip("starts nine engines and three references")
	}
	b := newBench(t)
	incTree, _, _ := b.trees(t, "kernels/contributions/rmsnorm_torch")
	rounds, err := StockRounds(context.Background(), StockRoundsOptions{
		Isolation: b.f.Iso,
		Engine: engine.Spec{Python: b.f.Python, Root: b.f.Root, Tree: incTree, Model: b.f.Model, Device: "cpu",
			StartTimeout: 3 * time.Minute, BatchTimeout: 2 * time.Minute},
		Teacher: TeacherSpec{Python: b.f.Python, Root: b.f.Root, Tree: b.refTree, Model: b.f.Model, Device: "cpu",
			StartTimeout: 3 * time.Minute, ScoreTimeout: time.Minute},
		Batches: [][][]int{b.prompts}, MaxNewTokens: b.tokens, Rounds: 3, WorkDir: filepath.Join(b.f.Run, "stock"),
		Progress: t.Logf,
	})
	if err != nil {
		t.Fatal(err)
	}
	c, err := Calibrate(rounds, DefaultCalibrateOptions(b.modelDigest(t), benchWorkload(), b.refDigest))
	if err != nil {
		t.Fatal(err)
	}
	data, err := MarshalCalibration(c)
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv("CACHEON_QUALITY_CALIBRATE") != "" {
		if err := os.WriteFile(defaultCalibrationFile, data, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s:\n%s", defaultCalibrationFile, data)
		return
	}
	if string(data) != string(defaultCalibration) {
		t.Fatalf("the embedded calibration is not what the run computes; rerun with CACHEON_QUALITY_CALIBRATE=1:\n%s", data)
	}
}
