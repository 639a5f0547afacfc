package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHashAppliesTheIntakeLimits: `cacheon hash` reads a tree as intake
// does, so trees intake refuses are refused (exit 2) before any content
// is hashed.
func TestHashAppliesTheIntakeLimits(t *testing.T) {
	tests := []struct {
		name  string
		build func(t *testing.T, dir string)
		want  string
	}{
		{"empty directories", func(t *testing.T, dir string) {
			for i := 0; i <= 1024; i++ {
				if err := os.Mkdir(filepath.Join(dir, fmt.Sprintf("d%04d", i)), 0o755); err != nil {
					t.Fatal(err)
				}
			}
		}, "directories"},
		{"too many files", func(t *testing.T, dir string) {
			for i := 0; i <= 4096; i++ {
				if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%04d", i)), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}, "more than 4096 files"},
		{"file over the per-file limit", func(t *testing.T, dir string) {
			f, err := os.Create(filepath.Join(dir, "big.bin"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := f.Truncate(16<<20 + 1); err != nil {
				t.Fatal(err)
			}
		}, "16777217 bytes"},
		{"case collision", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "K.py"), []byte("a"), 0o644)
			os.WriteFile(filepath.Join(dir, "k.py"), []byte("b"), 0o644)
		}, "case folding"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "a.py"), []byte("x = 1\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			tc.build(t, dir)
			code, out, errOut := run(t, "", "hash", dir)
			if code != 2 || out != "" || !strings.Contains(errOut, tc.want) {
				t.Fatalf("exit %d, out %q, stderr %q; want exit 2 mentioning %q", code, out, errOut, tc.want)
			}
		})
	}
}
