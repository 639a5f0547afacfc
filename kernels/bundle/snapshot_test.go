package bundle

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	"github.com/cacheon/engine/internal/identity"
)

// snapshotTree is a bundle with nested packages, a pathlib-order trap
// ("a/b" against "a-c"), the carrier receipt, and files every identity
// skips.
var snapshotTree = map[string]string{
	"manifest.toml":              "bundle_id = \"snap\"\nabi_version = \"cacheon-op-abi-v0\"\n\n[[ops]]\nslot = \"norm.rmsnorm\"\nsource = \"kernels/op.py\"\nentry = \"run\"\n",
	"kernels/__init__.py":        "",
	"kernels/op.py":              "from kernels.sub import x\n\n\ndef run(*a):\n    return x\n",
	"kernels/sub/__init__.py":    "x = 1\n",
	"a/b":                        "ab",
	"a-c":                        "ac",
	CarrierReceiptName:           "{}",
	"deep/" + CarrierReceiptName: "{}",
	"kernels/__pycache__/op.pyc": "junk",
	"._op.py":                    "apple",
}

func TestSnapshotIdentitiesEqualTheDirectoryFunctions(t *testing.T) {
	d := t.TempDir()
	writeTree(t, d, snapshotTree)
	s, err := Open(d)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		committed bool
		old       func(string) (identity.Digest, error)
	}{
		{"content hash", false, ContentHash},
		{"committed content hash", true, CommittedContentHash},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, err := tc.old(d)
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.ContentHash(tc.committed)
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("snapshot hash %s, directory hash %s", got, want)
			}
		})
	}
	tree, err := ReadTree(d)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(s.Tree(), tree) {
		t.Errorf("snapshot tree %+v, ReadTree %+v", s.Tree(), tree)
	}
	for _, f := range tree.Files {
		data, err := os.ReadFile(filepath.Join(d, filepath.FromSlash(f.Path)))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		if got, _ := s.SHA256(f.Path); got != hex.EncodeToString(sum[:]) {
			t.Errorf("SHA256(%s) = %s, want %x", f.Path, got, sum)
		}
		if got, _ := s.ReadFile(f.Path); string(got) != string(data) {
			t.Errorf("ReadFile(%s) = %q, want %q", f.Path, got, data)
		}
	}
	if s.Has("kernels/__pycache__/op.pyc") || s.Has("._op.py") {
		t.Error("snapshot holds a file every identity skips")
	}
	want, err := LoadBundle(d)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Bundle()
	if err != nil {
		t.Fatal(err)
	}
	if got.Snapshot != s {
		t.Error("the bundle does not carry its snapshot")
	}
	got.Snapshot = nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("snapshot bundle %+v, LoadBundle %+v", got, want)
	}
}

func TestSnapshotFSIsAValidFileSystemOfTheHeldFiles(t *testing.T) {
	d := t.TempDir()
	writeTree(t, d, snapshotTree)
	s, err := Open(d)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range s.Files() {
		names = append(names, f.Path)
	}
	if err := fstest.TestFS(s.FS(), names...); err != nil {
		t.Fatal(err)
	}
}

func TestSnapshotWriteToCopiesTheSnapshotBytes(t *testing.T) {
	d := t.TempDir()
	writeTree(t, d, snapshotTree)
	s, err := Open(d)
	if err != nil {
		t.Fatal(err)
	}
	// The source changes after Open: the copy is still the snapshot.
	writeTree(t, d, map[string]string{"kernels/op.py": "changed\n", "new.py": "added\n"})
	out := filepath.Join(t.TempDir(), "copy")
	if err := s.WriteTo(out, ReadOnly); err != nil {
		t.Fatal(err)
	}
	want, err := s.ContentHash(false)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ContentHash(out)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("written copy hashes to %s, snapshot %s", got, want)
	}
	if _, err := os.Stat(filepath.Join(out, "new.py")); !os.IsNotExist(err) {
		t.Errorf("a file added after Open was written: %v", err)
	}
}

// TestStableReadRefusesAFileChangedAfterTheWalk changes a walked file in
// each way a hostile or racing writer can between the walk and the read.
// Opening a FIFO blocks until a writer appears, so it must be refused
// from the opened descriptor without waiting; the timer only keeps a
// blocked open from hanging the run.
func TestStableReadRefusesAFileChangedAfterTheWalk(t *testing.T) {
	tests := []struct {
		name   string
		change func(t *testing.T, p string)
		want   error // nil: any error
	}{
		{"rewritten, same size", func(t *testing.T, p string) {
			time.Sleep(10 * time.Millisecond) // let the times move
			if err := os.WriteFile(p, []byte("y = 2\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, ErrUnstable},
		{"grown", func(t *testing.T, p string) {
			if err := os.WriteFile(p, []byte("x = 1\nx = 2\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, ErrUnstable},
		{"replaced by rename", func(t *testing.T, p string) {
			tmp := p + ".new"
			if err := os.WriteFile(tmp, []byte("x = 1\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, p); err != nil {
				t.Fatal(err)
			}
		}, ErrUnstable},
		{"replaced by a FIFO", func(t *testing.T, p string) {
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Mkfifo(p, 0o644); err != nil {
				t.Skipf("mkfifo: %v", err)
			}
		}, ErrUnstable},
		{"replaced by a symbolic link", func(t *testing.T, p string) {
			target := filepath.Join(filepath.Dir(p), "target")
			if err := os.WriteFile(target, []byte("x = 1\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
		}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := t.TempDir()
			writeTree(t, d, map[string]string{"a.py": "x = 1\n"})
			w, err := walkTree(d, intakePolicy)
			if err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(d, "a.py")
			tc.change(t, p)
			done := make(chan error, 1)
			go func() {
				_, err := stableRead(p, w.seen["a.py"])
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil {
					t.Fatal("a file changed after the walk was read")
				}
				if tc.want != nil && !errors.Is(err, tc.want) {
					t.Errorf("error %v, want %v", err, tc.want)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the read blocked")
			}
		})
	}
}

func TestOpenRefusesLinksAndSpecialFiles(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, root string)
		want  string
	}{
		{"symbolic link to a file outside", func(t *testing.T, root string) {
			if err := os.Symlink("/etc/passwd", filepath.Join(root, "kernels", "link.py")); err != nil {
				t.Fatal(err)
			}
		}, "symbolic link"},
		{"symbolic link to a FIFO", func(t *testing.T, root string) {
			fifo := filepath.Join(t.TempDir(), "fifo")
			if err := syscall.Mkfifo(fifo, 0o644); err != nil {
				t.Skipf("mkfifo: %v", err)
			}
			if err := os.Symlink(fifo, filepath.Join(root, "kernels", "link.py")); err != nil {
				t.Fatal(err)
			}
		}, "symbolic link"},
		{"symbolic link to a directory", func(t *testing.T, root string) {
			if err := os.Symlink(t.TempDir(), filepath.Join(root, "dirlink")); err != nil {
				t.Fatal(err)
			}
		}, "symbolic link"},
		{"named pipe", func(t *testing.T, root string) {
			if err := syscall.Mkfifo(filepath.Join(root, "kernels", "pipe"), 0o644); err != nil {
				t.Skipf("mkfifo: %v", err)
			}
		}, "special file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := t.TempDir()
			writeTree(t, d, snapshotTree)
			tc.setup(t, d)
			done := make(chan error, 1)
			go func() {
				_, err := Open(d)
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("Open = %v, want an error naming a %s", err, tc.want)
				}
				if !errors.Is(err, ErrLimit) {
					t.Errorf("Open = %v, want an intake-limit rejection", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Open blocked on a link or special file")
			}
		})
	}
}

func TestSnapshotContentHashesEqualTheDirectoryFunctions(t *testing.T) {
	withoutReceipt := map[string]string{}
	for p, b := range snapshotTree {
		if p != CarrierReceiptName {
			withoutReceipt[p] = b
		}
	}
	for _, tc := range []struct {
		name  string
		files map[string]string
	}{
		{"with the carrier receipt", snapshotTree},
		{"without the carrier receipt", withoutReceipt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := t.TempDir()
			writeTree(t, d, tc.files)
			s, err := Open(d)
			if err != nil {
				t.Fatal(err)
			}
			content, committed, err := s.ContentHashes()
			if err != nil {
				t.Fatal(err)
			}
			wantContent, _ := ContentHash(d)
			wantCommitted, _ := CommittedContentHash(d)
			if content != wantContent || committed != wantCommitted {
				t.Errorf("ContentHashes = %s, %s; want %s, %s", content, committed, wantContent, wantCommitted)
			}
		})
	}
}

// OpenHashed reads exactly the files ContentHash covers: links and special
// files are left out, not refused, and its hashes are the directory's.
func TestOpenHashedIsTheContentHashSet(t *testing.T) {
	d := t.TempDir()
	writeTree(t, d, map[string]string{"k.py": "x = 1\n", "pkg/m.py": "y\n", "pkg/m.pyc": "junk", "__pycache__/k.pyc": "junk", ".cacheon-native-artifact.json": "{}"})
	if err := os.Symlink("k.py", filepath.Join(d, "link.py")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(d, "pipe"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	if _, err := Open(d); err == nil {
		t.Fatal("Open accepted a tree with a link (intake refuses links)")
	}
	s, err := OpenHashed(d)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, f := range s.Files() {
		paths = append(paths, f.Path)
	}
	if want := []string{".cacheon-native-artifact.json", "k.py", "pkg/m.py"}; !reflect.DeepEqual(paths, want) {
		t.Fatalf("files = %q, want %q", paths, want)
	}
	content, committed, err := s.ContentHashes()
	if err != nil {
		t.Fatal(err)
	}
	wantContent, _ := ContentHash(d)
	wantCommitted, _ := CommittedContentHash(d)
	if content != wantContent || committed != wantCommitted {
		t.Fatalf("hashes %s, %s; the directory's %s, %s", content, committed, wantContent, wantCommitted)
	}
	out := filepath.Join(t.TempDir(), "staged")
	if err := s.WriteTo(out, ReadOnly); err != nil {
		t.Fatal(err)
	}
	if got, _ := ContentHash(out); got != wantContent {
		t.Fatalf("the written copy hashes to %s, want %s", got, wantContent)
	}
}

// WriteTo leaves the modes asked for on every file and directory it
// wrote, the destination included, and refuses modes that are not plain
// permission bits.
func TestSnapshotWriteToSetsModes(t *testing.T) {
	d := t.TempDir()
	writeTree(t, d, snapshotTree)
	s, err := Open(d)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		modes Modes
	}{
		{"read-only", ReadOnly},
		{"source tree", SourceTree},
		{"private", Modes{File: 0o600, Dir: 0o700}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "copy")
			if err := s.WriteTo(out, tc.modes); err != nil {
				t.Fatal(err)
			}
			// Make the tree removable by t.TempDir's cleanup again.
			t.Cleanup(func() {
				_ = filepath.WalkDir(out, func(p string, _ fs.DirEntry, _ error) error { return os.Chmod(p, 0o700) })
			})
			files, dirs := 0, 0
			err := filepath.WalkDir(out, func(p string, e fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				info, err := e.Info()
				if err != nil {
					return err
				}
				want := tc.modes.File
				if e.IsDir() {
					want, dirs = tc.modes.Dir, dirs+1
				} else {
					files++
				}
				if got := info.Mode().Perm(); got != want {
					t.Errorf("%s has mode %v, want %v", p, got, want)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if files != len(s.Files()) || dirs < 2 {
				t.Fatalf("walked %d files and %d directories, the snapshot has %d files", files, dirs, len(s.Files()))
			}
		})
	}
	for _, bad := range []Modes{{}, {File: 0o444}, {Dir: 0o555}, {File: 0o444 | fs.ModeSetuid, Dir: 0o555}, {File: 0o444, Dir: 0o555 | fs.ModeDir}} {
		out := filepath.Join(t.TempDir(), "copy")
		if err := s.WriteTo(out, bad); err == nil {
			t.Errorf("WriteTo with modes %+v succeeded", bad)
		}
		if _, err := os.Lstat(out); !os.IsNotExist(err) {
			t.Errorf("WriteTo with modes %+v left %s behind: %v", bad, out, err)
		}
	}
}

// The snapshot's buffers for large files are carved out of larger
// allocations on Linux (see readBuffer): every size around the huge-page
// boundary must read back exactly, with nothing of one file in another.
func TestSnapshotReadsFilesAroundTheHugePageSizeExactly(t *testing.T) {
	const huge = 2 << 20
	sizes := []int{0, 1, 4095, huge - 1, huge, huge + 1, 3*huge + 4097}
	d := t.TempDir()
	want := map[string][]byte{}
	for i, n := range sizes {
		data := make([]byte, n)
		for j := range data {
			data[j] = byte(j*31 + i*7 + j>>12)
		}
		name := fmt.Sprintf("f%d.bin", i)
		want[name] = data
		if err := os.WriteFile(filepath.Join(d, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, err := OpenHashed(d)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range want {
		got, ok := s.ReadFile(name)
		if !ok || !bytes.Equal(got, data) {
			t.Fatalf("%s: read %d bytes, want the %d written", name, len(got), len(data))
		}
		if cap(got) != len(data)+1 {
			t.Errorf("%s: capacity %d, want %d", name, cap(got), len(data)+1)
		}
		sum := sha256.Sum256(data)
		if h, _ := s.SHA256(name); h != hex.EncodeToString(sum[:]) {
			t.Errorf("%s: sha256 %s, want %x", name, h, sum)
		}
	}
}

func TestReadBufferIsZeroedAndPrivate(t *testing.T) {
	const huge = 2 << 20
	for _, n := range []int64{0, 1, huge - 1, huge, 5*huge + 123} {
		a, b := readBuffer(n), readBuffer(n)
		if int64(len(a)) != n || int64(cap(a)) != n+1 {
			t.Fatalf("readBuffer(%d): len %d cap %d", n, len(a), cap(a))
		}
		for i, c := range a[:cap(a)] {
			if c != 0 {
				t.Fatalf("readBuffer(%d): byte %d is %d, want 0", n, i, c)
			}
		}
		full := a[:cap(a)]
		for i := range full {
			full[i] = 0xff
		}
		for i, c := range b[:cap(b)] {
			if c != 0 {
				t.Fatalf("readBuffer(%d): writing one buffer changed byte %d of another", n, i)
			}
		}
	}
}
