package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

func jsonKeys(t *testing.T, out string) []string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("output is not one JSON document: %v\n%s", err, out)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func TestModelMakeTestProvisionCheck(t *testing.T) {
	dir := t.TempDir()
	m := filepath.Join(dir, "llama")

	code, out, errOut := run(t, "", "model", "make-test", "--seed", "5", "--out", m, "--json")
	if code != 0 {
		t.Fatalf("make-test: exit %d: %s", code, errOut)
	}
	if got, want := jsonKeys(t, out), []string{"dir", "files", "format_version", "generator", "model_type", "parameters", "seed", "shape", "tensors"}; !reflect.DeepEqual(got, want) {
		t.Errorf("make-test --json keys %v, want %v", got, want)
	}
	var made struct{ Files []struct{ SHA256 string } }
	json.Unmarshal([]byte(out), &made)

	// Same seed elsewhere: same bytes.
	code, out2, _ := run(t, "", "model", "make-test", "--seed", "5", "--out", filepath.Join(dir, "again"), "--json")
	var again struct{ Files []struct{ SHA256 string } }
	json.Unmarshal([]byte(out2), &again)
	if code != 0 || !reflect.DeepEqual(made, again) {
		t.Errorf("second make-test with seed 5: exit %d, files %v vs %v", code, again, made)
	}
	if code, _, errOut := run(t, "", "model", "make-test", "--seed", "5", "--out", m); code != 1 || !strings.Contains(errOut, "not an empty directory") {
		t.Errorf("make-test over a model: exit %d, stderr %q", code, errOut)
	}
	if code, _, errOut := run(t, "", "model", "make-test", "--seed", "5", "--out", filepath.Join(dir, "x"), "--experts", "8"); code != 1 || !strings.Contains(errOut, "--moe") {
		t.Errorf("--experts without --moe: exit %d, stderr %q", code, errOut)
	}

	code, out, errOut = run(t, "", "model", "provision", m, "--json")
	if code != 0 {
		t.Fatalf("provision: exit %d: %s", code, errOut)
	}
	if got, want := jsonKeys(t, out), []string{"content_digest", "file_count", "files", "format_version", "receipt", "receipt_digest", "root", "total_bytes"}; !reflect.DeepEqual(got, want) {
		t.Errorf("provision --json keys %v, want %v", got, want)
	}
	var prov struct {
		ContentDigest string `json:"content_digest"`
		ReceiptDigest string `json:"receipt_digest"`
		Receipt       string `json:"receipt"`
		FileCount     int    `json:"file_count"`
	}
	json.Unmarshal([]byte(out), &prov)
	if prov.Receipt != filepath.Join(dir, "model-provision-sha256-"+prov.ReceiptDigest+".json") || prov.FileCount != 2 {
		t.Errorf("provision result %+v", prov)
	}

	// The expected digest passes; another one is rejected with nothing written.
	if code, _, errOut := run(t, "", "model", "provision", m, "--expected-content-digest", prov.ContentDigest); code != 0 {
		t.Errorf("matching --expected-content-digest: exit %d: %s", code, errOut)
	}
	wrong := strings.Repeat("ab", 32)
	other := filepath.Join(dir, "other.json")
	code, _, errOut = run(t, "", "model", "provision", m, "--expected-content-digest", wrong, "--out", other)
	if code != 2 || !strings.Contains(errOut, "want "+wrong) {
		t.Errorf("wrong --expected-content-digest: exit %d, stderr %q", code, errOut)
	}
	if _, err := os.Stat(other); !os.IsNotExist(err) {
		t.Error("a receipt was written despite the failed precondition")
	}
	if code, _, errOut := run(t, "", "model", "provision", m, "--out", filepath.Join(m, "r.json")); code != 2 || !strings.Contains(errOut, "inside the model root") {
		t.Errorf("--out inside the root: exit %d, stderr %q", code, errOut)
	}

	code, out, errOut = run(t, "", "model", "check", m, "--receipt", prov.Receipt)
	if code != 0 || !strings.Contains(out, prov.ContentDigest) {
		t.Fatalf("check: exit %d, out %q, stderr %q", code, out, errOut)
	}

	weights := filepath.Join(m, "model.safetensors")
	os.Chmod(weights, 0o644)
	f, _ := os.OpenFile(weights, os.O_WRONLY, 0)
	f.WriteAt([]byte{0xff}, 100)
	f.Close()
	code, out, errOut = run(t, "", "model", "check", m, "--receipt", prov.Receipt)
	if code != 2 || !strings.Contains(out, "changed  model.safetensors") || !strings.Contains(errOut, "1 file(s) differ") {
		t.Errorf("check after a changed byte: exit %d, out %q, stderr %q", code, out, errOut)
	}
	code, out, _ = run(t, "", "model", "check", m, "--receipt", prov.Receipt, "--json")
	var res struct {
		Match       bool
		Differences []struct{ Path, Change string }
	}
	json.Unmarshal([]byte(out), &res)
	if code != 2 || res.Match || len(res.Differences) != 1 || res.Differences[0].Change != "changed" {
		t.Errorf("check --json after a changed byte: exit %d, %+v", code, res)
	}

	os.Symlink(weights, filepath.Join(m, "alias.safetensors"))
	code, _, errOut = run(t, "", "model", "check", m, "--receipt", prov.Receipt)
	if code != 2 || !strings.Contains(errOut, filepath.Join(m, "alias.safetensors")+": symbolic link") {
		t.Errorf("check with a symlink: exit %d, stderr %q", code, errOut)
	}
	code, _, errOut = run(t, "", "model", "provision", m)
	if code != 2 || !strings.Contains(errOut, "alias.safetensors") {
		t.Errorf("provision with a symlink: exit %d, stderr %q", code, errOut)
	}

	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"type":"x"}`), 0o644)
	if code, _, errOut := run(t, "", "model", "check", m, "--receipt", bad); code != 2 || !strings.Contains(errOut, "invalid model provision receipt") {
		t.Errorf("check with an invalid receipt: exit %d, stderr %q", code, errOut)
	}
	if code, _, _ := run(t, "", "model", "check", m, "--receipt", filepath.Join(dir, "missing.json")); code != 1 {
		t.Errorf("check with a missing receipt: exit %d, want 1", code)
	}
}
