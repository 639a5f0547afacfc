package testmodel

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/cacheon/engine/models/safetensors"
)

// File names inside a test model directory.
const (
	ConfigName  = "config.json"
	WeightsName = "model.safetensors"
)

// ErrOutputExists rejects an output path that already holds something.
var ErrOutputExists = errors.New("output exists and is not an empty directory")

// File is one file of a written model directory.
type File struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// Result describes a written model directory.
type Result struct {
	Dir        string
	Shape      Shape
	Seed       uint64
	Files      []File // sorted by path
	Tensors    int
	Parameters int64
}

// Header plans model.safetensors for shape s: every tensor in BF16, laid
// out in name order, with metadata {"format": "pt"} as torch writers do.
func Header(s Shape) (*safetensors.Header, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	specs := s.tensors()
	ts := make([]safetensors.Tensor, len(specs))
	for i, sp := range specs {
		ts[i] = safetensors.Tensor{Name: sp.name, DType: safetensors.BF16, Shape: sp.shape}
	}
	return safetensors.Layout(ts, map[string]string{"format": "pt"})
}

// WriteSafetensors writes the bytes of model.safetensors for shape s and
// seed to w, generating each tensor as it goes (a model is never held in
// memory whole).
func WriteSafetensors(w io.Writer, s Shape, seed uint64) error {
	h, err := Header(s)
	if err != nil {
		return err
	}
	kinds := make(map[string]kind)
	for _, sp := range s.tensors() {
		kinds[sp.name] = sp.kind
	}
	buf := make([]byte, 0, 64<<10)
	return safetensors.Encode(w, h, func(e safetensors.Entry, w io.Writer) error {
		k := kinds[e.Name]
		key := streamKey(seed, e.Name)
		n := uint64(e.Elements())
		for j := uint64(0); j < n; j++ {
			b := safetensors.BF16FromFloat32(value(key, k, j))
			buf = append(buf, byte(b), byte(b>>8))
			if len(buf) == cap(buf) {
				if _, err := w.Write(buf); err != nil {
					return err
				}
				buf = buf[:0]
			}
		}
		if len(buf) > 0 {
			if _, err := w.Write(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
		return nil
	})
}

// value is element j of a tensor of kind k drawn from stream key, before
// rounding to bfloat16.
func value(key uint64, k kind, j uint64) float32 {
	z := standardValue(key, j)
	if k == norm {
		// The conversion rounds z·std on its own, so no platform may
		// fuse the multiply and add.
		return float32(1 + float64(z*weightStd))
	}
	return float32(z * weightStd)
}

// Write creates the model directory out for shape s and seed: config.json
// and model.safetensors, files read-only. The directory appears whole or
// not at all: it is built under a temporary name beside out, synced and
// renamed into place. An existing out is refused unless it is an empty
// directory.
func Write(out string, s Shape, seed uint64) (*Result, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	h, err := Header(s)
	if err != nil {
		return nil, err
	}
	config, err := ConfigJSON(s, seed)
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(out)
	if err != nil {
		return nil, fmt.Errorf("resolving %s: %w", out, err)
	}
	if err := checkOutput(abs); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(abs), "."+filepath.Base(abs)+".tmp-")
	if err != nil {
		return nil, fmt.Errorf("creating model directory beside %s: %w", abs, err)
	}
	done := false
	defer func() {
		if !done {
			os.RemoveAll(tmp)
		}
	}()

	res := &Result{Dir: abs, Shape: s, Seed: seed, Tensors: len(h.Tensors)}
	for _, e := range h.Tensors {
		res.Parameters += e.Elements()
	}
	f, err := writeFile(filepath.Join(tmp, ConfigName), func(w io.Writer) error {
		_, err := w.Write(config)
		return err
	})
	if err != nil {
		return nil, err
	}
	res.Files = append(res.Files, File{Path: ConfigName, Size: f.Size, SHA256: f.SHA256})
	f, err = writeFile(filepath.Join(tmp, WeightsName), func(w io.Writer) error {
		return WriteSafetensors(w, s, seed)
	})
	if err != nil {
		return nil, err
	}
	res.Files = append(res.Files, File{Path: WeightsName, Size: f.Size, SHA256: f.SHA256})

	if err := os.Chmod(tmp, 0o755); err != nil {
		return nil, err
	}
	if err := syncDir(tmp); err != nil {
		return nil, err
	}
	// An empty directory at out gives way (os.Remove refuses a directory
	// that was filled since the check above); rename(2) then fails rather
	// than replace anything that appears in the meantime.
	if err := removeEmptyDir(abs); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, abs); err != nil {
		return nil, fmt.Errorf("publishing model directory %s: %w", abs, err)
	}
	done = true
	if err := syncDir(filepath.Dir(abs)); err != nil {
		return nil, err
	}
	return res, nil
}

func checkOutput(abs string) error {
	info, err := os.Lstat(abs)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !info.IsDir() {
		return fmt.Errorf("%s: %w", abs, ErrOutputExists)
	}
	entries, err := os.ReadDir(abs)
	if err != nil {
		return err
	}
	if len(entries) > 0 {
		return fmt.Errorf("%s: %w (it holds %s)", abs, ErrOutputExists, entries[0].Name())
	}
	return nil
}

func removeEmptyDir(abs string) error {
	err := os.Remove(abs)
	if err == nil || errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return fmt.Errorf("%s: %w: %v", abs, ErrOutputExists, err)
}

// writeFile creates path read-only, fills it through a buffer while
// hashing it, and syncs it.
func writeFile(path string, fill func(io.Writer) error) (File, error) {
	fh, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o444)
	if err != nil {
		return File{}, err
	}
	defer fh.Close()
	sum := sha256.New()
	bw := bufio.NewWriterSize(io.MultiWriter(fh, sum), 1<<20)
	cw := &countWriter{w: bw}
	if err := fill(cw); err != nil {
		return File{}, fmt.Errorf("writing %s: %w", path, err)
	}
	if err := bw.Flush(); err != nil {
		return File{}, fmt.Errorf("writing %s: %w", path, err)
	}
	if err := fh.Sync(); err != nil {
		return File{}, fmt.Errorf("syncing %s: %w", path, err)
	}
	if err := fh.Close(); err != nil {
		return File{}, fmt.Errorf("closing %s: %w", path, err)
	}
	return File{Size: cw.n, SHA256: hex.EncodeToString(sum.Sum(nil))}, nil
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("syncing directory %s: %w", dir, err)
	}
	return nil
}
