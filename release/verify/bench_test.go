package verify_test

import (
	"crypto/sha256"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/cacheon/engine/release/build"
	"github.com/cacheon/engine/release/key"
	"github.com/cacheon/engine/release/publish"
	"github.com/cacheon/engine/release/registrytest"
	fixture "github.com/cacheon/engine/release/releasetest"
	"github.com/cacheon/engine/release/sign"
	"github.com/cacheon/engine/release/store"
	"github.com/cacheon/engine/release/store/remote"
	"github.com/cacheon/engine/release/verify"
)

// benchBytes is the size of the benchmark's base image layers
// (CACHEON_BENCH_BYTES, default 1 GiB).
func benchBytes(b *testing.B) int64 {
	if s := os.Getenv("CACHEON_BENCH_BYTES"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			b.Fatalf("CACHEON_BENCH_BYTES: %v", err)
		}
		return n
	}
	return 1 << 30
}

// BenchmarkRelease measures, on a release whose layers weigh at least
// CACHEON_BENCH_BYTES: offline verification of the layout (MB/s of
// layers) against a plain SHA-256 of the same blob files read the same
// way, building, signing and publishing to a loopback registry, and
// verification from that registry.
func BenchmarkRelease(b *testing.B) {
	r := fixture.New(b)
	dir := b.TempDir()
	baseDir, pin := fixture.BigBase(b, dir, benchBytes(b), 8)
	inputs := func(out string) build.Inputs {
		in := r.Inputs(out)
		in.BaseLayout, in.BaseDigest, in.BaseName = baseDir, pin.String(), "bench/base@"+pin.String()
		return in
	}
	out := filepath.Join(dir, "release")
	if _, err := build.Build(inputs(out), nil); err != nil {
		b.Fatal(err)
	}
	l, _ := store.OpenLayout(out)
	if _, err := sign.Release(l, r.Signer); err != nil {
		b.Fatal(err)
	}
	policy, _ := key.LoadPolicy(r.PublicKey)
	desc, _ := l.Resolve()
	raw, _ := store.ReadManifest(l, desc)
	m, _ := v1.ParseManifest(bytesReader(raw))
	var layerBytes int64
	var blobs []string
	for _, d := range append([]v1.Descriptor{m.Config}, m.Layers...) {
		layerBytes += d.Size
		blobs = append(blobs, filepath.Join(out, "blobs", "sha256", d.Digest.Hex))
	}
	b.Logf("release: %d layers, %d bytes of blobs", len(m.Layers), layerBytes)

	b.Run("verify-layout", func(b *testing.B) {
		b.SetBytes(layerBytes)
		for i := 0; i < b.N; i++ {
			if _, err := verify.Run(l, verify.Options{Policy: policy}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("sha256-same-bytes", func(b *testing.B) {
		b.SetBytes(layerBytes)
		buf := make([]byte, 1<<20)
		for i := 0; i < b.N; i++ {
			for _, p := range blobs {
				f, err := os.Open(p)
				if err != nil {
					b.Fatal(err)
				}
				h := sha256.New()
				if _, err := io.CopyBuffer(h, f, buf); err != nil {
					b.Fatal(err)
				}
				f.Close()
			}
		}
	})
	reg := registrytest.Start(b)
	b.Run("build-sign-publish", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			out := filepath.Join(b.TempDir(), "release")
			if _, err := build.Build(inputs(out), nil); err != nil {
				b.Fatal(err)
			}
			l, _ := store.OpenLayout(out)
			if _, err := sign.Release(l, r.Signer); err != nil {
				b.Fatal(err)
			}
			target, _ := remote.Open(reg.Host+"/bench/engine:"+strconv.Itoa(i), false)
			if _, err := publish.Layout(l, target, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("verify-registry", func(b *testing.B) {
		b.SetBytes(layerBytes)
		for i := 0; i < b.N; i++ {
			src, _ := remote.Open(reg.Host+"/bench/engine:0", false)
			if _, err := verify.Run(src, verify.Options{Policy: policy}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func bytesReader(b []byte) io.Reader { return &byteReader{b: b} }

type byteReader struct{ b []byte }

func (r *byteReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.b)
	r.b = r.b[n:]
	return n, nil
}

// BenchmarkVerifyCrowdedIndex verifies a release whose index lists 990
// unrelated attachments of 64 KiB each besides its own: their
// descriptors are read, their manifests and blobs are not.
func BenchmarkVerifyCrowdedIndex(b *testing.B) {
	r := fixture.New(b)
	out := filepath.Join(b.TempDir(), "release")
	if _, err := build.Build(r.Inputs(out), nil); err != nil {
		b.Fatal(err)
	}
	l, _ := store.OpenLayout(out)
	if _, err := sign.Release(l, r.Signer); err != nil {
		b.Fatal(err)
	}
	desc, _ := l.Resolve()
	pad := make([]byte, 64<<10)
	for i := 0; i < 990; i++ {
		data := append(strconv.AppendInt(nil, int64(i), 10), pad...)
		if _, err := l.Attach(desc, store.Artifact{ArtifactType: "application/vnd.example.junk", Data: data}); err != nil {
			b.Fatal(err)
		}
	}
	policy, _ := key.LoadPolicy(r.PublicKey)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := verify.Run(l, verify.Options{Policy: policy}); err != nil {
			b.Fatal(err)
		}
	}
}
