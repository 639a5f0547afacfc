package atomicwrite

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
)

func sum(b string) string {
	s := sha256.Sum256([]byte(b))
	return hex.EncodeToString(s[:])
}

func listDir(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func TestWriteTreePublishesDeterministicTree(t *testing.T) {
	old := syscall.Umask(0o077) // a restrictive umask must not leak into modes
	defer syscall.Umask(old)
	parent := t.TempDir()
	src := filepath.Join(parent, "src.bin")
	if err := os.WriteFile(src, []byte("copied bytes"), 0o600); err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(parent, "tree")
	var hooked []string
	var counts []int
	written, err := WriteTree(dest, []File{
		{Path: "b/c/d.txt", Data: []byte("deep")},
		{Path: "a.txt", Data: []byte{}},
		{Path: "b/copy.bin", From: src, SHA256: sum("copied bytes")},
	}, AfterFile(func(n int, p string) { hooked, counts = append(hooked, p), append(counts, n) }))
	if err != nil {
		t.Fatal(err)
	}
	want := []Written{
		{Path: "a.txt", SHA256: sum(""), Size: 0},
		{Path: "b/c/d.txt", SHA256: sum("deep"), Size: 4},
		{Path: "b/copy.bin", SHA256: sum("copied bytes"), Size: 12},
	}
	if len(written) != len(want) {
		t.Fatalf("written = %v, want %v", written, want)
	}
	for i := range want {
		if written[i] != want[i] {
			t.Errorf("written[%d] = %v, want %v", i, written[i], want[i])
		}
	}
	sort.Strings(hooked)
	if got := strings.Join(hooked, ","); got != "a.txt,b/c/d.txt,b/copy.bin" || fmt.Sprint(counts) != "[1 2 3]" {
		t.Errorf("AfterFile saw %s with counts %v, want every file once counted 1..3", got, counts)
	}
	for _, p := range []string{"", "b", "b/c"} {
		info, err := os.Lstat(filepath.Join(dest, p))
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode() != fs.ModeDir|0o755 {
			t.Errorf("%q: mode %v, want drwxr-xr-x", p, info.Mode())
		}
		if info.ModTime().Unix() != 0 {
			t.Errorf("%q: mtime %v, want epoch", p, info.ModTime())
		}
		if at, ok := accessTime(info); ok && at.Unix() != 0 {
			t.Errorf("%q: atime %v, want epoch", p, at)
		}
	}
	for _, w := range want {
		info, err := os.Lstat(filepath.Join(dest, w.Path))
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode() != 0o444 || info.ModTime().Unix() != 0 {
			t.Errorf("%s: mode %v mtime %v, want -r--r--r-- at epoch", w.Path, info.Mode(), info.ModTime())
		}
		if at, ok := accessTime(info); ok && at.Unix() != 0 {
			t.Errorf("%s: atime %v, want epoch", w.Path, at)
		}
	}
	if names := listDir(t, parent); strings.Join(names, ",") != "src.bin,tree" {
		t.Errorf("parent holds %v, want only src.bin and tree (no temporary left)", names)
	}
	if err := VerifyTree(dest, want); err != nil {
		t.Errorf("VerifyTree of a fresh tree: %v", err)
	}
}

func TestWriteTreeRejectsAndLeavesNothing(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(t *testing.T, dest string) // prepare the destination
		files   []File
		wantErr string
		keep    bool // dest existed before and must still exist
	}{
		{name: "empty path", files: []File{{Path: "", Data: []byte("x")}}, wantErr: "empty path"},
		{name: "absolute path", files: []File{{Path: "/etc/x", Data: []byte("x")}}, wantErr: "relative and clean"},
		{name: "unclean path", files: []File{{Path: "a//b", Data: []byte("x")}}, wantErr: "relative and clean"},
		{name: "dot dot", files: []File{{Path: "../x", Data: []byte("x")}}, wantErr: "escapes"},
		{name: "duplicate", files: []File{{Path: "a", Data: []byte("x")}, {Path: "a", Data: []byte("y")}}, wantErr: "listed twice"},
		{name: "file and directory", files: []File{{Path: "a", Data: []byte("x")}, {Path: "a/b", Data: []byte("y")}}, wantErr: "also needed as a directory"},
		{name: "no contents", files: []File{{Path: "a"}}, wantErr: "exactly one of Data and From"},
		{name: "missing source", files: []File{{Path: "a", Data: []byte("x")}, {Path: "b", From: "/nonexistent/source"}}, wantErr: "no such file"},
		{name: "digest mismatch", files: []File{{Path: "a", Data: []byte("x"), SHA256: sum("y")}}, wantErr: "want " + sum("y")},
		{
			name:    "destination is an empty directory",
			setup:   func(t *testing.T, dest string) { os.Mkdir(dest, 0o755) },
			files:   []File{{Path: "a", Data: []byte("x")}},
			wantErr: "destination exists",
			keep:    true,
		},
		{
			name:    "destination is a file",
			setup:   func(t *testing.T, dest string) { os.WriteFile(dest, nil, 0o644) },
			files:   []File{{Path: "a", Data: []byte("x")}},
			wantErr: "destination exists",
			keep:    true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parent := t.TempDir()
			dest := filepath.Join(parent, "tree")
			if tt.setup != nil {
				tt.setup(t, dest)
			}
			_, err := WriteTree(dest, tt.files)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
			}
			names := listDir(t, parent)
			if tt.keep {
				if len(names) != 1 || names[0] != "tree" {
					t.Errorf("parent holds %v, want only the pre-existing tree", names)
				}
				if entries, _ := os.ReadDir(dest); len(entries) != 0 {
					t.Errorf("pre-existing destination was written into: %v", entries)
				}
			} else if len(names) != 0 {
				t.Errorf("parent holds %v after a failed write, want nothing", names)
			}
		})
	}
}

func TestVerifyTreeDetectsTampering(t *testing.T) {
	tests := []struct {
		name    string
		tamper  func(root string) error
		wantErr string
	}{
		{"modified content", func(root string) error {
			p := filepath.Join(root, "d/f.txt")
			os.Chmod(p, 0o644)
			if err := os.WriteFile(p, []byte("evil"), 0o644); err != nil {
				return err
			}
			if err := os.Chmod(p, 0o444); err != nil {
				return err
			}
			return chtimes(p)
		}, "has sha256"},
		{"extra file", func(root string) error {
			p := filepath.Join(root, "extra")
			os.Chmod(root, 0o755)
			if err := os.WriteFile(p, nil, 0o444); err != nil {
				return err
			}
			os.Chmod(p, 0o444)
			chtimes(p)
			return chtimes(root)
		}, "unexpected file extra"},
		{"missing file", func(root string) error {
			if err := os.Remove(filepath.Join(root, "top.txt")); err != nil {
				return err
			}
			return chtimes(root)
		}, "top.txt is missing"},
		{"symlink", func(root string) error {
			if err := os.Symlink("top.txt", filepath.Join(root, "link")); err != nil {
				return err
			}
			return chtimes(root)
		}, "symbolic link"},
		{"writable file", func(root string) error { return os.Chmod(filepath.Join(root, "top.txt"), 0o644) }, "file mode"},
		{"group-writable directory", func(root string) error { return os.Chmod(filepath.Join(root, "d"), 0o775) }, "directory mode"},
		{"empty directory", func(root string) error {
			if err := os.Mkdir(filepath.Join(root, "empty"), 0o755); err != nil {
				return err
			}
			os.Chmod(filepath.Join(root, "empty"), 0o755)
			chtimes(filepath.Join(root, "empty"))
			return chtimes(root)
		}, "holds no file"},
		{"touched mtime", func(root string) error {
			return os.Chtimes(filepath.Join(root, "top.txt"), epoch, epoch.Add(1e9))
		}, "modification time"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "tree")
			want, err := WriteTree(root, []File{{Path: "top.txt", Data: []byte("top")}, {Path: "d/f.txt", Data: []byte("f")}})
			if err != nil {
				t.Fatal(err)
			}
			if err := tt.tamper(root); err != nil {
				t.Fatal(err)
			}
			err = VerifyTree(root, want)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("VerifyTree = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestWriteFile(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	dir := t.TempDir()
	p := filepath.Join(dir, "out.json")
	for _, content := range []string{"first", "second"} {
		if err := WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(p)
		if err != nil || string(got) != content {
			t.Fatalf("read back %q, %v; want %q", got, err, content)
		}
		info, _ := os.Stat(p)
		if info.Mode() != 0o644 {
			t.Errorf("mode %v, want -rw-r--r--", info.Mode())
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "adir"), 0o755); err != nil {
		t.Fatal(err)
	}
	err := WriteFile(filepath.Join(dir, "adir"), []byte("x"), 0o644)
	if err == nil || !strings.Contains(err.Error(), "a directory exists") {
		t.Fatalf("WriteFile over a directory = %v", err)
	}
	if names := listDir(t, dir); strings.Join(names, ",") != "adir,out.json" {
		t.Errorf("dir holds %v, want no temporary files", names)
	}
	if err := WriteFile(filepath.Join(dir, "missing", "x"), nil, 0o644); err == nil || errors.Is(err, nil) {
		t.Errorf("WriteFile into a missing directory succeeded")
	}
}

// Whatever changes the temporary tree between its verification and the
// rename is caught by the status check of the published tree, which reads
// no contents, and nothing is left at the destination.
func TestWriteTreeRefusesATreeChangedBeforePublish(t *testing.T) {
	rewrite := func(data string) func(root string) error {
		return func(root string) error {
			p := filepath.Join(root, "d/f.txt")
			os.Chmod(p, 0o644)
			if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
				return err
			}
			if err := os.Chmod(p, 0o444); err != nil {
				return err
			}
			return chtimes(p)
		}
	}
	tests := []struct {
		name   string
		tamper func(root string) error
	}{
		{"same-size rewrite, times pinned back", rewrite("g")},
		{"same bytes rewritten in place", rewrite("f")},
		{"longer content", rewrite("evil")},
		{"replaced by a copy with the same bytes", func(root string) error {
			p := filepath.Join(root, "d/f.txt")
			tmp := filepath.Join(root, "d/.swap")
			if err := os.WriteFile(tmp, []byte("f"), 0o444); err != nil {
				return err
			}
			os.Chmod(tmp, 0o444)
			chtimes(tmp)
			if err := os.Rename(tmp, p); err != nil {
				return err
			}
			return chtimes(filepath.Join(root, "d"))
		}},
		{"extra file", func(root string) error {
			p := filepath.Join(root, "extra")
			if err := os.WriteFile(p, nil, 0o444); err != nil {
				return err
			}
			os.Chmod(p, 0o444)
			chtimes(p)
			return chtimes(root)
		}},
		{"missing file", func(root string) error {
			if err := os.Remove(filepath.Join(root, "top.txt")); err != nil {
				return err
			}
			return chtimes(root)
		}},
		{"writable file", func(root string) error { return os.Chmod(filepath.Join(root, "top.txt"), 0o644) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dest := filepath.Join(t.TempDir(), "tree")
			var tamperErr error
			_, err := WriteTree(dest, []File{{Path: "top.txt", Data: []byte("top")}, {Path: "d/f.txt", Data: []byte("f")}},
				BeforePublish(func(tmp string) { tamperErr = tt.tamper(tmp) }))
			if tamperErr != nil {
				t.Fatal(tamperErr)
			}
			if err == nil || !strings.Contains(err.Error(), "reopen published tree") {
				t.Fatalf("WriteTree = %v, want the published tree refused", err)
			}
			if _, serr := os.Lstat(dest); !os.IsNotExist(serr) {
				t.Fatalf("destination exists after the refusal: %v", serr)
			}
		})
	}
}
