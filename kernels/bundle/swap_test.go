package bundle

import (
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// countingWriter counts what reaches the hash.
type countingWriter struct{ n int64 }

func (w *countingWriter) Write(p []byte) (int, error) { w.n += int64(len(p)); return len(p), nil }

// TestHashFileRefusesAFIFOSwappedInAfterTheWalk replaces a walked file by
// a FIFO, as a hostile tree can between the walk and the read. Opening a
// FIFO for reading blocks until a writer appears, so the hash must refuse
// it from the opened descriptor's status without waiting. The timer only
// stops a blocked open from hanging the test run; it is not a speed bound.
func TestHashFileRefusesAFIFOSwappedInAfterTheWalk(t *testing.T) {
	d := t.TempDir()
	writeTree(t, d, map[string]string{"a.py": "x = 1\n"})
	w, err := walkTree(d, hashedPolicy)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(d, "a.py")
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- hashFile(sha256.New(), d, w.t.Files[0], make([]byte, 4096)) }()
	select {
	case err := <-done:
		if err == nil || !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "a.py") {
			t.Fatalf("err = %v, want a non-regular-file refusal naming a.py", err)
		}
	case <-time.After(10 * time.Second):
		// Unblock the stuck open: a non-blocking writer open succeeds
		// now that a reader waits.
		if w, err := os.OpenFile(p, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
		t.Fatal("hashing blocked opening a FIFO")
	}
}

// TestHashFileReadsNoMoreThanTheWalkedSize grows a walked file before it
// is hashed: the hash must refuse it and read at most one byte past the
// size the walk recorded.
func TestHashFileReadsNoMoreThanTheWalkedSize(t *testing.T) {
	d := t.TempDir()
	writeTree(t, d, map[string]string{"a.py": "x=1"})
	walked, err := walkTree(d, hashedPolicy)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, "a.py"), make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	cw := &countingWriter{}
	err = hashFile(cw, d, walked.t.Files[0], make([]byte, 4096))
	if err == nil || !strings.Contains(err.Error(), "size changed") {
		t.Fatalf("err = %v, want a size-changed refusal", err)
	}
	if limit := int64(4+len("a.py")+8) + walked.t.Files[0].Size + 1; cw.n > limit {
		t.Fatalf("hashed %d bytes of a file walked at %d bytes (at most %d may be read)", cw.n, walked.t.Files[0].Size, limit)
	}
}

func TestHashFilesHashesExactlyTheInventory(t *testing.T) {
	d := t.TempDir()
	writeTree(t, d, sampleBundle)
	want := hashOf(t, d)
	files, err := Files(d)
	if err != nil {
		t.Fatal(err)
	}
	writeTree(t, d, map[string]string{"added-after-the-walk.py": "late\n"})
	got, err := HashFiles(d, files, false)
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != want {
		t.Fatalf("HashFiles = %s, want the hash of the inventory %s", got, want)
	}
	rev := append([]File{}, files...)
	rev[0], rev[1] = rev[1], rev[0]
	if _, err := HashFiles(d, rev, false); err == nil {
		t.Fatal("an inventory out of hash order was hashed")
	}
}
