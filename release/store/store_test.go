package store

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/cacheon/engine/release/image"
	"github.com/cacheon/engine/release/layer"
)

func testImage(t *testing.T, scratch string) v1.Image {
	t.Helper()
	w, err := layer.Write(filepath.Join(scratch, "layer-"+strings.ReplaceAll(t.Name(), "/", "_")),
		[]layer.Entry{{Path: "cacheon/hello.txt", Data: []byte("hello\n")}}, layer.Options{Compression: layer.Gzip})
	if err != nil {
		t.Fatal(err)
	}
	p := image.Platform{OS: "linux", Architecture: "amd64"}
	base, _ := image.Scratch(p)
	img, err := image.Assemble(image.Spec{Base: base, Platform: p, Layers: []image.Added{{Layer: image.FileLayer{W: w}}}})
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func writeLayout(t *testing.T) (*Layout, v1.Descriptor) {
	t.Helper()
	dest := filepath.Join(t.TempDir(), "release")
	w, err := NewLayoutWriter(dest)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	scratch, err := w.ScratchDir()
	if err != nil {
		t.Fatal(err)
	}
	desc, err := w.AddImage(testImage(t, scratch), "engine:test")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Attach(Artifact{ArtifactType: ArtifactSBOM, Data: []byte(`{"spdxVersion":"SPDX-2.3"}`)}); err != nil {
		t.Fatal(err)
	}
	l, err := w.Commit()
	if err != nil {
		t.Fatal(err)
	}
	return l, desc
}

func TestLayoutRoundTrip(t *testing.T) {
	l, desc := writeLayout(t)
	got, err := l.Resolve()
	if err != nil || got.Digest != desc.Digest {
		t.Fatalf("Resolve = %v, %v; want %s", got.Digest, err, desc.Digest)
	}
	if _, err := os.Stat(filepath.Join(l.Dir(), "scratch")); !os.IsNotExist(err) {
		t.Errorf("scratch directory published with the layout")
	}
	if _, err := l.Attach(desc, Artifact{ArtifactType: ArtifactBundle, Data: []byte(`{"bundle":1}`)}); err != nil {
		t.Fatal(err)
	}
	refs, err := Referrers(l, desc.Digest)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, r := range refs {
		types = append(types, r.ArtifactType)
	}
	if strings.Join(types, ",") != ArtifactSBOM+","+ArtifactBundle {
		t.Errorf("referrers %v, want bundle and sbom", types)
	}
	// Still exactly one release image: artifacts are not images.
	if _, err := l.Resolve(); err != nil {
		t.Errorf("Resolve after attach: %v", err)
	}
}

func TestLayoutWriterRefusesExistingDestination(t *testing.T) {
	dest := t.TempDir()
	os.WriteFile(filepath.Join(dest, "something"), nil, 0o644)
	if _, err := NewLayoutWriter(dest); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("err = %v, want already exists", err)
	}
	// An empty directory, as a build system declares outputs, is used.
	empty := filepath.Join(t.TempDir(), "out")
	os.Mkdir(empty, 0o755)
	w, err := NewLayoutWriter(empty)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	scratch, _ := w.ScratchDir()
	if _, err := w.AddImage(testImage(t, scratch), "x:1"); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Commit(); err != nil {
		t.Fatalf("commit into an empty directory: %v", err)
	}
	if _, err := OpenLayout(empty); err != nil {
		t.Fatal(err)
	}
}

func TestLayoutDetectsSwappedBlob(t *testing.T) {
	l, desc := writeLayout(t)
	raw, err := ReadManifest(l, desc)
	if err != nil {
		t.Fatal(err)
	}
	m, err := v1.ParseManifest(strings.NewReader(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	lp := filepath.Join(l.Dir(), "blobs", "sha256", m.Layers[0].Digest.Hex)
	if err := os.WriteFile(lp, []byte("another layer"), 0o644); err != nil {
		t.Fatal(err)
	}
	err = CheckBlob(l, m.Layers[0], io.Discard)
	var mismatch *DigestMismatchError
	if !errors.As(err, &mismatch) || mismatch.Want != m.Layers[0].Digest {
		t.Fatalf("err = %v, want a digest mismatch for %s", err, m.Layers[0].Digest)
	}
}
