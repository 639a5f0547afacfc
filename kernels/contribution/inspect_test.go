package contribution

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/cacheon/engine/catalog"
	"github.com/cacheon/engine/internal/canonjson"
	"github.com/cacheon/engine/internal/identity"
	"github.com/cacheon/engine/kernels/bundle"
	"github.com/cacheon/engine/kernels/patchers"
)

func TestInspectExamples(t *testing.T) {
	tests := []struct {
		bundle   string
		target   string
		kind     string
		features []string
	}{
		{"silu_and_mul_torch", "activation.silu_and_mul", "slot", []string{"entry"}},
		{"silu_and_mul_triton", "activation.silu_and_mul", "slot", []string{"entry"}},
		{"rmsnorm_torch", "norm.rmsnorm", "slot", []string{"entry"}},
		{"rmsnorm_triton", "norm.rmsnorm", "slot", []string{"entry"}},
		{"decode_attention_torch", "attention.decode", "slot", []string{"entry"}},
		{"moe_epilogue_atomic_torch", "collective.moe_epilogue.v1", "atomic", []string{"entry"}},
	}
	cat := defaultCatalog(t)
	for _, tc := range tests {
		t.Run(tc.bundle, func(t *testing.T) {
			in, err := Inspect(repoPath(t, "kernels/contributions/"+tc.bundle), testOptions(t))
			if err != nil {
				t.Fatal(err)
			}
			if !in.Registered() || in.Target.TargetID != tc.target || in.Target.Kind != tc.kind {
				t.Fatalf("target = %+v, want registered %s (%s)", in.Target, tc.target, tc.kind)
			}
			spec, _ := cat.TargetSpecDigest(tc.target)
			if in.Target.TargetSpecDigest != spec {
				t.Errorf("target spec digest %s, catalog says %s", in.Target.TargetSpecDigest, spec)
			}
			if !reflect.DeepEqual(in.Features, tc.features) {
				t.Errorf("features = %q, want %q", in.Features, tc.features)
			}
			if !in.Swappable || in.SwapReason != "" {
				t.Errorf("swappable = %v %q; pure Python bundles hot-swap", in.Swappable, in.SwapReason)
			}
			for _, d := range []identity.Digest{in.ContentHash, in.CommittedContentHash, in.SelectedPayloadDigest, in.SelectedDeltaDigest} {
				if !identity.IsHex64(d.String()) {
					t.Errorf("digest %q is not 64 hex", d)
				}
			}
			want, err := SelectedDelta(in.SelectedPayloadDigest, tc.target, spec)
			if err != nil || want != in.SelectedDeltaDigest {
				t.Errorf("selected delta %s, want %s (%v)", in.SelectedDeltaDigest, want, err)
			}
		})
	}
}

// The selected payload of the torch SiLU example, spelled out: one Python
// file, the 92-byte canonical metadata projection, one op row.
func TestSelectedPayloadShape(t *testing.T) {
	dir := repoPath(t, "kernels/contributions/silu_and_mul_torch")
	in, err := Inspect(dir, testOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(dir, "kernels/silu_and_mul.py"))
	if err != nil {
		t.Fatal(err)
	}
	srcSum := sha256.Sum256(src)
	meta := "{\n  \"dtypes\": [\n    \"bfloat16\",\n    \"float16\",\n    \"float32\"\n  ],\n  \"max_last_dim\": 65536\n}\n"
	metaSum := sha256.Sum256([]byte(meta))
	want := map[string]any{
		"abi_version": "cacheon-op-abi-v0",
		"files": []any{map[string]any{
			"mode": 292, "path": "kernels/silu_and_mul.py", "role": "python",
			"sha256": hex.EncodeToString(srcSum[:]), "size": len(src),
		}},
		"materializer_policy_version": 2,
		"metadata":                    []any{map[string]any{"path": "metadata/silu_and_mul.json", "sha256": hex.EncodeToString(metaSum[:]), "size": 92}},
		"ops": []any{map[string]any{
			"architectures": []any{}, "base_kernel": nil, "cuda_sources": []any{},
			"dtypes": []any{"bfloat16", "float16", "float32"}, "entry": "silu_and_mul",
			"metadata": "metadata/silu_and_mul.json", "override_point": nil, "prepare": nil,
			"setup": nil, "slot": "activation.silu_and_mul", "source": "kernels/silu_and_mul.py",
			"variant": "default",
		}},
		"patches": []any{},
		"rebuild": map[string]any{"schema_version": 1, "steps": []any{}},
	}
	got, err := canonjson.Marshal(in.SelectedPayload)
	if err != nil {
		t.Fatal(err)
	}
	wantBytes, err := canonjson.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(wantBytes) {
		t.Fatalf("selected payload\n got %s\nwant %s", got, wantBytes)
	}
	d := identity.MustH(identity.DomainSelectedPayload, want)
	if d != in.SelectedPayloadDigest {
		t.Fatalf("digest %s, want %s", in.SelectedPayloadDigest, d)
	}
}

// Acceptance: an unused padding file or README changes the bundle's
// content hash but not what it selects; renaming the directory changes
// neither.
func TestUnselectedFilesChangeArtifactNotPayload(t *testing.T) {
	opts := testOptions(t)
	base, err := Inspect(repoPath(t, "kernels/contributions/silu_and_mul_torch"), opts)
	if err != nil {
		t.Fatal(err)
	}
	renamed := repoPath(t, "kernels/contributions/silu_and_mul_torch")
	moved := filepath.Join(filepath.Dir(renamed), "another-name")
	if err := os.Rename(renamed, moved); err != nil {
		t.Fatal(err)
	}
	same, err := Inspect(moved, opts)
	if err != nil {
		t.Fatal(err)
	}
	if same.ContentHash != base.ContentHash || same.SelectedDeltaDigest != base.SelectedDeltaDigest {
		t.Fatal("renaming the bundle directory changed an identity")
	}
	for _, extra := range []struct{ rel, content string }{
		{"kernels/unused_padding.py", "# never imported\nPAD = 0\n"},
		{"README.md", "edited\n"},
		{"LICENSE", "MIT\n"},
	} {
		t.Run(extra.rel, func(t *testing.T) {
			dir := repoPath(t, "kernels/contributions/silu_and_mul_torch")
			writeFile(t, dir, extra.rel, extra.content)
			in, err := Inspect(dir, opts)
			if err != nil {
				t.Fatal(err)
			}
			if in.ContentHash == base.ContentHash {
				t.Error("content hash did not change")
			}
			if in.SelectedPayloadDigest != base.SelectedPayloadDigest || in.SelectedDeltaDigest != base.SelectedDeltaDigest {
				t.Error("selected payload changed for an unselected file")
			}
		})
	}
	t.Run("selected source edit", func(t *testing.T) {
		dir := repoPath(t, "kernels/contributions/silu_and_mul_torch")
		writeFile(t, dir, "kernels/silu_and_mul.py", "def silu_and_mul(x, out):\n    out.copy_(x[..., : x.shape[-1] // 2])\n")
		in, err := Inspect(dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		if in.SelectedPayloadDigest == base.SelectedPayloadDigest {
			t.Error("editing the op source did not change the selected payload")
		}
	})
	t.Run("metadata notes edit", func(t *testing.T) {
		dir := repoPath(t, "kernels/contributions/silu_and_mul_torch")
		writeFile(t, dir, "metadata/silu_and_mul.json", `{"notes": "other words", "max_last_dim": 65536, "dtypes": ["float16", "float32", "bfloat16"]}`)
		in, err := Inspect(dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		if in.SelectedPayloadDigest != base.SelectedPayloadDigest {
			t.Error("descriptive metadata keys changed the selected payload")
		}
	})
}

func TestInspectResolutionOutcomes(t *testing.T) {
	silu := "def silu_and_mul(x, out):\n    pass\n"
	head := "bundle_id = \"b\"\nabi_version = \"cacheon-op-abi-v0\"\n"
	op := "[[ops]]\nslot = \"activation.silu_and_mul\"\nsource = \"k.py\"\nentry = \"silu_and_mul\"\n"
	tests := []struct {
		name         string
		manifest     string
		unregistered string // substring; empty when registered or rejected
		rule         catalog.ResolutionRule
	}{
		{"implicit singleton", head + op, "", ""},
		{"explicit slot", head + "[competition]\ntarget = \"activation.silu_and_mul\"\nmode = \"slot\"\n" + op, "", ""},
		{"atomic mode on slot target", head + "[competition]\ntarget = \"activation.silu_and_mul\"\nmode = \"atomic\"\n" + op, "", catalog.ResolveKindMismatch},
		{"system mode", head + "[competition]\ntarget = \"activation.silu_and_mul\"\nmode = \"system\"\n" + op, "never crownable", ""},
		{"unknown target", head + "[competition]\ntarget = \"activation.silu\"\nmode = \"slot\"\n" + op, "", catalog.ResolveUnknownTarget},
		{"unregistered member set", head + strings.Replace(op, "silu_and_mul\"\nsource", "gelu_and_mul\"\nsource", 1), "classified for discovery", ""},
		{"setup", head + op + "setup = \"boot\"\n", "", catalog.ResolveDiscoveryLane},
		{"unknown op key", head + op + "fast = true\n", "", catalog.ResolveFeature},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, dir, "manifest.toml", tc.manifest)
			writeFile(t, dir, "k.py", silu)
			in, err := Inspect(dir, testOptions(t))
			if tc.rule != "" {
				var re *RejectedError
				var ce *catalog.ResolutionError
				if !errors.As(err, &re) || re.Stage != StageResolve || !errors.As(err, &ce) || ce.Rule != tc.rule {
					t.Fatalf("got %v, want a %s rejection", err, tc.rule)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.unregistered == "" {
				if !in.Registered() || in.SelectedDeltaDigest.IsZero() {
					t.Fatalf("target = %+v, want registered", in.Target)
				}
				return
			}
			if in.Registered() || !strings.Contains(in.Target.Unregistered, tc.unregistered) || !in.SelectedDeltaDigest.IsZero() {
				t.Fatalf("target = %+v delta %q, want unregistered (%q) and no delta", in.Target, in.SelectedDeltaDigest, tc.unregistered)
			}
			if !identity.IsHex64(in.SelectedPayloadDigest.String()) {
				t.Fatal("an unregistered bundle still has a selected payload")
			}
		})
	}
}

// Acceptance: the atomic epilogue with a declared CUDA source and a
// flashinfer patch resolves only when the rebuild both applies the patch
// and builds the extension.
func TestAtomicRebuildEvidence(t *testing.T) {
	patch := "--- a/flashinfer/data/csrc/fused_moe/e.cu\n+++ b/flashinfer/data/csrc/fused_moe/e.cu\n@@ -1 +1 @@\n-int a;\n+int a = 1;\n"
	build := func(steps ...string) string {
		dir := repoPath(t, "kernels/contributions/moe_epilogue_atomic_torch")
		m, err := os.ReadFile(filepath.Join(dir, "manifest.toml"))
		if err != nil {
			t.Fatal(err)
		}
		text := strings.Replace(string(m), "entry = \"ar_residual_rmsnorm\"\n", "entry = \"ar_residual_rmsnorm\"\ncuda_sources = [\"csrc/epilogue.cu\"]\n", 1)
		text += "\n[[dep_patches]]\ntarget = \"flashinfer\"\npath = \"patches/epilogue.patch\"\n"
		writeFile(t, dir, "manifest.toml", text)
		writeFile(t, dir, "csrc/epilogue.cu", "__global__ void k() {}\n")
		writeFile(t, dir, "patches/epilogue.patch", patch)
		var rows []string
		for _, s := range steps {
			rows = append(rows, `{"type": "repo_python", "path": "`+s+`"}`)
		}
		writeFile(t, dir, "rebuild.json", `{"steps": [`+strings.Join(rows, ", ")+`]}`)
		return dir
	}
	cat := defaultCatalog(t)
	load := func(dir string) (Resolution, error) {
		b, err := bundle.LoadBundle(dir)
		if err != nil {
			t.Fatal(err)
		}
		return Resolve(b, cat)
	}
	res, err := load(build("apply_dep_patch.py", "build_cuda_ext.py"))
	if err != nil {
		t.Fatalf("full evidence: %v", err)
	}
	if res.Target.TargetID != "collective.moe_epilogue.v1" {
		t.Fatalf("target = %+v", res.Target)
	}
	want := []string{"cuda_sources", "dep_patch:flashinfer", "entry", "rebuild:apply_dep_patch", "rebuild:build_cuda_ext"}
	if !reflect.DeepEqual(res.Features, want) {
		t.Fatalf("features = %q, want %q", res.Features, want)
	}
	_, err = load(build("build_cuda_ext.py"))
	var ce *catalog.ResolutionError
	if !errors.As(err, &ce) || ce.Rule != catalog.ResolveDepPatch {
		t.Fatalf("patch without applier: got %v, want a %s rejection", err, catalog.ResolveDepPatch)
	}
}

func TestInspectRejectsHostileTrees(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(t *testing.T, dir string)
		stage  string
	}{
		{"symlink", func(t *testing.T, dir string) {
			if err := os.Symlink("/etc/passwd", filepath.Join(dir, "kernels/passwd.py")); err != nil {
				t.Fatal(err)
			}
		}, StageLoad},
		{"oversized file", func(t *testing.T, dir string) {
			f, err := os.Create(filepath.Join(dir, "kernels/huge.py"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := f.Truncate(9 << 20); err != nil {
				t.Fatal(err)
			}
		}, StageLoad},
		{"shared object", func(t *testing.T, dir string) { writeFile(t, dir, "kernels/fast.so", "\x7fELF") }, StageTree},
		{"stray file", func(t *testing.T, dir string) { writeFile(t, dir, "weights.safetensors", "x") }, StageTree},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := repoPath(t, "kernels/contributions/silu_and_mul_torch")
			tc.mutate(t, dir)
			_, err := Inspect(dir, testOptions(t))
			var re *RejectedError
			if !errors.As(err, &re) || re.Stage != tc.stage {
				t.Fatalf("got %v, want a rejection at stage %s", err, tc.stage)
			}
		})
	}
}

// The selected payload follows bundle-local imports: an imported helper is
// selected, an unimported module is not.
func TestSelectedPayloadFollowsImports(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "manifest.toml", "bundle_id = \"b\"\nabi_version = \"cacheon-op-abi-v0\"\n[[ops]]\nslot = \"activation.silu_and_mul\"\nsource = \"kernels/silu.py\"\nentry = \"silu_and_mul\"\n")
	writeFile(t, dir, "kernels/silu.py", "from kernels.common import half\n\n\ndef silu_and_mul(x, out):\n    out.copy_(half(x))\n")
	writeFile(t, dir, "kernels/common.py", "def half(x):\n    return x[..., : x.shape[-1] // 2]\n")
	writeFile(t, dir, "kernels/__init__.py", "")
	writeFile(t, dir, "kernels/unused.py", "X = 1\n")
	in, err := Inspect(dir, testOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range in.SelectedPayload.Files {
		got = append(got, f.Role+":"+f.Path)
	}
	want := []string{"python:kernels/__init__.py", "python:kernels/common.py", "python:kernels/silu.py"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("selected files %q, want %q", got, want)
	}
	before := in.SelectedPayloadDigest
	writeFile(t, dir, "kernels/common.py", "def half(x):\n    return x[..., : x.shape[-1] // 2].clone()\n")
	in, err = Inspect(dir, testOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	if in.SelectedPayloadDigest == before {
		t.Fatal("editing an imported helper did not change the selected payload")
	}
}

// A bundle with CUDA sources: the declared header is selected with the
// translation unit, and a computed include refuses the bundle at the
// payload stage.
func TestSelectedPayloadCUDA(t *testing.T) {
	build := func(t *testing.T, unit string) string {
		dir := t.TempDir()
		writeFile(t, dir, "manifest.toml", "bundle_id = \"b\"\nabi_version = \"cacheon-op-abi-v0\"\n[[ops]]\nslot = \"activation.silu_and_mul\"\nsource = \"kernels/silu.py\"\nentry = \"silu_and_mul\"\ncuda_sources = [\"csrc/silu.cu\", \"csrc/common.cuh\"]\n")
		writeFile(t, dir, "kernels/silu.py", "def silu_and_mul(x, out):\n    pass\n")
		writeFile(t, dir, "csrc/silu.cu", unit)
		writeFile(t, dir, "csrc/common.cuh", "#pragma once\n")
		writeFile(t, dir, "rebuild.json", `{"steps": [{"type": "repo_python", "path": "build_cuda_ext.py"}]}`)
		return dir
	}
	opts := testOptions(t)
	opts.Payload.PatcherDigests = map[string]string{"build_cuda_ext.py": hex64('7').String()}
	good := "#include \"common.cuh\"\n#include <cuda_runtime.h>\n__global__ void k() {}\n"
	in, err := Inspect(build(t, good), opts)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range in.SelectedPayload.Files {
		got = append(got, f.Role+":"+f.Path)
	}
	if want := []string{"cuda:csrc/common.cuh", "cuda:csrc/silu.cu", "python:kernels/silu.py"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("selected files %q, want %q", got, want)
	}
	if in.Swappable || in.SwapReason != "native-rebuild" {
		t.Fatalf("swappable %v %q, want native-rebuild", in.Swappable, in.SwapReason)
	}
	steps := in.SelectedPayload.Rebuild.Steps
	if len(steps) != 1 || steps[0].PatcherID != "cacheon.build-cuda-ext.v1" || steps[0].Path != "cacheon/patchers/build_cuda_ext.py" || steps[0].PatcherSHA256 != hex64('7').String() {
		t.Fatalf("rebuild identity %+v", in.SelectedPayload.Rebuild)
	}

	_, err = Inspect(build(t, "#define HDR \"common.cuh\"\n#include HDR\n"), opts)
	var re *RejectedError
	if !errors.As(err, &re) || re.Stage != StagePayload || !strings.Contains(err.Error(), "csrc/silu.cu") {
		t.Fatalf("got %v, want a payload rejection of the computed include", err)
	}

	// Options that name no digest bind the step to the validator's own
	// build_cuda_ext patcher.
	in, err = Inspect(build(t, good), testOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	if got := in.SelectedPayload.Rebuild.Steps[0].PatcherSHA256; got != patchers.Digest(patchers.BuildCUDAExt) {
		t.Fatalf("the step binds %s, want the built-in patcher's digest", got)
	}
	// A registered patcher with no built-in implementation needs a
	// reviewed digest.
	cute := build(t, good)
	writeFile(t, cute, "rebuild.json", `{"steps": [{"type": "repo_python", "path": "build_cute_cubin.py"}]}`)
	b, err := bundle.LoadBundle(cute)
	if err != nil {
		t.Fatal(err)
	}
	_, err = ComputeSelectedPayload(b, testOptions(t).Payload)
	if err == nil || !strings.Contains(err.Error(), "no reviewed digest for patcher build_cute_cubin.py") {
		t.Fatalf("got %v, want a refusal without the patcher's digest", err)
	}
}
