package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

const scanManifest = `bundle_id = "scan-cli"
abi_version = "cacheon-op-abi-v0"

[[ops]]
slot = "activation.silu_and_mul"
source = "kernels/silu_and_mul.py"
entry = "silu_and_mul"
`

func scanBundle(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	files["manifest.toml"] = scanManifest
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

const cleanKernel = "import torch\n\ndef silu_and_mul(x, out):\n    d = x.shape[-1] // 2\n    out.copy_(torch.nn.functional.silu(x[..., :d]) * x[..., d:])\n"

func TestScanCommandExitCodes(t *testing.T) {
	clean := scanBundle(t, map[string]string{"kernels/silu_and_mul.py": cleanKernel, "README.md": "hi"})
	// Upstream acceptance: a banned import, a non-literal getattr, a .so and
	// a vendored os.system are all reported, and the scan fails.
	hostile := scanBundle(t, map[string]string{
		"kernels/silu_and_mul.py": "import subprocess\n\ndef silu_and_mul(x, out):\n    f = getattr(x, name)\n",
		"kernels/_ext.so":         "\x7fELF",
		"vendor/helper.py":        "import os\nos.system('id')\n",
	})
	broken := scanBundle(t, map[string]string{"kernels/silu_and_mul.py": "import triton\n\n@triton.jit\ndef k(n):\n    b = triton.next_power_of_2(n)\n\ndef silu_and_mul(x, out): pass\n"})
	noManifest := t.TempDir()

	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantOut  []string
		wantErr  string
	}{
		{"clean bundle", []string{"scan", clean}, 0,
			[]string{"bundle: scan-cli  abi: cacheon-op-abi-v0  ops: 1", "activation.silu_and_mul [default] kernels/silu_and_mul.py: clean"}, ""},
		{"hostile bundle lists all four classes", []string{"scan", hostile}, 2,
			[]string{"kernels/silu_and_mul.py: VIOLATIONS",
				"kernels/silu_and_mul.py:1:8: banned-import",
				"kernels/silu_and_mul.py:4:9: dynamic-attribute",
				"[VIOLATIONS] vendored/extra/undeclared files (recursive scan):",
				"kernels/_ext.so: binary-artifact",
				"vendor/helper.py:2:1: banned-attribute"}, ""},
		{"broken kernel is advisory but fails", []string{"scan", broken}, 2,
			[]string{"kernels/silu_and_mul.py: BROKEN KERNEL", "broken-kernel"}, ""},
		{"no manifest is exit 1", []string{"scan", noManifest}, 1, nil, "manifest.toml"},
		{"missing directory is exit 1", []string{"scan", filepath.Join(noManifest, "nope")}, 1, nil, "nope"},
		{"no argument is a usage error", []string{"scan"}, 1, nil, "accepts 1 arg"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := run(t, "", tc.args...)
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.wantCode, out, errOut)
			}
			for _, w := range tc.wantOut {
				if !strings.Contains(out, w) {
					t.Errorf("stdout does not contain %q:\n%s", w, out)
				}
			}
			if !strings.Contains(errOut, tc.wantErr) {
				t.Errorf("stderr %q does not mention %q", errOut, tc.wantErr)
			}
		})
	}
}

func TestScanCommandJSONFields(t *testing.T) {
	dir := scanBundle(t, map[string]string{"kernels/silu_and_mul.py": "import socket\n", "notes.txt": ""})
	code, out, errOut := run(t, "", "scan", dir, "--json")
	if code != 2 {
		t.Fatalf("exit %d, want 2 (stderr %q)", code, errOut)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	var keys []string
	for k := range doc {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	want := "abi_version advisories bundle_id clean format_version ops tree_findings violations"
	if got := strings.Join(keys, " "); got != want {
		t.Errorf("top-level keys %q, want %q", got, want)
	}
	ops := doc["ops"].([]any)
	op := ops[0].(map[string]any)
	if op["status"] != "VIOLATIONS" || op["source"] != "kernels/silu_and_mul.py" {
		t.Errorf("op = %v", op)
	}
	f := op["findings"].([]any)[0].(map[string]any)
	for _, k := range []string{"path", "line", "col", "rule", "message"} {
		if _, ok := f[k]; !ok {
			t.Errorf("finding lacks %q: %v", k, f)
		}
	}
	tree := doc["tree_findings"].([]any)
	if len(tree) != 1 || tree[0].(map[string]any)["rule"] != "unexpected-file" {
		t.Errorf("tree_findings = %v", tree)
	}
	if doc["violations"].(float64) != 2 || doc["clean"] != false {
		t.Errorf("violations = %v clean = %v", doc["violations"], doc["clean"])
	}
}

// rejectedBundleCases are bundles whose inputs are read and refused before
// anything is scanned or run: exit 2. A bundle with nothing to read is an
// I/O error: exit 1.
func rejectedBundleCases(t *testing.T, base func(t *testing.T, extra map[string]string) string) []struct {
	name     string
	dir      string
	wantCode int
	wantErr  string
} {
	noManifest := t.TempDir()
	return []struct {
		name     string
		dir      string
		wantCode int
		wantErr  string
	}{
		{"invalid metadata", base(t, map[string]string{"metadata/silu.json": `{"max_num_tokens": "many"}`}), 2, "metadata/silu.json"},
		{"invalid rebuild.json", base(t, map[string]string{"rebuild.json": "{not json"}), 2, "rebuild.json"},
		{"rebuild.json over its limit", base(t, map[string]string{"rebuild.json": `{"x": "` +
			strings.Repeat("a", 65<<10) + `"}`}), 2, "rebuild.json"},
		{"case collision", base(t, map[string]string{"README.md": "a", "readme.md": "b"}), 2, "readme.md"},
		{"nonexistent bundle directory", filepath.Join(noManifest, "nope"), 1, "nope"},
		{"no manifest", noManifest, 1, "manifest.toml"},
	}
}

func TestScanCommandRejectedBundleExitCodes(t *testing.T) {
	base := func(t *testing.T, extra map[string]string) string {
		files := map[string]string{"kernels/silu_and_mul.py": cleanKernel}
		for k, v := range extra {
			files[k] = v
		}
		dir := scanBundle(t, files)
		if _, ok := extra["metadata/silu.json"]; ok {
			m := scanManifest + "metadata = \"metadata/silu.json\"\n"
			if err := os.WriteFile(filepath.Join(dir, "manifest.toml"), []byte(m), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	for _, tc := range rejectedBundleCases(t, base) {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := run(t, "", "scan", tc.dir)
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.wantCode, out, errOut)
			}
			if !strings.Contains(out+errOut, tc.wantErr) {
				t.Errorf("output does not mention %q:\nstdout:\n%s\nstderr:\n%s", tc.wantErr, out, errOut)
			}
		})
	}
}
