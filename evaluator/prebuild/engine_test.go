package prebuild_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cacheon/engine/evaluator/engine"
	"github.com/cacheon/engine/evaluator/engine/enginetest"
	"github.com/cacheon/engine/evaluator/prebuild"
	"github.com/cacheon/engine/internal/testtree"
)

// TestEngineLoadsTheSealedLibrary: a sandboxed substrate engine whose tree
// has a cuda_sources row serves batches with the row contributed when the
// controller gives it the sealed artifact, and refuses to start without
// one. The tree holds the fixture's files under a namespace directory, as a
// materialized tree does, and is what the prebuild compiles.
func TestEngineLoadsTheSealedLibrary(t *testing.T) {
	f := enginetest.New(t)
	prebuild.NeedToolchain(t, f.Python)
	bundle := filepath.Join(searchable(t), "rmsnorm_cpp")
	testtree.Copy(t, filepath.Join("testdata", "rmsnorm_cpp"), bundle)
	ns := filepath.Join(f.Tree, "cacheon_c_rmsnorm_cpp")
	testtree.Copy(t, bundle, ns)
	manifest := `bundle_id = "cacheon-materialized-v1"
abi_version = "cacheon-op-abi-v0"

[[ops]]
slot = "norm.rmsnorm"
variant = "default"
source = "cacheon_c_rmsnorm_cpp/kernels/rmsnorm.py"
entry = "rmsnorm"
metadata = "cacheon_c_rmsnorm_cpp/metadata/rmsnorm.json"
cuda_sources = ["cacheon_c_rmsnorm_cpp/csrc/rmsnorm_common.cuh", "cacheon_c_rmsnorm_cpp/csrc/rmsnorm_cpu.cu"]
`
	if err := os.WriteFile(filepath.Join(f.Tree, "manifest.toml"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	// A qualification prebuilds the engine tree itself: every cuda_sources
	// row of every contribution in it, into one artifact.
	res, err := prebuild.Build(context.Background(), prebuild.Options{Bundle: f.Tree, Store: filepath.Join(searchable(t), "store"),
		WorkDir: searchable(t), Target: "cpu", Python: f.Python})
	if err != nil {
		t.Fatalf("prebuild: %v", err)
	}
	spec := func(name, native string) engine.Spec {
		return engine.Spec{Python: f.Python, Root: f.Root, Tree: f.Tree, Model: f.Model, Device: "cpu", Native: native,
			WorkDir: filepath.Join(f.Run, name), StartTimeout: 3 * time.Minute, BatchTimeout: time.Minute}
	}

	e, err := engine.Start(context.Background(), f.Iso, spec("with", res.Sealed.Dir))
	if err != nil {
		t.Fatalf("engine with the sealed artifact: %v", err)
	}
	if got := e.Ready.Slots["norm.rmsnorm"]; got != "contributed" {
		t.Fatalf("norm.rmsnorm is %q, want contributed (slots %v)", got, e.Ready.Slots)
	}
	w, err := e.Batch(context.Background(), [][]int{{1, 2, 3, 4}, {5, 6, 7, 8}}, 4)
	if err != nil || len(w.Tokens) != 2 || len(w.Tokens[0]) != 4 {
		t.Fatalf("batch: %+v, %v", w, err)
	}
	if out, err := e.Close(); err != nil || !out.Clean() {
		t.Fatalf("close: %+v, %v", out, err)
	}

	_, err = engine.Start(context.Background(), f.Iso, spec("without", ""))
	if err == nil || !strings.Contains(err.Error(), "never compile") {
		t.Fatalf("engine without an artifact: %v, want a refusal of the cuda_sources row", err)
	}
}
