package prebuild_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cacheon/engine/evaluator/prebuild"
	"github.com/cacheon/engine/evaluator/verify"
	"github.com/cacheon/engine/internal/testtree"
)

// TestCUDAContributionOnTheGPU prebuilds kernels/contributions/rmsnorm_cuda
// for the H200 (nvcc in the contained compiler child, which sees no GPU),
// then verifies it on the GPU from the sealed artifact: every catalog
// shape against the fp32 truth and the CUDA graph gate. It runs only where
// CACHEON_TEST_DEVICE=cuda; the receipt and the verify report are written
// to $CACHEON_TEST_OUT when set.
func TestCUDAContributionOnTheGPU(t *testing.T) {
	if os.Getenv("CACHEON_TEST_DEVICE") != "cuda" {
		t.Skip("set CACHEON_TEST_DEVICE=cuda to run on a GPU")
	}
	py := python()
	if err := prebuild.Available(context.Background(), py, "cuda", false); err != nil {
		t.Fatalf("the GPU host cannot prebuild for cuda: %v", err)
	}
	dir := filepath.Join(searchable(t), "rmsnorm_cuda")
	testtree.Copy(t, filepath.Join("..", "..", "kernels", "contributions", "rmsnorm_cuda"), dir)
	store := filepath.Join(searchable(t), "store")
	res, err := prebuild.Build(context.Background(), prebuild.Options{Bundle: dir, Store: store, WorkDir: searchable(t),
		Target: "cuda", Arch: "sm_90", Python: py, Timeout: 8 * time.Minute, Progress: os.Stderr})
	if err != nil {
		t.Fatalf("prebuild: %v", err)
	}
	t.Logf("sealed %s in %d ms with %s", res.Sealed.Digest.Hex, res.Receipt.DurationMS, res.Receipt.CompilerVersion)
	for _, dtype := range []string{"bfloat16", "float16", "float32"} {
		rep, err := verify.Run(context.Background(), dir, verify.Options{Device: "cuda", DType: dtype, Python: py,
			WorkDir: searchable(t), NativeArtifact: res.Sealed.Dir, Progress: os.Stderr})
		if err != nil {
			t.Fatalf("verify %s: %v", dtype, err)
		}
		writeOut(t, "verify-"+dtype+".json", rep)
		if rep.Verdict != verify.Pass || rep.NativeArtifact != res.Sealed.Digest.Hex {
			t.Fatalf("verify %s: %s (%s), artifact %q", dtype, rep.Verdict, rep.Reason, rep.NativeArtifact)
		}
		for _, row := range rep.Rows {
			if row.Graph != verify.GraphRequired {
				t.Fatalf("verify %s: the row's graph gate is %q, want %q", dtype, row.Graph, verify.GraphRequired)
			}
		}
	}
	writeOut(t, "prebuild-receipt.json", res.Receipt)
}

func writeOut(t *testing.T, name string, v any) {
	t.Helper()
	dir := os.Getenv("CACHEON_TEST_OUT")
	if dir == "" {
		return
	}
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
		t.Fatal(err)
	}
}
