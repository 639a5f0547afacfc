package cli

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/cacheon/engine/tools/cli/enginecli"
)

func verifyPython(t *testing.T) string {
	t.Helper()
	py := os.Getenv("CACHEON_TEST_PYTHON")
	if py == "" {
		py = "/usr/bin/python3"
	}
	if out, err := exec.Command(py, "-c", "import torch, numpy").CombinedOutput(); err != nil {
		t.Skipf("verify command tests need torch and numpy in %s (apt-get install python3-torch python3-numpy, or set CACHEON_TEST_PYTHON): %s",
			py, strings.TrimSpace(string(out)))
	}
	return py
}

func siluBundle(t *testing.T, body string) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"manifest.toml": "bundle_id = \"cli-silu\"\nabi_version = \"cacheon-op-abi-v0\"\n\n[[ops]]\n" +
			"slot = \"activation.silu_and_mul\"\nsource = \"kernels/silu.py\"\nentry = \"silu_and_mul\"\nmetadata = \"metadata/silu.json\"\n",
		"metadata/silu.json": `{"max_num_tokens": 16}`,
		"kernels/silu.py":    "import torch.nn.functional as F\n\n\ndef silu_and_mul(x, out):\n    d = x.shape[-1] // 2\n" + body,
	}
	for rel, data := range files {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestVerifyCommand(t *testing.T) {
	t.Parallel()
	py := verifyPython(t)
	good := siluBundle(t, "    out.copy_(F.silu(x[:, :d]) * x[:, d:])\n")
	bad := siluBundle(t, "    out.copy_(x[:, :d] * x[:, d:])\n")
	notorch, _ := brokenInterpreters(t)
	tests := []struct {
		name      string
		args      []string
		wantCode  int
		wantOut   string
		wantInErr string
	}{
		{"passing bundle", []string{"verify", good, "--python", py, "--dtype", "float32"}, 0, "verdict: PASS", ""},
		{"failing bundle", []string{"verify", bad, "--python", py}, 2, "verdict: FAIL", ""},
		{"bad dtype is usage", []string{"verify", good, "--python", py, "--dtype", "int8"}, 1, "", "dtype \"int8\""},
		{"missing interpreter", []string{"verify", good, "--python", "/nonexistent/python3"}, 1, "", "/nonexistent/python3: not found"},
		{"interpreter without torch", []string{"verify", good, "--python", notorch}, 1, "", notorch + ": it cannot import torch"},
		{"no bundle", []string{"verify", filepath.Join(t.TempDir(), "nope"), "--python", py}, 1, "", "no such file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := run(t, "", tc.args...)
			if code != tc.wantCode || !strings.Contains(out, tc.wantOut) || !strings.Contains(errOut, tc.wantInErr) {
				t.Fatalf("exit %d (want %d)\nstdout:\n%s\nstderr:\n%s", code, tc.wantCode, out, errOut)
			}
		})
	}
}

func TestVerifyCommandJSONFields(t *testing.T) {
	t.Parallel()
	py := verifyPython(t)
	code, out, errOut := run(t, "", "verify", siluBundle(t, "    out.copy_(F.silu(x[:, :d]) * x[:, d:])\n"), "--python", py, "--json", "--quiet")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep map[string]any
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("stdout is not one JSON document: %v\n%s", err, out)
	}
	var keys []string
	for k := range rep {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	want := "abi_version bundle bundle_id content_hash device dtype isolation notes reason rows scan schema seed verdict worker world_size"
	if got := strings.Join(keys, " "); got != want {
		t.Fatalf("report keys %q, want %q", got, want)
	}
	if rep["schema"] != "cacheon.verify-report.v1" || rep["verdict"] != "PASS" {
		t.Fatalf("schema %v verdict %v", rep["schema"], rep["verdict"])
	}
	row := rep["rows"].([]any)[0].(map[string]any)
	for _, k := range []string{"slot", "variant", "verdict", "reason", "cases", "workers", "graph", "correctness", "tolerance"} {
		if _, ok := row[k]; !ok {
			t.Errorf("row lacks %q", k)
		}
	}
	if errOut != "" {
		t.Errorf("--quiet still wrote to stderr: %q", errOut)
	}
}

func TestVerifyHelpTeaches(t *testing.T) {
	code, out, _ := run(t, "", "verify", "--help")
	for _, want := range []string{"Exit codes", "--python", "--timeout", "graph", "Examples:"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("help (exit %d) lacks %q:\n%s", code, want, out)
		}
	}
}

// TestVerifyCatalogFlag checks that --catalog decides the slot contracts:
// a kernel computed in bfloat16 fails float32 verification under the
// default tolerance and passes once a catalog copy loosens it.
func TestVerifyCatalogFlag(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile(filepath.Join("..", "..", "catalog", "targets.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	const strict = `float32  = { atol = "0.00001", rtol = "0.00001" }`
	if !strings.Contains(string(src), strict) {
		t.Fatalf("targets.hcl no longer holds %q; update this test", strict)
	}
	dir := t.TempDir()
	loose := filepath.Join(dir, "loose.hcl")
	os.WriteFile(loose, []byte(strings.Replace(string(src), strict, `float32  = { atol = "0.02", rtol = "0.02" }`, 1)), 0o644)
	broken := filepath.Join(dir, "broken.hcl")
	os.WriteFile(broken, append(append([]byte{}, src...), "bogus {\n"...), 0o644)

	if code, _, errOut := run(t, "", "verify", t.TempDir(), "--catalog", broken); code != 2 || !strings.Contains(errOut, "broken.hcl:") || !strings.Contains(errOut, "does not validate") {
		t.Fatalf("invalid catalog: exit %d, stderr %q", code, errOut)
	}
	if code, _, errOut := run(t, "", "verify", t.TempDir(), "--catalog", filepath.Join(dir, "missing.hcl")); code != 1 || !strings.Contains(errOut, "missing.hcl") {
		t.Fatalf("missing catalog: exit %d, stderr %q", code, errOut)
	}

	py := verifyPython(t)
	sloppy := siluBundle(t, "    out.copy_((F.silu(x[:, :d].bfloat16()) * x[:, d:].bfloat16()).float())\n")
	if code, out, _ := run(t, "", "verify", sloppy, "--python", py, "--dtype", "float32", "--quiet"); code != 2 || !strings.Contains(out, "verdict: FAIL") {
		t.Fatalf("default catalog: exit %d, want 2 with FAIL:\n%s", code, out)
	}
	if code, out, _ := run(t, "", "verify", sloppy, "--python", py, "--dtype", "float32", "--quiet", "--catalog", loose); code != 0 || !strings.Contains(out, "verdict: PASS") {
		t.Fatalf("loosened catalog: exit %d, want 0 with PASS:\n%s", code, out)
	}
}

// TestVerifyCommandRejectedBundleExitCodes: verify refuses a bundle intake
// would refuse before any worker runs, and that refusal is exit 2.
func TestVerifyCommandRejectedBundleExitCodes(t *testing.T) {
	t.Parallel()
	py := verifyPython(t)
	base := func(t *testing.T, extra map[string]string) string {
		dir := siluBundle(t, "    out.copy_(F.silu(x[:, :d]) * x[:, d:])\n")
		for rel, data := range extra {
			p := filepath.Join(dir, rel)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	for _, tc := range rejectedBundleCases(t, base) {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := run(t, "", "verify", tc.dir, "--python", py, "--quiet")
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.wantCode, out, errOut)
			}
			if !strings.Contains(errOut, tc.wantErr) {
				t.Errorf("stderr does not mention %q:\n%s", tc.wantErr, errOut)
			}
		})
	}
}

// TestVerifyCommandRefusesHostileFixturesBeforeAnyWorker: the scan
// bypasses (a banned builtin bound to another name in
// every form, (lambda exec=exec: exec)()(src) among them) and the kernel
// that imports the validator's harness and replaces its check of what the
// call changed are refused by verify before any process starts: exit 2
// (a verdict, docs/reference/cli-contract.md) naming the rule. The
// interpreter given records each start in a marker file, which must never
// appear.
func TestVerifyCommandRefusesHostileFixturesBeforeAnyWorker(t *testing.T) {
	t.Parallel()
	tests := []struct {
		fixture string
		want    string // in the report
	}{
		{"lambda_exec_called", "banned-builtin-binding: a parameter rebinds the name of builtin exec"},
		{"lambda_default_exec", "banned-builtin-binding"},
		{"def_default_eval", "banned-builtin-binding"},
		{"eval_rebound", "banned-builtin-binding"},
		{"global_exec", "banned-builtin-binding"},
		{"for_target_eval", "banned-builtin-binding"},
		{"global_getattr_system", "banned-builtin-binding"},
		{"silu_patches_harness", `harness-import: import of "cacheon_worker.candidate"`},
	}
	for _, tc := range tests {
		t.Run(tc.fixture, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			marker := filepath.Join(dir, "started")
			python := filepath.Join(dir, "python3")
			if err := os.WriteFile(python, []byte("#!/bin/sh\necho \"$@\" >> "+marker+"\nexit 1\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			bundle := filepath.Join("..", "..", "kernels", "fixtures", tc.fixture)
			code, out, errOut := run(t, "", "verify", "--quiet", "--python", python, bundle)
			if code != enginecli.ExitRejected {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, enginecli.ExitRejected, out, errOut)
			}
			if !strings.Contains(out, "verdict: FAIL") || !strings.Contains(out, tc.want) {
				t.Errorf("report does not FAIL on %q:\n%s", tc.want, out)
			}
			if started, err := os.ReadFile(marker); err == nil {
				t.Errorf("a process started before the refusal: %q", started)
			}
		})
	}
}
