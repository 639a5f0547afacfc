package bundle

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

const header = "bundle_id = \"b\"\nabi_version = \"cacheon-op-abi-v0\"\n"

const siluOp = `
[[ops]]
slot = "activation.silu_and_mul"
source = "kernels/silu.py"
entry = "silu_and_mul"
`

// writeBundle creates a bundle directory from relative path → content.
func writeBundle(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for rel, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestParseAcceptsUpstreamExampleShape(t *testing.T) {
	m, err := Parse([]byte(`# comment
bundle_id = "example-silu-torch-cpu"
abi_version = "cacheon-op-abi-v0"

[[ops]]
slot = "activation.silu_and_mul"
source = "kernels/silu_and_mul.py"
entry = "silu_and_mul"
dtypes = ["float32", "bfloat16", "float16"]
metadata = "metadata/silu_and_mul.json"
`), FileName)
	if err != nil {
		t.Fatal(err)
	}
	if m.BundleID != "example-silu-torch-cpu" || m.Competition != nil || len(m.Ops) != 1 {
		t.Fatalf("unexpected manifest %+v", m)
	}
	op := m.Ops[0]
	if op.Variant != DefaultVariant || op.VariantExplicit || op.Entry != "silu_and_mul" ||
		!reflect.DeepEqual(op.Dtypes, []string{"float32", "bfloat16", "float16"}) {
		t.Fatalf("unexpected op %+v", op)
	}
	if got := m.DeclaredFeatures(); !reflect.DeepEqual(got, []string{"entry"}) {
		t.Fatalf("features = %q, want [entry]", got)
	}
	if ok, reason := m.Swappability(); !ok || reason != "" {
		t.Fatalf("swappability = %v %q, want true", ok, reason)
	}
}

func TestParseLegacyABIKeptAsSubmitted(t *testing.T) {
	m, err := Parse([]byte("bundle_id = \"b\"\nabi_version = \"optima-op-abi-v0\"\n"+siluOp), FileName)
	if err != nil {
		t.Fatal(err)
	}
	if m.ABIVersion != "optima-op-abi-v0" {
		t.Fatalf("abi = %q, want the submitted legacy spelling", m.ABIVersion)
	}
}

func TestParseRejections(t *testing.T) {
	tests := []struct {
		name    string
		text    string
		class   error
		wantMsg string // substring of Error()
	}{
		{"toml syntax", header + "[[ops]\n", ErrSyntax, "manifest.toml:"},
		{"missing bundle id", "abi_version = \"cacheon-op-abi-v0\"\n" + siluOp, ErrSchema, "manifest.toml: bundle_id: must be a non-empty string"},
		{"bundle id chars", "bundle_id = \"a b\"\nabi_version = \"cacheon-op-abi-v0\"\n" + siluOp, ErrSchema, "bundle_id: \"a b\" has characters"},
		{"unknown abi", "bundle_id = \"b\"\nabi_version = \"cacheon-op-abi-v1\"\n" + siluOp, ErrSchema, "abi_version: unsupported abi_version"},
		{"no ops", header, ErrSchema, "manifest.toml: ops: manifest must contain a non-empty"},
		{"op missing slot", header + "[[ops]]\nsource = \"a.py\"\nentry = \"f\"\n", ErrSchema, "ops[0].slot: missing"},
		{"op missing source", header + "[[ops]]\nslot = \"s\"\nentry = \"f\"\n", ErrSchema, "ops[0].source: missing"},
		{"source traversal", header + "[[ops]]\nslot = \"s\"\nsource = \"../x.py\"\nentry = \"f\"\n", ErrPath, "ops[0].source: path \"../x.py\" escapes the bundle root"},
		{"source absolute", header + "[[ops]]\nslot = \"s\"\nsource = \"/etc/passwd\"\nentry = \"f\"\n", ErrPath, "ops[0].source: path \"/etc/passwd\" must be relative"},
		{"entry not identifier", header + "[[ops]]\nslot = \"s\"\nsource = \"a.py\"\nentry = \"1f\"\n", ErrSchema, "ops[0].entry: \"1f\" must be a Python identifier"},
		{"prepare not identifier", header + siluOp + "prepare = \"a-b\"\n", ErrSchema, "ops[0].prepare:"},
		{"slot wrong type", header + "[[ops]]\nslot = 3\nsource = \"a.py\"\nentry = \"f\"\n", ErrSchema, "ops[0].slot: must be a string, got an integer"},
		{"dtypes not array", header + siluOp + "dtypes = \"float32\"\n", ErrSchema, "ops[0].dtypes: must be an array"},
		{"dtypes empty string", header + siluOp + "dtypes = [\"\"]\n", ErrSchema, "ops[0].dtypes[0]: must be a non-empty string"},
		{"override without base", header + siluOp + "override_point = \"epi\"\n", ErrSchema, "ops[0].override_point: requires base_kernel"},
		{"cuda source suffix", header + siluOp + "cuda_sources = [\"k.cpp\"]\n", ErrPath, "ops[0].cuda_sources[0]: \"k.cpp\" must be a .cu or .cuh file"},
		{"repeated slot without variants", header + siluOp + siluOp, ErrSchema, "ops[1].variant: slot \"activation.silu_and_mul\" repeats"},
		{"repeated slot one implicit", header + siluOp + "variant = \"a\"\n" + siluOp, ErrSchema, "ops[1].variant:"},
		{"duplicate variant", header + siluOp + "variant = \"a\"\n" + siluOp + "variant = \"a\"\n", ErrSchema, "ops[1].variant: duplicate variant \"a\""},
		{"bad variant", header + siluOp + "variant = \"a b\"\n", ErrSchema, "ops[0].variant:"},
		{"competition unknown key", header + siluOp + "[competition]\ntarget = \"t\"\nmode = \"slot\"\nmembers = [\"x\"]\n", ErrSchema, "competition: unknown keys [\"members\"]"},
		{"competition bad mode", header + siluOp + "[competition]\ntarget = \"t\"\nmode = \"team\"\n", ErrSchema, "competition.mode:"},
		{"competition missing target", header + siluOp + "[competition]\nmode = \"slot\"\n", ErrSchema, "competition.target: must be a string"},
		{"dep patch unknown key", header + siluOp + "[[dep_patches]]\ntarget = \"flashinfer\"\npath = \"p.patch\"\nsha = \"x\"\n", ErrSchema, "dep_patches[0]: unknown keys"},
		{"dep patch suffix", header + siluOp + "[[dep_patches]]\ntarget = \"flashinfer\"\npath = \"p.txt\"\n", ErrPath, "dep_patches[0].path: \"p.txt\" must be a .patch or .diff"},
		{"dep patch duplicate", header + siluOp + "[[dep_patches]]\ntarget = \"flashinfer\"\npath = \"p.patch\"\n[[dep_patches]]\ntarget = \"flashinfer\"\npath = \"p.patch\"\n", ErrSchema, "dep_patches[1]: duplicate dep patch"},
		{"aot with prepare", header + siluOp + "prepare = \"p\"\n" + aotExport, ErrSchema, "ops[0].aot_exports: AOT rows may not also declare prepare"},
		{"aot unknown provider", header + siluOp + strings.Replace(aotExport, "cutlass.cute.cubin.v1", "other.v1", 1), ErrSchema, "provider \"other.v1\" is not registered"},
		{"aot profile input", header + siluOp + strings.Replace(aotExport, "cluster_size_1\"", "cluster_size_3\"", 1), ErrSchema, "is not registered for provider"},
		{"aot missing device plan", header + siluOp + strings.Replace(aotExport, "device_plan = {}\n", "", 1), ErrSchema, "requires a device_plan"},
		{"aot step range", header + siluOp + strings.Replace(aotExport, "step = 0", "step = 256", 1), ErrSchema, "step: must be an integer in [0, 255]"},
		{"resources without aot", header + siluOp + "[[ops.artifact_resources]]\nname = \"ws\"\nbytes = 16\n", ErrSchema, "artifact resources require aot_exports"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.text), FileName)
			if err == nil {
				t.Fatal("Parse accepted the manifest")
			}
			if !errors.Is(err, tc.class) || !errors.Is(err, ErrInvalid) {
				t.Errorf("error class: got %v, want %v", err, tc.class)
			}
			if !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("error %q does not contain %q", err, tc.wantMsg)
			}
		})
	}
}

const aotExport = `
[[ops.aot_exports]]
provider = "cutlass.cute.cubin.v1"
name = "silu"
factory = "make_kernel"
profile_inputs = ["max_active_clusters.cluster_size_1"]
bindings = []
step = 0
device_plan = {}
`

func TestParseAOTExport(t *testing.T) {
	m, err := Parse([]byte(header+siluOp+aotExport), FileName)
	if err != nil {
		t.Fatal(err)
	}
	e := m.Ops[0].AOTExports
	if len(e) != 1 || e[0].Role != "run" || e[0].Plan != "default" || e[0].Factory != "make_kernel" {
		t.Fatalf("exports = %+v", e)
	}
	if got := m.DeclaredFeatures(); !reflect.DeepEqual(got, []string{"aot:cutlass.cute.cubin.v1", "entry"}) {
		t.Fatalf("features = %q", got)
	}
	if ok, reason := m.Swappability(); ok || reason != SwapReasonAOT {
		t.Fatalf("swappability = %v %q, want false aot", ok, reason)
	}
}

func TestParseAOTPlanRoleOrder(t *testing.T) {
	two := aotExport + strings.NewReplacer(`name = "silu"`, `name = "init"`, "step = 0", "step = 1\nrole = \"init\"").Replace(aotExport)
	_, err := Parse([]byte(header+siluOp+two), FileName)
	if err == nil || !strings.Contains(err.Error(), "orders role run before init") {
		t.Fatalf("got %v, want a role-order rejection", err)
	}
}

func TestDeclaredFeatures(t *testing.T) {
	tests := []struct {
		name   string
		text   string
		want   []string
		swap   bool
		reason string
	}{
		{"variants", header + siluOp + "variant = \"a\"\n" + siluOp + "variant = \"b\"\n", []string{"entry", "variants"}, true, ""},
		{"one non-default variant", header + siluOp + "variant = \"small\"\n", []string{"entry", "variants"}, true, ""},
		{"prepare", header + siluOp + "prepare = \"prep\"\n", []string{"entry", "prepare"}, true, ""},
		{"setup", header + siluOp + "setup = \"boot\"\n", []string{"entry", "setup"}, false, SwapReasonEngineSetup},
		{"override", header + siluOp + "base_kernel = \"k\"\noverride_point = \"p\"\n", []string{"entry", "override"}, true, ""},
		{"cuda", header + siluOp + "cuda_sources = [\"k.cu\"]\n", []string{"cuda_sources", "entry"}, false, SwapReasonNativeRebuild},
		{"extra key", header + siluOp + "speed = 2\n", []string{"entry", "op_extra:speed"}, true, ""},
		{"dep patch", header + siluOp + "cuda_sources = [\"k.cu\"]\n[[dep_patches]]\ntarget = \"flashinfer\"\npath = \"p.patch\"\n", []string{"cuda_sources", "dep_patch:flashinfer", "entry"}, false, SwapReasonDepPatched},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Parse([]byte(tc.text), FileName)
			if err != nil {
				t.Fatal(err)
			}
			if got := m.DeclaredFeatures(); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("features = %q, want %q", got, tc.want)
			}
			if ok, reason := m.Swappability(); ok != tc.swap || reason != tc.reason {
				t.Errorf("swappability = %v %q, want %v %q", ok, reason, tc.swap, tc.reason)
			}
		})
	}
}

func TestLoadExample(t *testing.T) {
	dir := writeBundle(t, map[string]string{
		"manifest.toml":      header + siluOp + "metadata = \"metadata/silu.json\"\ndtypes = [\"bf16\", \"float32\"]\n",
		"kernels/silu.py":    "def silu_and_mul(x, out):\n    pass\n",
		"metadata/silu.json": `{"op": "silu", "dtypes": ["float32", "bfloat16", "float16"], "max_last_dim": 65536, "notes": "ratio 1.5"}`,
		"README.md":          "hi\n",
		"__pycache__/x.pyc":  "junk",
	})
	b, err := LoadBundle(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Tree.Files) != 4 {
		t.Fatalf("tree = %+v, want 4 files (pycache skipped)", b.Tree.Files)
	}
	md := b.Manifest.Ops[0].MetadataDoc
	if md == nil {
		t.Fatal("metadata not attached")
	}
	got, err := md.CanonicalBytes()
	if err != nil {
		t.Fatal(err)
	}
	want := "{\n  \"dtypes\": [\n    \"bfloat16\",\n    \"float16\",\n    \"float32\"\n  ],\n  \"max_last_dim\": 65536\n}\n"
	if string(got) != want {
		t.Fatalf("canonical metadata:\n%s\nwant:\n%s", got, want)
	}
	if len(got) != 92 {
		t.Fatalf("canonical metadata is %d bytes, upstream emits 92", len(got))
	}
	e, err := OpEligibility(&b.Manifest.Ops[0])
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(e.Dtypes, []string{"bfloat16", "float32"}) {
		t.Fatalf("eligible dtypes = %q, want the manifest ∩ metadata intersection", e.Dtypes)
	}
}

func TestLoadRejections(t *testing.T) {
	base := map[string]string{
		"manifest.toml":   header + siluOp,
		"kernels/silu.py": "def silu_and_mul(x, out):\n    pass\n",
	}
	with := func(extra map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range base {
			out[k] = v
		}
		for k, v := range extra {
			out[k] = v
		}
		return out
	}
	tests := []struct {
		name    string
		files   map[string]string
		class   error
		wantMsg string
	}{
		{"no manifest", map[string]string{"kernels/silu.py": "x"}, ErrPath, "manifest.toml: not found"},
		{"missing source", map[string]string{"manifest.toml": header + siluOp}, ErrPath, "manifest.toml: ops[0].source: \"kernels/silu.py\" not found"},
		{"source is dir", map[string]string{"manifest.toml": header + siluOp, "kernels/silu.py/x": "x"}, ErrPath, "must be a regular file"},
		{"missing metadata", with(map[string]string{"manifest.toml": header + siluOp + "metadata = \"m/x.json\"\n"}), ErrPath, "ops[0].metadata: \"m/x.json\" not found"},
		{"metadata bad json", with(map[string]string{"manifest.toml": header + siluOp + "metadata = \"m/x.json\"\n", "m/x.json": "{"}), ErrSyntax, "m/x.json: invalid JSON"},
		{"metadata duplicate key", with(map[string]string{"manifest.toml": header + siluOp + "metadata = \"m/x.json\"\n", "m/x.json": `{"a":1,"a":2}`}), ErrSyntax, "repeats key"},
		{"metadata unknown capability", with(map[string]string{"manifest.toml": header + siluOp + "metadata = \"m/x.json\"\n", "m/x.json": `{"capabilities":{"colour":"red"}}`}), ErrMetadata, "m/x.json: capabilities: unsupported capability field \"colour\""},
		{"metadata float bound", with(map[string]string{"manifest.toml": header + siluOp + "metadata = \"m/x.json\"\n", "m/x.json": `{"max_last_dim": 1.5}`}), ErrMetadata, "max_last_dim: must be a non-negative integer"},
		{"metadata graph_safe type", with(map[string]string{"manifest.toml": header + siluOp + "metadata = \"m/x.json\"\n", "m/x.json": `{"graph_safe": "yes"}`}), ErrMetadata, "graph_safe: must be a boolean"},
		{"disjoint dtypes", with(map[string]string{"manifest.toml": header + siluOp + "dtypes = [\"float16\"]\nmetadata = \"m/x.json\"\n", "m/x.json": `{"dtypes":["bfloat16"]}`}), ErrMetadata, "ops[0].dtypes: manifest dtypes"},
		{"undeclared cuda missing", with(map[string]string{"manifest.toml": header + siluOp + "cuda_sources = [\"k.cu\"]\n"}), ErrPath, "ops[0].cuda_sources[0]: \"k.cu\" not found"},
		{"patch binary", with(map[string]string{"manifest.toml": header + siluOp + "[[dep_patches]]\ntarget = \"flashinfer\"\npath = \"p.patch\"\n", "p.patch": "Binary files a/x and b/x differ\n"}), ErrDepPatch, "p.patch: dep patch for flashinfer rejected"},
		{"patch not utf8", with(map[string]string{"manifest.toml": header + siluOp + "[[dep_patches]]\ntarget = \"flashinfer\"\npath = \"p.patch\"\n", "p.patch": "\xff\xfe"}), ErrDepPatch, "not UTF-8"},
		{"rebuild bundle_python", with(map[string]string{"rebuild.json": `{"steps":[{"type":"bundle_python","path":"x.py"}]}`}), ErrSchema, "rebuild.json: steps[0].type: \"bundle_python\" is not allowed"},
		{"rebuild unregistered", with(map[string]string{"rebuild.json": `{"steps":[{"type":"repo_python","path":"evil.py"}]}`}), ErrSchema, "unregistered rebuild patcher"},
		{"inspectable too big", with(map[string]string{"big.json": strings.Repeat("x", MaxInspectableFileBytes+1)}), ErrLimit, "big.json: inspectable file is"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeBundle(t, tc.files)
			_, err := LoadBundle(dir)
			if err == nil {
				t.Fatal("LoadBundle accepted the bundle")
			}
			if !errors.Is(err, tc.class) {
				t.Errorf("error class: got %v, want %v", err, tc.class)
			}
			if !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("error %q does not contain %q", err, tc.wantMsg)
			}
		})
	}
}

// hostileBundle builds a valid bundle, then lets mutate add what git
// cannot hold safely.
func hostileBundle(t *testing.T, mutate func(dir string)) string {
	t.Helper()
	dir := writeBundle(t, map[string]string{
		"manifest.toml":   header + siluOp,
		"kernels/silu.py": "def silu_and_mul(x, out):\n    pass\n",
	})
	mutate(dir)
	return dir
}

func TestLoadRejectsHostileTrees(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "secret.py")
	if err := os.WriteFile(outside, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	sparse := func(dir, rel string, size int64) {
		f, err := os.Create(filepath.Join(dir, rel))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := f.Truncate(size); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name    string
		mutate  func(dir string)
		wantMsg string
	}{
		{"symlink out", func(dir string) { must(t, os.Symlink(outside, filepath.Join(dir, "kernels/leak.py"))) }, "kernels/leak.py: symbolic link"},
		{"symlink in", func(dir string) { must(t, os.Symlink("silu.py", filepath.Join(dir, "kernels/alias.py"))) }, "kernels/alias.py: symbolic link"},
		{"symlinked dir", func(dir string) { must(t, os.Symlink(filepath.Dir(outside), filepath.Join(dir, "vendor"))) }, "vendor: symbolic link"},
		{"fifo", func(dir string) { must(t, syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o644)) }, "pipe: special file"},
		{"huge file", func(dir string) { sparse(dir, "weights.dat", MaxFileBytes+1) }, "weights.dat: file is 16777217 bytes"},
		{"total size", func(dir string) {
			for i := 0; i < 17; i++ {
				sparse(dir, "blob"+string(rune('a'+i)), MaxFileBytes)
			}
		}, "bundle exceeds 268435456 bytes"},
		{"inspectable total", func(dir string) {
			for i := 0; i < 5; i++ {
				sparse(dir, "d"+string(rune('a'+i))+".json", MaxInspectableFileBytes)
			}
		}, "inspectable files exceed 33554432 bytes"},
		{"too many files", func(dir string) {
			for i := 0; i < MaxFiles; i++ {
				must(t, os.WriteFile(filepath.Join(dir, "f"+strconv.Itoa(i)), nil, 0o644))
			}
		}, "more than 4096 files"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := hostileBundle(t, tc.mutate)
			_, err := Load(dir)
			if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), tc.wantMsg) {
				t.Fatalf("got %v, want an intake-limit error containing %q", err, tc.wantMsg)
			}
		})
	}
}

func TestDeclaredPathThroughSymlinkNeverFollowed(t *testing.T) {
	// A link inside the tree is rejected by the tree walk; openContained
	// must refuse one on its own too, for callers that check a path alone.
	dir := hostileBundle(t, func(dir string) {
		must(t, os.Symlink("kernels", filepath.Join(dir, "k")))
	})
	if _, err := openContained(dir, "k/silu.py"); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("got %v, want a symbolic-link refusal", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestClassify(t *testing.T) {
	m, err := Parse([]byte(header+siluOp+"cuda_sources = [\"csrc/k.cu\"]\n[[dep_patches]]\ntarget = \"flashinfer\"\npath = \"./patches/p.patch\"\n"), FileName)
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]FileClass{
		"kernels/silu.py":   ClassPython,
		"csrc/k.cu":         ClassCUDASource,
		"csrc/other.cuh":    ClassUndeclaredCUDA,
		"patches/p.patch":   ClassDepPatch,
		"patches/q.diff":    ClassUndeclaredPatch,
		"manifest.toml":     ClassBenign,
		"rebuild.json":      ClassBenign,
		"README.md":         ClassBenign,
		"LICENSE":           ClassBenign,
		"metadata/a.json":   ClassBenign,
		"a/metadata/b.json": ClassBenign,
		"config.json":       ClassOther,
		"kernels/ext.so":    ClassBinary,
		"kernels/x.o":       ClassBinary,
		"weights.bin":       ClassBinary,
		"notes.txt":         ClassOther,
	}
	for rel, want := range tests {
		if got := m.Classify(rel); got != want {
			t.Errorf("Classify(%q) = %v, want %v", rel, got, want)
		}
	}
}
