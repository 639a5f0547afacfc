package materialize

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/cacheon/engine/kernels/bundle"
)

func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for rel, content := range files {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestStageCopiesIdentityCoveredFiles(t *testing.T) {
	src := t.TempDir()
	writeTree(t, src, map[string]string{
		"manifest.toml":             "x",
		"kernels/a.py":              "print(1)\n",
		"kernels/__pycache__/a.pyc": "junk",
		"._resource":                "apple",
		"b-c/d.txt":                 "d",
	})
	s, err := stage(src, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	want, err := bundle.ContentHash(src)
	if err != nil {
		t.Fatal(err)
	}
	got, err := bundle.ContentHash(s.dir)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("staged content hash %s, source %s", got, want)
	}
	if len(s.files) != 3 || s.files["kernels/a.py"] != sha256Hex([]byte("print(1)\n")) {
		t.Errorf("staged files = %v", s.files)
	}
	if _, err := os.Stat(filepath.Join(s.dir, "kernels/__pycache__")); !os.IsNotExist(err) {
		t.Errorf("ignored __pycache__ was staged: %v", err)
	}
}

func TestStageRejectsLinksAndSpecialFiles(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, root string)
		want  string
	}{
		{"symlink to file", func(t *testing.T, root string) {
			if err := os.Symlink("/etc/passwd", filepath.Join(root, "kernels", "link.py")); err != nil {
				t.Fatal(err)
			}
		}, "a symbolic link"},
		{"symlinked directory", func(t *testing.T, root string) {
			if err := os.Symlink(t.TempDir(), filepath.Join(root, "dirlink")); err != nil {
				t.Fatal(err)
			}
		}, "a symbolic link"},
		{"named pipe", func(t *testing.T, root string) {
			if err := syscall.Mkfifo(filepath.Join(root, "kernels", "pipe"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "a named pipe"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := t.TempDir()
			writeTree(t, src, map[string]string{"manifest.toml": "x", "kernels/a.py": "y"})
			tt.setup(t, src)
			_, err := stage(src, t.TempDir())
			if !errors.Is(err, ErrBadSourceEntry) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("stage = %v, want ErrBadSourceEntry naming %q", err, tt.want)
			}
		})
	}
	t.Run("root is a symlink", func(t *testing.T) {
		real := t.TempDir()
		writeTree(t, real, map[string]string{"manifest.toml": "x"})
		link := filepath.Join(t.TempDir(), "bundle")
		os.Symlink(real, link)
		if _, err := stage(link, t.TempDir()); !errors.Is(err, ErrBadSourceEntry) {
			t.Fatalf("stage = %v, want ErrBadSourceEntry", err)
		}
	})
}

func TestStageDetectsChangedSource(t *testing.T) {
	src := t.TempDir()
	writeTree(t, src, map[string]string{"a.py": "one"})
	snap, err := snapshot(src)
	if err != nil {
		t.Fatal(err)
	}
	// The file is rewritten after its snapshot was taken, as a concurrent
	// editor would: same size, new bytes and a new change time.
	if err := os.WriteFile(filepath.Join(src, "a.py"), []byte("two"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = stageFile(filepath.Join(src, "a.py"), filepath.Join(t.TempDir(), "a.py"), snap[0].sig, make([]byte, 64))
	if !errors.Is(err, ErrUnstableSource) {
		t.Fatalf("stageFile = %v, want ErrUnstableSource", err)
	}
	after, _ := snapshot(src)
	if err := sameSnapshot(snap, after); err == nil {
		t.Errorf("sameSnapshot did not notice the rewrite")
	}
	writeTree(t, src, map[string]string{"b.py": "new"})
	after, _ = snapshot(src)
	if err := sameSnapshot(snap, after); err == nil || !strings.Contains(err.Error(), "had 1 files and now has 2") {
		t.Errorf("sameSnapshot = %v, want a file-count change", err)
	}
}

func TestEmittedNames(t *testing.T) {
	ns := Namespace(strings.Repeat("a", 64))
	// The hash is of the bundle-relative path, so the upstream golden
	// names of the silu example follow from its paths alone.
	if got, want := emittedName(ns, "kernels/silu_and_mul.py"), ns+"__silu_and_mul_3be0113e92"; got != want {
		t.Errorf("entry shim name %s, want %s", got, want)
	}
	if got, want := emittedName(ns, "metadata/silu_and_mul.json"), ns+"__silu_and_mul_2d3092f5b6"; got != want {
		t.Errorf("metadata name %s, want %s", got, want)
	}
	for in, want := range map[string]string{"a/b-c.d.cu": "b_c_d", "x/.hidden": "_hidden", "ü.cu": "_"} {
		if got := slug(in); got != want {
			t.Errorf("slug(%q) = %q, want %q", in, got, want)
		}
	}
}
