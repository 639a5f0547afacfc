package materialize

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"

	"github.com/cacheon/engine/kernels/contribution"
)

// A bundle with CUDA sources: the translation unit is renamed into the
// namespace, the header it includes keeps its name beside it, and the
// runtime manifest and rebuild plan point at the emitted files.
func TestCUDAContribution(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "silu_cuda")
	files := map[string]string{
		"manifest.toml": `bundle_id = "silu-cuda"
abi_version = "cacheon-op-abi-v0"

[[ops]]
slot = "activation.silu_and_mul"
source = "kernels/silu.py"
entry = "silu_and_mul"
cuda_sources = ["csrc/silu_kernel.cu", "csrc/common.cuh"]
`,
		"rebuild.json":        `{"steps": [{"type": "repo_python", "path": "build_cuda_ext.py"}]}`,
		"kernels/silu.py":     "def silu_and_mul(x, out):\n    raise NotImplementedError\n",
		"csrc/silu_kernel.cu": "#include \"common.cuh\"\n__global__ void silu() {}\n",
		"csrc/common.cuh":     "#pragma once\n#include <cuda_runtime.h>\n",
	}
	for rel, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	opts := Options{
		Catalog: defaultCatalog(t),
		Payload: contribution.PayloadOptions{
			Closure: contribution.PythonClosure, CUDACheck: contribution.CUDAIncludeCheck,
			PatcherDigests: map[string]string{"build_cuda_ext.py": d64("b")},
		},
	}
	b := evaluationStack(t, opts, dir)
	dest := filepath.Join(t.TempDir(), "engine")
	res, err := Materialize(b.manifest, b.resolve, dest, opts)
	if err != nil {
		t.Fatal(err)
	}
	ns := res.Contributions[0].Namespace
	tree := readTree(t, dest)
	unit := "cuda/" + ns + "/csrc/" + emittedName(ns, "csrc/silu_kernel.cu") + ".cu"
	header := "cuda/" + ns + "/csrc/common.cuh"
	if tree[unit] != files["csrc/silu_kernel.cu"] || tree[header] != files["csrc/common.cuh"] {
		t.Errorf("CUDA files not emitted as %s and %s; tree has %v", unit, header, keys(tree))
	}
	var rt struct {
		Ops []struct {
			CUDASources []string `toml:"cuda_sources"`
		} `toml:"ops"`
	}
	if err := toml.Unmarshal([]byte(tree["manifest.toml"]), &rt); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(rt.Ops[0].CUDASources, ","); got != unit+","+header {
		t.Errorf("runtime cuda_sources %s, want %s,%s (sorted)", got, unit, header)
	}
	var plan struct {
		Steps []rebuildStep `json:"steps"`
	}
	if err := json.Unmarshal([]byte(tree[RuntimeRebuildName]), &plan); err != nil {
		t.Fatal(err)
	}
	if len(plan.Steps) != 1 || plan.Steps[0] != (rebuildStep{Type: "repo_python", Path: "cacheon/patchers/build_cuda_ext.py"}) {
		t.Errorf("runtime rebuild plan %s", tree[RuntimeRebuildName])
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
