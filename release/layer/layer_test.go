package layer

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func writeTree(t *testing.T, root string, files map[string]string, mode os.FileMode) {
	t.Helper()
	for rel, body := range files {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
	}
}

var sample = map[string]string{
	"b/z.py":       "print('z')\n",
	"a-b":          "dash sorts before slash\n",
	"a/b/c.txt":    "deep\n",
	"a/x.json":     "{}\n",
	"run.sh":       "#!/bin/sh\n",
	"empty.marker": "",
}

func TestWriteIsIndependentOfHostState(t *testing.T) {
	for _, comp := range []Compression{Gzip, Zstd} {
		t.Run(string(comp), func(t *testing.T) {
			opts := Options{Epoch: 1700000000, Compression: comp}
			build := func(mode os.FileMode, mtime time.Time, umask int) *Written {
				old := syscall.Umask(umask)
				defer syscall.Umask(old)
				root := t.TempDir()
				writeTree(t, root, sample, mode)
				if err := os.Chmod(filepath.Join(root, "run.sh"), 0o700); err != nil {
					t.Fatal(err)
				}
				filepath.Walk(root, func(p string, _ os.FileInfo, _ error) error {
					return os.Chtimes(p, mtime, mtime)
				})
				entries, err := FromDir(root, "cacheon/tree", nil)
				if err != nil {
					t.Fatal(err)
				}
				w, err := Write(filepath.Join(t.TempDir(), "layer"), entries, opts)
				if err != nil {
					t.Fatal(err)
				}
				return w
			}
			a := build(0o600, time.Unix(1, 0), 0o022)
			b := build(0o644, time.Now(), 0o077)
			if a.Digest != b.Digest || a.DiffID != b.DiffID || a.Size != b.Size {
				t.Fatalf("layers differ: %+v vs %+v", a, b)
			}
		})
	}
}

func TestWriteHeadersAreNormalized(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, sample, 0o600)
	os.Chmod(filepath.Join(root, "run.sh"), 0o700)
	entries, err := FromDir(root, "cacheon/tree", nil)
	if err != nil {
		t.Fatal(err)
	}
	w, err := Write(filepath.Join(t.TempDir(), "layer"), entries, Options{Epoch: 42, Compression: Gzip, Level: 9})
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(w.Path)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if !zr.ModTime.IsZero() || zr.Name != "" {
		t.Errorf("gzip header carries host data: mtime %v name %q", zr.ModTime, zr.Name)
	}
	tr := tar.NewReader(zr)
	var names []string
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, hdr.Name)
		if hdr.Uid != 0 || hdr.Gid != 0 || hdr.Uname != "" || hdr.Gname != "" {
			t.Errorf("%s: owner %d:%d %q:%q, want 0:0 and empty names", hdr.Name, hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname)
		}
		if hdr.ModTime.Unix() != 42 || !hdr.AccessTime.IsZero() || !hdr.ChangeTime.IsZero() || len(hdr.PAXRecords) != 0 {
			t.Errorf("%s: times %v/%v/%v pax %v, want only mtime 42", hdr.Name, hdr.ModTime, hdr.AccessTime, hdr.ChangeTime, hdr.PAXRecords)
		}
		want := int64(0o644)
		switch {
		case hdr.Typeflag == tar.TypeDir:
			want = 0o755
		case strings.HasSuffix(hdr.Name, "run.sh"):
			want = 0o755
		}
		if hdr.Mode != want {
			t.Errorf("%s: mode %o, want %o", hdr.Name, hdr.Mode, want)
		}
	}
	wantNames := []string{"cacheon/", "cacheon/tree/", "cacheon/tree/a/", "cacheon/tree/a-b", "cacheon/tree/a/b/",
		"cacheon/tree/a/b/c.txt", "cacheon/tree/a/x.json", "cacheon/tree/b/", "cacheon/tree/b/z.py",
		"cacheon/tree/empty.marker", "cacheon/tree/run.sh"}
	if strings.Join(names, " ") != strings.Join(wantNames, " ") {
		t.Errorf("entry order\n got %v\nwant %v", names, wantNames)
	}
}

func TestBadEntriesAreRejected(t *testing.T) {
	cases := []struct {
		name    string
		entries []Entry
		want    string
	}{
		{"duplicate", []Entry{{Path: "a", Data: []byte("1")}, {Path: "a", Data: []byte("2")}}, "listed twice"},
		{"file and dir", []Entry{{Path: "a", Data: []byte("1")}, {Path: "a/b", Data: []byte("2")}}, "both a file and a directory"},
		{"absolute", []Entry{{Path: "/etc/passwd"}}, "clean relative"},
		{"escape", []Entry{{Path: "../x"}}, "clean relative"},
		{"unclean", []Entry{{Path: "a/./b"}}, "clean relative"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "layer")
			_, err := Write(out, c.entries, Options{Compression: Gzip})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("layer file left behind after failure")
			}
		})
	}
}

func TestFromDirRejectsSymlinks(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"a.py": "x"}, 0o644)
	if err := os.Symlink("a.py", filepath.Join(root, "link.py")); err != nil {
		t.Fatal(err)
	}
	_, err := FromDir(root, "x", nil)
	if err == nil || !strings.Contains(err.Error(), "link.py: symlinks are not allowed") {
		t.Fatalf("err = %v, want symlink rejection naming link.py", err)
	}
}

func TestWalkReadsBackWhatWasWritten(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, sample, 0o644)
	entries, err := FromDir(root, "t", nil)
	if err != nil {
		t.Fatal(err)
	}
	w, err := Write(filepath.Join(t.TempDir(), "layer"), entries, Options{Compression: Gzip})
	if err != nil {
		t.Fatal(err)
	}
	f, _ := os.Open(w.Path)
	defer f.Close()
	zr, _ := gzip.NewReader(f)
	got := map[string]string{}
	err = Walk(zr, func(name string, _ bool, r io.Reader) error {
		b, err := io.ReadAll(r)
		got[name] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for rel, body := range sample {
		if got["t/"+rel] != body {
			t.Errorf("%s: got %q want %q", rel, got["t/"+rel], body)
		}
	}
}
