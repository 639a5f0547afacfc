package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/cacheon/engine/kernels/bundle"
	"github.com/cacheon/engine/kernels/patchers"
)

func repoDir(rel string) string { return filepath.Join("..", "..", filepath.FromSlash(rel)) }

func TestBundleInspect(t *testing.T) {
	silu := repoCopy(t, "kernels/contributions/silu_and_mul_torch")
	hash, err := bundle.ContentHash(silu)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		args     []string
		wantCode int
		inOut    []string
		inErr    string
	}{
		{"example", []string{"bundle", "inspect", silu}, 0, []string{
			"bundle: silu-and-mul-torch  abi: cacheon-op-abi-v0  ops: 1",
			"target:                  activation.silu_and_mul (slot)",
			"content hash:            " + hash.String(),
			"features:                entry",
			"selects python    kernels/silu_and_mul.py",
			"swappable:               yes",
		}, ""},
		{"atomic example", []string{"bundle", "inspect", repoCopy(t, "kernels/contributions/moe_epilogue_atomic_torch")}, 0,
			[]string{"target:                  collective.moe_epilogue.v1 (atomic)"}, ""},
		{"unregistered is not a rejection", []string{"bundle", "inspect", repoCopy(t, "kernels/fixtures/system_mode")}, 0,
			[]string{"target:                  unregistered: competition mode \"system\"", "selected delta:          none (unregistered)"}, ""},
		{"intake rejects unregistered", []string{"bundle", "inspect", "--intake", repoCopy(t, "kernels/fixtures/unregistered_slot")}, 2,
			[]string{"unregistered"}, "intake accepts registered targets only"},
		{"manifest rejection", []string{"bundle", "inspect", repoCopy(t, "kernels/fixtures/path_traversal_source")}, 2, nil,
			"rejected at load:\n  manifest.toml: ops[0].source: path \"../kernels/silu_and_mul.py\" escapes the bundle root"},
		{"resolution rejection", []string{"bundle", "inspect", repoCopy(t, "kernels/fixtures/setup_op")}, 2, nil, "discovery lane"},
		{"tree rejection", []string{"bundle", "inspect", repoCopy(t, "kernels/fixtures/binary_object")}, 2, nil, "kernels/_ext.so"},
		{"missing directory", []string{"bundle", "inspect", repoDir("kernels/contributions/nope")}, 1, nil, "no such file"},
		{"file, not directory", []string{"bundle", "inspect", filepath.Join(silu, "manifest.toml")}, 1, nil, "not a directory"},
		{"no argument", []string{"bundle", "inspect"}, 1, nil, "accepts 1 arg"},
		// A catalog that was read and does not validate is a rejected
		// input, as it is for every stack command.
		{"bad catalog file", []string{"bundle", "inspect", "--catalog", filepath.Join(silu, "manifest.toml"), silu}, 2, nil, "catalog"},
		{"missing catalog file", []string{"bundle", "inspect", "--catalog", filepath.Join(silu, "nope.hcl"), silu}, 1, nil, "nope.hcl"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := run(t, "", tc.args...)
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d\nstdout %s\nstderr %s", code, tc.wantCode, out, errOut)
			}
			for _, want := range tc.inOut {
				if !strings.Contains(out, want) {
					t.Errorf("stdout does not contain %q:\n%s", want, out)
				}
			}
			if !strings.Contains(errOut, tc.inErr) {
				t.Errorf("stderr %q does not contain %q", errOut, tc.inErr)
			}
		})
	}
}

func TestBundleInspectJSON(t *testing.T) {
	code, out, errOut := run(t, "", "bundle", "inspect", "--json", repoCopy(t, "kernels/contributions/rmsnorm_triton"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range doc {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	want := []string{"abi_version", "bundle", "bundle_id", "committed_content_hash", "content_hash", "declared_features",
		"features", "format_version", "observed_features", "ops", "rejected", "selected_delta_digest",
		"selected_files", "selected_payload_digest", "swap_reason", "swappable", "target"}
	if !reflect.DeepEqual(keys, want) {
		t.Fatalf("JSON keys %q, want %q", keys, want)
	}
	target := doc["target"].(map[string]any)
	if target["target_id"] != "norm.rmsnorm" || target["registered"] != true || doc["rejected"] != nil {
		t.Fatalf("target %v rejected %v", target, doc["rejected"])
	}
	if doc["observed_features"] == nil || doc["selected_delta_digest"] == nil {
		t.Fatal("arrays must be empty rather than null, and a registered bundle has a delta")
	}

	code, out, _ = run(t, "", "bundle", "inspect", "--json", repoCopy(t, "kernels/fixtures/competition_mode_mismatch"))
	if code != 2 {
		t.Fatalf("exit %d, want 2", code)
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	rej := doc["rejected"].(map[string]any)
	if rej["stage"] != "resolve" || !strings.Contains(rej["errors"].([]any)[0].(string), "kind-mismatch") {
		t.Fatalf("rejected = %v", rej)
	}
	if doc["bundle_id"] != "fixture-competition-mode-mismatch" {
		t.Fatalf("a rejected bundle still reports what was read: %v", doc["bundle_id"])
	}
}

// A bundle whose rebuild.json names build_cuda_ext.py resolves with the
// validator's own prebuild patcher and no flag; a reviewed patcher file
// named with --patchers takes its place and so changes the payload.
func TestBundleInspectBindsThePatcher(t *testing.T) {
	cuda := repoCopy(t, "kernels/contributions/rmsnorm_cuda")
	payload := func(args ...string) string {
		t.Helper()
		code, out, errOut := run(t, "", append([]string{"bundle", "inspect", "--json"}, append(args, cuda)...)...)
		if code != 0 {
			t.Fatalf("exit %d: %s%s", code, out, errOut)
		}
		var doc struct {
			Payload   string `json:"selected_payload_digest"`
			Swappable bool   `json:"swappable"`
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatal(err)
		}
		if doc.Payload == "" || doc.Swappable {
			t.Fatalf("a CUDA-source bundle resolves to a payload and is not hot-swappable: %s", out)
		}
		return doc.Payload
	}
	builtIn := payload()
	same := t.TempDir()
	if err := os.WriteFile(filepath.Join(same, patchers.BuildCUDAExtName), []byte(patchers.BuildCUDAExt), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := payload("--patchers", same); got != builtIn {
		t.Fatalf("the built-in patcher's own bytes give payload %s, want %s", got, builtIn)
	}
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, patchers.BuildCUDAExtName), []byte("# another reviewed patcher\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := payload("--patchers", other); got == builtIn {
		t.Fatal("another patcher file must change the selected payload")
	}
}

func TestBundleHelpTeaches(t *testing.T) {
	code, out, _ := run(t, "", "bundle", "inspect", "--help")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"selected payload", "Exit codes", "Examples:", "cacheon bundle inspect kernels/contributions/silu_and_mul_torch", "--intake", "4,096 files"} {
		if !strings.Contains(out, want) {
			t.Errorf("help does not mention %q", want)
		}
	}
}

// The miner guide's worked example is the command's real output.
func TestBundleFormatDocExample(t *testing.T) {
	doc, err := os.ReadFile(repoDir("docs/miner-guide/bundle-format.md"))
	if err != nil {
		t.Fatal(err)
	}
	const prompt = "$ cacheon bundle inspect kernels/contributions/silu_and_mul_torch\n"
	i := strings.Index(string(doc), prompt)
	if i < 0 {
		t.Fatal("the guide has no worked inspect example")
	}
	block := string(doc)[i+len(prompt):]
	block = block[:strings.Index(block, "```")]
	code, out, errOut := run(t, "", "bundle", "inspect", repoCopy(t, "kernels/contributions/silu_and_mul_torch"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if out != block {
		t.Fatalf("docs/miner-guide/bundle-format.md shows\n%s\nbut the command prints\n%s", block, out)
	}
}
