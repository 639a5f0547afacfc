package atomicwrite

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestCreateFileNeverReplaces(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a")
	if err := CreateFile(path, []byte("first"), 0o444); err != nil {
		t.Fatal(err)
	}
	err := CreateFile(path, []byte("second"), 0o444)
	if !errors.Is(err, fs.ErrExist) {
		t.Fatalf("second create: %v, want fs.ErrExist", err)
	}
	got, _ := os.ReadFile(path)
	if string(got) != "first" {
		t.Fatalf("content %q after a refused create", got)
	}
	info, _ := os.Stat(path)
	if info.Mode().Perm() != 0o444 {
		t.Fatalf("mode %v", info.Mode())
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("%d entries left, want only the file", len(entries))
	}
}
