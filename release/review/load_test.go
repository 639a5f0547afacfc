package review

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cacheon/engine/internal/reject"
)

func TestLoadEvidence(t *testing.T) {
	dir := t.TempDir()
	doc := filepath.Join(dir, "primary.json")
	if err := os.WriteFile(doc, []byte(`{"a":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	role := string(RolePrimaryAttempt)
	tests := []struct {
		name       string
		specs      []string
		wantReject bool
		wantMiss   bool
		wantInErr  string
	}{
		{"one document", []string{role + "=" + doc}, false, false, ""},
		{"not ROLE=FILE", []string{doc}, true, false, "want ROLE=FILE"},
		{"unknown role", []string{"nonsense=" + doc}, true, false, `evidence "nonsense=`},
		{"role twice", []string{role + "=" + doc, role + "=" + doc}, true, false, "given twice"},
		{"missing file", []string{role + "=" + filepath.Join(dir, "nope.json")}, false, true, "nope.json"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ev, err := LoadEvidence(tc.specs)
			if tc.wantInErr == "" {
				if err != nil || string(ev[RolePrimaryAttempt]) != `{"a":1}` {
					t.Fatalf("LoadEvidence = %v, %v", ev, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantInErr) {
				t.Fatalf("LoadEvidence error %v, want it to mention %q", err, tc.wantInErr)
			}
			if reject.Is(err) != tc.wantReject || errors.Is(err, fs.ErrNotExist) != tc.wantMiss {
				t.Errorf("error %v: rejection %v (want %v), missing file %v (want %v)", err, reject.Is(err), tc.wantReject, errors.Is(err, fs.ErrNotExist), tc.wantMiss)
			}
		})
	}
}

func TestLoadCrown(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "crown.json")
	if err := os.WriteFile(bad, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadCrown(bad); !reject.Is(err) {
		t.Errorf("LoadCrown(malformed) = %v, want a rejection", err)
	}
	if _, err := LoadCrown(filepath.Join(dir, "nope.json")); !errors.Is(err, fs.ErrNotExist) || reject.Is(err) {
		t.Errorf("LoadCrown(missing) = %v, want a missing file, not a rejection", err)
	}
}
