package bundle

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestIsRejection(t *testing.T) {
	noManifest := t.TempDir()
	if err := os.WriteFile(filepath.Join(noManifest, "README.md"), []byte("hi"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, missingManifest := Load(noManifest)
	_, missingDir := Load(filepath.Join(noManifest, "nope"))
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"metadata", newError(ErrMetadata, "metadata/a.json", "", "bad"), true},
		{"limit, wrapped", fmt.Errorf("scan: %w", newError(ErrLimit, RebuildPlanName, "", "big")), true},
		{"tree rule", ErrTreeRule, true},
		{"no manifest at the root", missingManifest, false},
		{"missing directory", missingDir, false},
		{"I/O", fmt.Errorf("read: %w", fs.ErrPermission), false},
		{"nil", nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.err == nil && tc.name != "nil" {
				t.Fatal("expected an error")
			}
			if got := IsRejection(tc.err); got != tc.want {
				t.Fatalf("IsRejection(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
	// The missing manifest stays an intake rejection for callers that
	// classify by ErrInvalid or ErrPath.
	if !errors.Is(missingManifest, ErrPath) || !errors.Is(missingManifest, ErrNoManifest) {
		t.Fatalf("missing manifest %v: want ErrPath and ErrNoManifest", missingManifest)
	}
}
