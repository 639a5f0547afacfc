package atomicwrite

import (
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The files of a tree are synced after all of them are written; a path
// whose file was replaced or turned into a symbolic link in between is
// refused, never synced as if it were the file written.
func TestSyncWrittenRefusesAReplacedFile(t *testing.T) {
	for _, swap := range []struct {
		name string
		do   func(t *testing.T, full string)
	}{
		{"renamed over", func(t *testing.T, full string) {
			other := full + ".other"
			if err := os.WriteFile(other, []byte("other bytes"), 0o444); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(other, full); err != nil {
				t.Fatal(err)
			}
		}},
		{"removed and recreated", func(t *testing.T, full string) {
			if err := os.Remove(full); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(full, []byte("written bytes"), 0o444); err != nil {
				t.Fatal(err)
			}
		}},
		{"symbolic link", func(t *testing.T, full string) {
			kept := full + ".kept"
			if err := os.Rename(full, kept); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Base(kept), full); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(swap.name, func(t *testing.T) {
			root := t.TempDir()
			w, id, err := writeOne(root, File{Path: "f.txt", Data: []byte("written bytes")}, sha256.New(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if w.Size != 13 || !id.known {
				t.Fatalf("writeOne = %+v, identity %+v", w, id)
			}
			full := filepath.Join(root, "f.txt")
			if err := syncWritten(full, id); err != nil {
				t.Fatalf("sync of the file written: %v", err)
			}
			swap.do(t, full)
			err = syncWritten(full, id)
			if err == nil {
				t.Fatal("a replaced file was synced")
			}
			if swap.name != "symbolic link" && !strings.Contains(err.Error(), "not the file written there") {
				t.Errorf("error = %v", err)
			}
		})
	}
}
