package rebuild_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/cacheon/engine/release/descriptor"
	"github.com/cacheon/engine/release/rebuild"
	fixture "github.com/cacheon/engine/release/releasetest"
	"github.com/cacheon/engine/release/store"
	"github.com/cacheon/engine/release/verify"
)

// A rebuild verifies first; a substrate layer swapped for a tar whose
// entry climbs out of the scratch directory must write nothing.
func TestRebuildWritesNothingFromASwappedLayer(t *testing.T) {
	r := fixture.New(t)
	l := signed(t, r, nil)
	desc, _ := l.Resolve()
	raw, _ := store.ReadManifest(l, desc)
	m, _ := v1.ParseManifest(bytes.NewReader(raw))
	substrate := m.Layers[len(m.Layers)-4]

	target := filepath.Join(t.TempDir(), "planted.txt")
	body := []byte("written by the attacker\n")
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	tw.WriteHeader(&tar.Header{Name: descriptor.SubstrateDir + "/" + strings.Repeat("../", 64) + strings.TrimPrefix(target, "/"), Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(body))})
	tw.Write(body)
	tw.Close()
	zw.Close()
	if err := os.WriteFile(filepath.Join(l.Dir(), "blobs", "sha256", substrate.Digest.Hex), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}

	_, err := rebuild.Run(l, rebuild.Options{Policy: policy(t, r), Work: t.TempDir()})
	var f *verify.Failure
	if !errors.As(err, &f) || f.Check != verify.CheckBlobs {
		t.Fatalf("err = %v, want a failed %s check", err, verify.CheckBlobs)
	}
	if _, err := os.Lstat(target); err == nil {
		t.Fatalf("rebuild wrote %s from a layer that does not match its digest", target)
	}
}
