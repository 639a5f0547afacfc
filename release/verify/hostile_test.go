package verify_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/rand"
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

	"github.com/cacheon/engine/release/descriptor"
	fixture "github.com/cacheon/engine/release/releasetest"
	"github.com/cacheon/engine/release/store"
	"github.com/cacheon/engine/release/verify"
)

// swapLayer replaces the blob of our layer role (substrate, entrypoint,
// engine-tree, release) with data, leaving every descriptor and the
// signature as they were: the realistic attack on a signed layout.
func swapLayer(t *testing.T, dir, role string, data []byte) {
	t.Helper()
	_, m := fixture.ReadImageManifest(t, dir)
	i := map[string]int{"substrate": 4, "entrypoint": 3, "engine-tree": 2, "release": 1}[role]
	d := m.Layers[len(m.Layers)-i]
	if err := os.WriteFile(filepath.Join(dir, "blobs", "sha256", d.Digest.Hex), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// tarGz is a gzip-compressed tar of one regular file of size bytes read
// from body.
func tarGz(t *testing.T, name string, size int64, body io.Reader) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	tw := tar.NewWriter(zw)
	if err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: size}); err != nil {
		t.Fatal(err)
	}
	if _, err := io.CopyN(tw, body, size); err != nil {
		t.Fatal(err)
	}
	tw.Close()
	zw.Close()
	return buf.Bytes()
}

func wantFailure(t *testing.T, err error, check, want string) {
	t.Helper()
	var f *verify.Failure
	if !errors.As(err, &f) {
		t.Fatalf("err = %v, want a failed %s check", err, check)
	}
	if f.Check != check || !strings.Contains(f.Err.Error(), want) {
		t.Fatalf("failed check %s: %v\nwant check %s saying %q", f.Check, f.Err, check, want)
	}
}

// A substrate layer swapped for a tar whose entry climbs out of the
// scratch directory wrote its file before the digest was checked, and the
// file stayed after verification failed.
func TestVerifyWritesNothingFromASwappedLayer(t *testing.T) {
	r := fixture.New(t)
	dir := buildAndSign(t, r, nil)
	scratchParent := t.TempDir()
	t.Setenv("TMPDIR", scratchParent)
	target := filepath.Join(t.TempDir(), "planted.txt")
	name := descriptor.SubstrateDir + "/" + strings.Repeat("../", 64) + strings.TrimPrefix(target, "/")
	body := "written by the attacker\n"
	swapLayer(t, dir, "substrate", tarGz(t, name, int64(len(body)), strings.NewReader(body)))

	_, err := run(t, dir, policyFor(t, r))
	wantFailure(t, err, verify.CheckBlobs, "do not match the descriptor")
	if _, err := os.Lstat(target); err == nil {
		t.Fatalf("verify wrote %s from a layer that does not match its digest", target)
	}
	if left, _ := os.ReadDir(scratchParent); len(left) != 0 {
		t.Errorf("verify left %v in its temporary directory", left)
	}
}

// The entrypoint layer was read into memory whole before its digest was
// checked: a small gzip bomb took the verifier to gigabytes.
func TestVerifyDoesNotInflateASwappedLayer(t *testing.T) {
	r := fixture.New(t)
	// A real entrypoint is a static binary of megabytes, so a bomb of
	// the same compressed size fits in its layer's descriptor.
	bin := make([]byte, 2<<20)
	rand.Read(bin)
	r.Entrypoint = filepath.Join(t.TempDir(), "cacheon")
	if err := os.WriteFile(r.Entrypoint, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	dir := buildAndSign(t, r, nil)
	const inflated = 512 << 20
	bomb := tarGz(t, descriptor.EntrypointPath, inflated, zeros{})
	swapLayer(t, dir, "entrypoint", bomb)
	l, _ := store.OpenLayout(dir)
	p := policyFor(t, r)
	var err error
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err = verify.Run(l, verify.Options{Policy: p})
	runtime.ReadMemStats(&after)
	wantFailure(t, err, verify.CheckBlobs, "do not match the descriptor")
	// The verification of the whole (small) release allocates a few
	// MiB; reading the bomb allocated more than it inflates to.
	grew := after.TotalAlloc - before.TotalAlloc
	t.Logf("verify allocated %d MiB for a swapped %d KiB layer inflating to %d MiB", grew>>20, len(bomb)>>10, inflated>>20)
	if grew > 64<<20 {
		t.Errorf("verify allocated %d MiB for a swapped %d KiB layer", grew>>20, len(bomb)>>10)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// noHang runs fn and fails if it has not returned within a minute: the
// bug is a read that never returns, not a slow one.
func noHang(t *testing.T, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("verify blocked and never returned")
	}
}

func TestVerifyRefusesFIFOs(t *testing.T) {
	r := fixture.New(t)
	built := buildAndSign(t, r, nil)
	_, m := fixture.ReadImageManifest(t, built)
	for _, c := range []struct {
		name  string
		file  string
		check string
	}{
		{"index.json", "index.json", verify.CheckImage},
		{"config blob", "blobs/sha256/" + m.Config.Digest.Hex, verify.CheckBlobs},
		{"layer blob", "blobs/sha256/" + m.Layers[len(m.Layers)-1].Digest.Hex, verify.CheckBlobs},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "release")
			if err := os.CopyFS(dir, os.DirFS(built)); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(dir, filepath.FromSlash(c.file))
			os.Remove(p)
			if err := syscall.Mkfifo(p, 0o644); err != nil {
				t.Skipf("mkfifo: %v", err)
			}
			var err error
			noHang(t, func() { _, err = run(t, dir, policyFor(t, r)) })
			wantFailure(t, err, c.check, "named pipe")
		})
	}
}

func TestVerifyRefusesANegativeSize(t *testing.T) {
	r := fixture.New(t)
	dir := buildAndSign(t, r, nil)
	im := readIndex(t, dir)
	for i, d := range im.Manifests {
		if d.ArtifactType == "" && d.Annotations["dev.cacheon.release.role"] == "" {
			im.Manifests[i].Size = -1
		}
	}
	writeIndex(t, dir, im)
	_, err := run(t, dir, policyFor(t, r))
	wantFailure(t, err, verify.CheckImage, "a size is never negative")
}

// Every referrer's manifest (and blob) was read before any signature
// check: a layout listing many attachments cost all of their bytes.
// Now only the signature bundle, and then the attachments the signed
// statement names, are read.
func TestVerifyReadsOnlyTheAttachmentsItNeeds(t *testing.T) {
	r := fixture.New(t)
	dir := buildAndSign(t, r, nil)
	p := policyFor(t, r)
	l, _ := store.OpenLayout(dir)
	desc, _ := l.Resolve()
	measure := func() uint64 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		if _, err := verify.Run(l, verify.Options{Policy: p}); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	clean := measure()
	// 100 attachments of 1 MiB each: 100 MiB the old verifier read.
	pad := strings.Repeat("p", 1<<20)
	for i := 0; i < 100; i++ {
		a := store.Artifact{ArtifactType: "application/vnd.example.junk", Data: []byte(fmt.Sprintf("%d%s", i, pad))}
		if _, err := l.Attach(desc, a); err != nil {
			t.Fatal(err)
		}
	}
	crowded := measure()
	t.Logf("verify allocated %d MiB with 100 unrelated attachments, %d MiB without", crowded>>20, clean>>20)
	if crowded > clean+16<<20 {
		t.Errorf("verify allocated %d MiB with 100 unrelated attachments, %d MiB without", crowded>>20, clean>>20)
	}
}
