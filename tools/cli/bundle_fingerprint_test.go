package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestBundleFingerprint(t *testing.T) {
	dir := repoCopy(t, "kernels/contributions/silu_and_mul_triton")
	code, out, errOut := run(t, "", "bundle", "fingerprint", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"selected payload:  ", "normalized delta:  ", "python    kernels/silu_and_mul.py  normalized ", "substantial"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout does not contain %q:\n%s", want, out)
		}
	}
	code, out, errOut = run(t, "", "bundle", "fingerprint", "--json", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if got, want := sortedKeys(doc), []string{"bundle", "content_hash", "files", "format_version", "normalized_delta_digest", "selected_payload_digest"}; !reflect.DeepEqual(got, want) {
		t.Errorf("keys %v, want %v", got, want)
	}
	files := doc["files"].([]any)
	if len(files) != 1 {
		t.Fatalf("files %v", files)
	}
	if got, want := sortedKeys(files[0].(map[string]any)), []string{"fingerprints", "normalized_sha256", "path", "role", "substantial", "tokens"}; !reflect.DeepEqual(got, want) {
		t.Errorf("file keys %v, want %v", got, want)
	}

	code, _, errOut = run(t, "", "bundle", "fingerprint", repoCopy(t, "kernels/fixtures/binary_object"))
	if code != 2 || !strings.Contains(errOut, "rejected at tree") {
		t.Errorf("rejected bundle: exit %d, stderr %q", code, errOut)
	}
	code, out, _ = run(t, "", "bundle", "fingerprint", "--json", repoCopy(t, "kernels/fixtures/binary_object"))
	if code != 2 || !strings.Contains(out, `"ok": false`) || !strings.Contains(out, "rejected at tree") {
		t.Errorf("rejected bundle --json: exit %d, stdout %s", code, out)
	}
	code, _, _ = run(t, "", "bundle", "fingerprint", filepath.Join(dir, "nope"))
	if code != 1 {
		t.Errorf("missing bundle: exit %d, want 1", code)
	}
}

func TestBundleCompare(t *testing.T) {
	orig := repoCopy(t, "kernels/contributions/rmsnorm_triton")
	recommented := repoCopy(t, "kernels/contributions/rmsnorm_triton")
	src := filepath.Join(recommented, "kernels", "rmsnorm.py")
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(src, []byte("# my own RMSNorm\n"+strings.ReplaceAll(string(b), "    ", "  ")), 0o644); err != nil {
		t.Fatal(err)
	}
	other := repoCopy(t, "kernels/contributions/silu_and_mul_triton")
	tests := []struct {
		name     string
		args     []string
		wantCode int
		inOut    string
		inErr    string
	}{
		{"distinct", []string{orig, other}, 0, "verdict: not a copy", ""},
		{"same bundle", []string{orig, orig}, 2, "verdict: copy (payload)", "copies " + orig + ": payload: selected payload"},
		{"recommented and reindented", []string{orig, recommented}, 2, "verdict: copy (normalized_delta)", ": normalized_delta: normalized delta"},
		{"one argument", []string{orig}, 1, "", "accepts 2 arg"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := run(t, "", append([]string{"bundle", "compare"}, tc.args...)...)
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d\nstdout %s\nstderr %s", code, tc.wantCode, out, errOut)
			}
			if !strings.Contains(out, tc.inOut) || !strings.Contains(errOut, tc.inErr) {
				t.Errorf("stdout %q\nstderr %q\nwant %q and %q", out, errOut, tc.inOut, tc.inErr)
			}
		})
	}

	code, out, errOut := run(t, "", "bundle", "compare", "--json", orig, recommented)
	if code != 2 {
		t.Fatalf("exit %d, want 2: %s", code, errOut)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if got, want := sortedKeys(doc), []string{"containment", "copy", "earlier", "format_version", "later", "reason", "rule"}; !reflect.DeepEqual(got, want) {
		t.Errorf("keys %v, want %v", got, want)
	}
	if doc["copy"] != true || doc["rule"] != "normalized_delta" {
		t.Errorf("copy %v rule %v", doc["copy"], doc["rule"])
	}
	pairs := doc["containment"].([]any)
	if len(pairs) != 2 {
		t.Fatalf("containment %v", pairs)
	}
	if got, want := sortedKeys(pairs[0].(map[string]any)), []string{"contained", "partner", "path", "shared", "side", "total"}; !reflect.DeepEqual(got, want) {
		t.Errorf("pair keys %v, want %v", got, want)
	}
	code, out, _ = run(t, "", "bundle", "compare", "--json", orig, other)
	if code != 0 || !strings.Contains(out, `"rule": null`) {
		t.Errorf("distinct --json: exit %d\n%s", code, out)
	}
}
