package releasetest

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"

	"github.com/cacheon/engine/release/image"
	"github.com/cacheon/engine/release/layer"
)

// BigBase writes a base image of n layers holding total bytes of random
// (incompressible) data, as a large CUDA/PyTorch base would weigh, into a
// new OCI layout under dir and returns the layout and its pin.
func BigBase(tb testing.TB, dir string, total int64, n int) (string, v1.Hash) {
	tb.Helper()
	p := image.Platform{OS: "linux", Architecture: "amd64"}
	scratch, _ := image.Scratch(p)
	rng := rand.NewChaCha8([32]byte{1, 2, 3})
	buf := make([]byte, 1<<20)
	var added []image.Added
	for i := 0; i < n; i++ {
		src := filepath.Join(dir, "src-"+strconv.Itoa(i))
		f, err := os.Create(src)
		if err != nil {
			tb.Fatal(err)
		}
		for left := total / int64(n); left > 0; left -= int64(len(buf)) {
			rng.Read(buf)
			chunk := buf
			if left < int64(len(buf)) {
				chunk = buf[:left]
			}
			if _, err := f.Write(chunk); err != nil {
				tb.Fatal(err)
			}
		}
		f.Close()
		w, err := layer.Write(filepath.Join(dir, "layer-"+strconv.Itoa(i)),
			[]layer.Entry{{Path: "opt/base/blob-" + strconv.Itoa(i), Source: src}},
			layer.Options{Compression: layer.Zstd, Level: 1})
		if err != nil {
			tb.Fatal(err)
		}
		os.Remove(src)
		added = append(added, image.Added{Layer: image.FileLayer{W: w}, CreatedBy: "benchmark base layer"})
	}
	img, err := image.Assemble(image.Spec{Base: scratch, BaseName: "scratch", Platform: p, Layers: added})
	if err != nil {
		tb.Fatal(err)
	}
	out := filepath.Join(dir, "base-layout")
	lp, err := layout.Write(out, empty.Index)
	if err != nil {
		tb.Fatal(err)
	}
	if err := lp.AppendImage(img); err != nil {
		tb.Fatal(err)
	}
	for i := 0; i < n; i++ {
		os.Remove(filepath.Join(dir, "layer-"+strconv.Itoa(i)))
	}
	d, err := img.Digest()
	if err != nil {
		tb.Fatal(err)
	}
	return out, d
}
