package safetensors

import (
	"fmt"
	"io"
)

// Encode writes a whole file: the header of h, then the data of every
// tensor in data order, produced by fill. fill must write exactly the
// entry's End-Begin bytes to w; Encode checks it, so a short or long
// tensor is an error rather than a corrupt file.
func Encode(w io.Writer, h *Header, fill func(e Entry, w io.Writer) error) error {
	prefix, err := h.EncodeHeader()
	if err != nil {
		return err
	}
	if _, err := w.Write(prefix); err != nil {
		return fmt.Errorf("writing safetensors header: %w", err)
	}
	var offset int64
	for _, e := range h.Tensors {
		if e.Begin != offset {
			return fmt.Errorf("tensor %q: begins at %d, the previous tensor ends at %d", e.Name, e.Begin, offset)
		}
		cw := &countingWriter{w: w}
		if err := fill(e, cw); err != nil {
			return fmt.Errorf("writing tensor %q: %w", e.Name, err)
		}
		if cw.n != e.End-e.Begin {
			return fmt.Errorf("writing tensor %q: wrote %d bytes, the header declares %d", e.Name, cw.n, e.End-e.Begin)
		}
		offset = e.End
	}
	return nil
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// File is an opened safetensors file: its checked header and where its
// data section starts.
type File struct {
	Header *Header
	// HeaderSize is N, the length of the JSON header after the 8-byte
	// length field; the data starts at 8+N.
	HeaderSize int64
	r          io.ReaderAt
}

// Read parses and checks the header of the size-byte file r.
func Read(r io.ReaderAt, size int64) (*File, error) {
	if size < 8 {
		return nil, formatErr("file of %d bytes is shorter than the 8-byte header length", size)
	}
	var lenBuf [8]byte
	if _, err := r.ReadAt(lenBuf[:], 0); err != nil {
		return nil, fmt.Errorf("reading safetensors header length: %w", err)
	}
	n := uint64LE(lenBuf[:])
	if n > MaxHeaderSize {
		return nil, formatErr("header length %d exceeds %d", n, MaxHeaderSize)
	}
	if int64(n) > size-8 {
		return nil, formatErr("header length %d exceeds the %d bytes after the length field", n, size-8)
	}
	js := make([]byte, n)
	if _, err := r.ReadAt(js, 8); err != nil {
		return nil, fmt.Errorf("reading safetensors header: %w", err)
	}
	h, err := ParseHeader(js, size-8-int64(n))
	if err != nil {
		return nil, err
	}
	return &File{Header: h, HeaderSize: int64(n), r: r}, nil
}

// TensorData returns the raw little-endian bytes of the tensor named name.
func (f *File) TensorData(name string) ([]byte, error) {
	e, ok := f.Header.Lookup(name)
	if !ok {
		return nil, fmt.Errorf("no tensor %q", name)
	}
	buf := make([]byte, e.End-e.Begin)
	if len(buf) == 0 {
		// Some readers report EOF for an empty read at the end.
		return buf, nil
	}
	if _, err := f.r.ReadAt(buf, 8+f.HeaderSize+e.Begin); err != nil {
		return nil, fmt.Errorf("reading tensor %q: %w", name, err)
	}
	return buf, nil
}
