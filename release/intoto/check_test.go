package intoto

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/cacheon/engine/internal/reject"
)

func TestLoadCheckRefusals(t *testing.T) {
	dir := t.TempDir()
	malformed := filepath.Join(dir, "layout.json")
	if err := os.WriteFile(malformed, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(dir, "owner.pub")
	tests := []struct {
		name       string
		path       string
		keys       []string
		links      string
		wantReject bool
		wantMiss   bool
	}{
		{"no owner keys", malformed, nil, dir, false, false},
		{"no links directory", malformed, []string{key}, "", false, false},
		{"malformed layout", malformed, []string{key}, dir, true, false},
		{"missing layout", filepath.Join(dir, "nope.json"), []string{key}, dir, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			check, err := LoadCheck(tc.path, tc.keys, tc.links)
			if err == nil || check != nil {
				t.Fatalf("LoadCheck = %v, want an error", err)
			}
			if reject.Is(err) != tc.wantReject || errors.Is(err, fs.ErrNotExist) != tc.wantMiss {
				t.Errorf("error %v: rejection %v (want %v), missing file %v (want %v)", err, reject.Is(err), tc.wantReject, errors.Is(err, fs.ErrNotExist), tc.wantMiss)
			}
		})
	}
}
