package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// returns runs fn and fails the test if it has not returned within a
// minute: the bug it guards against is a read that never returns, not a
// slow one.
func returns(t *testing.T, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatalf("%s blocked: it never returned", what)
	}
}

func mkfifo(t *testing.T, p string) {
	t.Helper()
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
}

func TestLayoutRefusesSpecialFilesWithoutBlocking(t *testing.T) {
	for _, c := range []struct {
		name string
		file func(l *Layout, desc v1.Descriptor) string
		read func(l *Layout, desc v1.Descriptor) error
	}{
		{"index.json", func(l *Layout, _ v1.Descriptor) string { return filepath.Join(l.Dir(), "index.json") },
			func(l *Layout, _ v1.Descriptor) error { _, err := l.Resolve(); return err }},
		{"oci-layout", func(l *Layout, _ v1.Descriptor) string { return filepath.Join(l.Dir(), "oci-layout") },
			func(l *Layout, _ v1.Descriptor) error { _, err := OpenLayout(l.Dir()); return err }},
		{"manifest blob", func(l *Layout, d v1.Descriptor) string {
			return filepath.Join(l.Dir(), "blobs", "sha256", d.Digest.Hex)
		},
			func(l *Layout, d v1.Descriptor) error { _, err := ReadManifest(l, d); return err }},
		{"layer blob", func(l *Layout, d v1.Descriptor) string {
			raw, _ := ReadManifest(l, d)
			m, _ := v1.ParseManifest(bytes.NewReader(raw))
			return filepath.Join(l.Dir(), "blobs", "sha256", m.Layers[0].Digest.Hex)
		}, func(l *Layout, d v1.Descriptor) error {
			raw, err := ReadManifest(l, d)
			if err != nil {
				return err
			}
			m, _ := v1.ParseManifest(bytes.NewReader(raw))
			f, err := Fetch(l, m.Layers[0], t.TempDir())
			if err == nil {
				f.Close()
			}
			return err
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, desc := writeLayout(t)
			mkfifo(t, c.file(l, desc))
			var err error
			returns(t, "reading a FIFO "+c.name, func() { err = c.read(l, desc) })
			if !errors.Is(err, ErrNotRegular) || !IsRejection(err) || !strings.Contains(err.Error(), "named pipe") {
				t.Fatalf("err = %v, want ErrNotRegular naming the pipe", err)
			}
		})
	}
}

func memDelta(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func TestLayoutRefusesAHugeIndexUnread(t *testing.T) {
	l, _ := writeLayout(t)
	im := readTestIndex(t, l)
	// 32 MiB of valid JSON: the old reader parsed all of it (and a 200 MB
	// index took 887 MB) before looking at a single entry.
	im.Annotations = map[string]string{"padding": strings.Repeat("x", 32<<20)}
	b, _ := json.Marshal(im)
	os.WriteFile(filepath.Join(l.Dir(), "index.json"), b, 0o644)
	var err error
	grew := memDelta(func() { _, err = l.Resolve() })
	if !errors.Is(err, ErrTooLarge) || !IsRejection(err) {
		t.Fatalf("err = %v, want ErrTooLarge", err)
	}
	if grew > 1<<20 {
		t.Errorf("refusing the index allocated %d bytes; it must not be read", grew)
	}
}

func TestLayoutRefusesTooManyIndexEntries(t *testing.T) {
	l, desc := writeLayout(t)
	im := readTestIndex(t, l)
	for i := 0; i <= MaxIndexEntries; i++ {
		d := desc
		d.Annotations = nil
		d.Digest.Hex = fmt.Sprintf("%064x", i)
		d.ArtifactType = ArtifactBundle
		im.Manifests = append(im.Manifests, d)
	}
	b, _ := json.Marshal(im)
	os.WriteFile(filepath.Join(l.Dir(), "index.json"), b, 0o644)
	_, err := Candidates(l, desc.Digest)
	if !errors.Is(err, ErrTooManyEntries) {
		t.Fatalf("err = %v, want ErrTooManyEntries", err)
	}
}

func readTestIndex(t *testing.T, l *Layout) *v1.IndexManifest {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(l.Dir(), "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	im, err := v1.ParseIndexManifest(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return im
}

func TestDescriptorsAreCheckedBeforeReading(t *testing.T) {
	l, desc := writeLayout(t)
	for _, c := range []struct {
		name string
		edit func(*v1.Descriptor)
		want error
	}{
		{"negative size", func(d *v1.Descriptor) { d.Size = -1 }, ErrBadDescriptor},
		{"zero size", func(d *v1.Descriptor) { d.Size = 0 }, ErrDigestMismatch},
		{"size over the limit", func(d *v1.Descriptor) { d.Size = MaxManifestSize + 1 }, ErrTooLarge},
		{"short digest", func(d *v1.Descriptor) { d.Digest.Hex = d.Digest.Hex[:10] }, ErrBadDescriptor},
		{"uppercase digest", func(d *v1.Descriptor) { d.Digest.Hex = strings.ToUpper(d.Digest.Hex) }, ErrBadDescriptor},
		{"other algorithm", func(d *v1.Descriptor) { d.Digest.Algorithm = "sha512" }, ErrBadDescriptor},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := desc
			c.edit(&d)
			if _, err := ReadManifest(l, d); !errors.Is(err, c.want) || !IsRejection(err) {
				t.Errorf("ReadManifest: err = %v, want %v", err, c.want)
			}
		})
	}
	// A blob descriptor claiming an absurd or negative size is refused
	// before a byte is read.
	raw, _ := ReadManifest(l, desc)
	m, _ := v1.ParseManifest(bytes.NewReader(raw))
	for _, size := range []int64{-1, MaxBlobSize + 1} {
		d := m.Layers[0]
		d.Size = size
		if err := CheckBlob(l, d, io.Discard); !IsRejection(err) {
			t.Errorf("CheckBlob size %d: err = %v, want a rejection", size, err)
		}
		if _, err := Fetch(l, d, t.TempDir()); !IsRejection(err) {
			t.Errorf("Fetch size %d: err = %v, want a rejection", size, err)
		}
	}
}

func TestFetchReturnsOnlyCheckedBytes(t *testing.T) {
	l, desc := writeLayout(t)
	raw, _ := ReadManifest(l, desc)
	m, _ := v1.ParseManifest(bytes.NewReader(raw))
	d := m.Layers[0]
	f, err := Fetch(l, d, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(f)
	f.Close()
	want, _ := os.ReadFile(filepath.Join(l.Dir(), "blobs", "sha256", d.Digest.Hex))
	if !bytes.Equal(got, want) {
		t.Fatalf("Fetch returned other bytes than the blob")
	}
	// A swapped blob gives no file at all.
	os.WriteFile(filepath.Join(l.Dir(), "blobs", "sha256", d.Digest.Hex), append(want[:len(want)-1:len(want)-1], 'x'), 0o644)
	tmp := t.TempDir()
	if _, err := Fetch(l, d, tmp); !errors.Is(err, ErrDigestMismatch) {
		t.Fatalf("err = %v, want ErrDigestMismatch", err)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("Fetch left %v behind", left)
	}
}
