package materialize

import (
	"strings"
	"testing"

	"github.com/cacheon/engine/internal/identity"
	"github.com/pelletier/go-toml/v2"
)

// The upstream silu golden tree has a 137-byte entry shim and a 450-byte
// runtime manifest; both sizes follow from the namespace length and the
// emission format alone, so they pin the format.
func TestSiluGoldenSizes(t *testing.T) {
	ns := Namespace(identity.MustParse(strings.Repeat("c", 64)))
	shim := entryShim(ns+".kernels.silu_and_mul", []string{"silu_and_mul"}, nil)
	if len(shim) != 137 {
		t.Errorf("entry shim is %d bytes, want 137:\n%s", len(shim), shim)
	}
	m, err := runtimeManifest("cacheon-op-abi-v0", []runtimeOp{{
		Slot: "activation.silu_and_mul", Variant: "default",
		Source:   "entries/" + emittedName(ns, "kernels/silu_and_mul.py") + ".py",
		Entry:    "silu_and_mul",
		Metadata: "metadata/" + emittedName(ns, "metadata/silu_and_mul.json") + ".json",
		Dtypes:   []string{"bfloat16", "float16", "float32"},
	}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 450 {
		t.Errorf("runtime manifest is %d bytes, want 450:\n%s", len(m), m)
	}
}

func TestRuntimeManifestIsValidTOML(t *testing.T) {
	m, err := runtimeManifest("cacheon-op-abi-v0", []runtimeOp{
		{Slot: "a.b", Variant: "default", Source: "entries/x.py", Entry: "f", Prepare: "p", BaseKernel: "k", OverridePoint: "hole",
			Architectures: []string{"sm_90"}, CUDASources: []string{"cuda/ns/x.cu"}},
		{Slot: "c.d", Variant: "v\"2", Source: "entries/y.py", Entry: "g"},
	}, []runtimePatch{{Target: "flashinfer", Path: "patches/b.patch"}, {Target: "flashinfer", Path: "patches/a.patch"}})
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		BundleID   string `toml:"bundle_id"`
		ABI        string `toml:"abi_version"`
		DepPatches []struct {
			Target string `toml:"target"`
			Path   string `toml:"path"`
		} `toml:"dep_patches"`
		Ops []map[string]any `toml:"ops"`
	}
	if err := toml.Unmarshal(m, &doc); err != nil {
		t.Fatalf("runtime manifest is not TOML: %v\n%s", err, m)
	}
	if doc.BundleID != "cacheon-materialized-v1" || len(doc.Ops) != 2 || doc.Ops[1]["variant"] != "v\"2" {
		t.Errorf("decoded %+v", doc)
	}
	if len(doc.DepPatches) != 2 || doc.DepPatches[0].Path != "patches/a.patch" {
		t.Errorf("dep patches %+v, want sorted by (target, path)", doc.DepPatches)
	}
	if _, ok := doc.Ops[1]["prepare"]; ok {
		t.Errorf("empty optional key emitted")
	}
}

func TestUnionRebuild(t *testing.T) {
	ext := rebuildStep{Type: "repo_python", Path: "cacheon/patchers/build_cuda_ext.py"}
	dep := rebuildStep{Type: "repo_python", Path: "cacheon/patchers/apply_dep_patch.py"}
	got, err := unionRebuild([]rebuildStep{ext, dep, ext})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != dep || got[1] != ext {
		t.Errorf("union = %v, want [apply_dep_patch, build_cuda_ext]", got)
	}
	if _, err := unionRebuild([]rebuildStep{ext, {Type: "other", Path: ext.Path}}); err == nil || !strings.Contains(err.Error(), "conflict") {
		t.Errorf("conflicting steps = %v", err)
	}
	if _, err := unionRebuild([]rebuildStep{{Type: "repo_python", Path: "x/evil.py"}}); err == nil {
		t.Errorf("unregistered patcher accepted")
	}
}

func TestIndentedJSONMatchesPython(t *testing.T) {
	got, err := indentedJSON(map[string]any{"b": []any{}, "a": map[string]any{"z": "é\n", "y": []string{"p"}}, "c": nil})
	if err != nil {
		t.Fatal(err)
	}
	want := "{\n  \"a\": {\n    \"y\": [\n      \"p\"\n    ],\n    \"z\": \"é\\n\"\n  },\n  \"b\": [],\n  \"c\": null\n}\n"
	if string(got) != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
}
