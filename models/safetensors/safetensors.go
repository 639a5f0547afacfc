// Package safetensors reads and writes the safetensors tensor file format.
//
// A file is an 8-byte little-endian header length N, N bytes of UTF-8 JSON
// and the tensor data. The JSON object maps each tensor name to its dtype,
// shape and [begin, end) byte range relative to the start of the data, plus
// an optional "__metadata__" object of string values. Tensors are stored
// row-major and little-endian, back to back: the ranges cover the data
// exactly, with no hole and no overlap.
//
// The writer is byte-deterministic: tensors are laid out in name order
// (code-point order, as the reference implementation does for a single
// dtype), the header is compact JSON with sorted keys, and the header is
// padded with spaces so the data starts on an 8-byte boundary. The reader
// treats its input as hostile and checks every number before using it.
package safetensors

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"sort"
	"unicode/utf8"

	"github.com/cacheon/engine/internal/canonjson"
)

// MetadataKey is the reserved header key holding string metadata.
const MetadataKey = "__metadata__"

// MaxHeaderSize bounds the JSON header, as the reference implementation
// does; real headers are a few megabytes at most.
const MaxHeaderSize = 100 << 20

// headerAlign is the alignment of the data section from the file start.
const headerAlign = 8

// DType names an element type as the header spells it.
type DType string

// The element types of the format with a whole number of bytes per element.
const (
	Bool   DType = "BOOL"
	U8     DType = "U8"
	I8     DType = "I8"
	F8E5M2 DType = "F8_E5M2"
	F8E4M3 DType = "F8_E4M3"
	F8E8M0 DType = "F8_E8M0"
	I16    DType = "I16"
	U16    DType = "U16"
	F16    DType = "F16"
	BF16   DType = "BF16"
	I32    DType = "I32"
	U32    DType = "U32"
	F32    DType = "F32"
	F64    DType = "F64"
	I64    DType = "I64"
	U64    DType = "U64"
)

var dtypeSizes = map[DType]int64{
	Bool: 1, U8: 1, I8: 1, F8E5M2: 1, F8E4M3: 1, F8E8M0: 1,
	I16: 2, U16: 2, F16: 2, BF16: 2,
	I32: 4, U32: 4, F32: 4,
	F64: 8, I64: 8, U64: 8,
}

// Size returns the bytes per element, or 0 for an unknown dtype.
func (d DType) Size() int64 { return dtypeSizes[d] }

// Tensor describes one tensor to lay out.
type Tensor struct {
	Name  string
	DType DType
	Shape []int64
}

// Entry is one tensor of a header: its description and its byte range
// relative to the start of the data section.
type Entry struct {
	Name  string
	DType DType
	Shape []int64
	Begin int64
	End   int64
}

// Elements returns the number of elements of the entry's shape.
func (e Entry) Elements() int64 {
	n := int64(1)
	for _, d := range e.Shape {
		n *= d
	}
	return n
}

// Header is the parsed or planned header of a file. Tensors are in data
// order: each begins where the previous one ends.
type Header struct {
	Metadata map[string]string
	Tensors  []Entry
}

// DataSize is the length of the data section the header describes.
func (h *Header) DataSize() int64 {
	if len(h.Tensors) == 0 {
		return 0
	}
	return h.Tensors[len(h.Tensors)-1].End
}

// Lookup returns the entry named name.
func (h *Header) Lookup(name string) (Entry, bool) {
	for _, e := range h.Tensors {
		if e.Name == name {
			return e, true
		}
	}
	return Entry{}, false
}

// ErrFormat is wrapped by every error about malformed safetensors input.
var ErrFormat = errors.New("invalid safetensors")

func formatErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrFormat, fmt.Sprintf(format, args...))
}

// Layout plans a header for tensors: sorted by name, each placed right
// after the previous one. Names must be unique, non-empty valid UTF-8 and
// not the reserved metadata key.
func Layout(tensors []Tensor, metadata map[string]string) (*Header, error) {
	sorted := append([]Tensor(nil), tensors...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	h := &Header{Tensors: make([]Entry, 0, len(sorted))}
	if len(metadata) > 0 {
		h.Metadata = make(map[string]string, len(metadata))
		for k, v := range metadata {
			h.Metadata[k] = v
		}
	}
	var offset int64
	for i, t := range sorted {
		if err := checkName(t.Name); err != nil {
			return nil, err
		}
		if i > 0 && sorted[i-1].Name == t.Name {
			return nil, fmt.Errorf("tensor %q: duplicate name", t.Name)
		}
		n, err := byteLength(t.DType, t.Shape)
		if err != nil {
			return nil, fmt.Errorf("tensor %q: %w", t.Name, err)
		}
		if offset > math.MaxInt64-n {
			return nil, fmt.Errorf("tensor %q: data section exceeds 2^63 bytes", t.Name)
		}
		h.Tensors = append(h.Tensors, Entry{
			Name:  t.Name,
			DType: t.DType,
			Shape: append([]int64{}, t.Shape...),
			Begin: offset,
			End:   offset + n,
		})
		offset += n
	}
	return h, nil
}

func checkName(name string) error {
	switch {
	case name == "":
		return errors.New("tensor name is empty")
	case name == MetadataKey:
		return fmt.Errorf("tensor name %q is reserved for metadata", name)
	case !utf8.ValidString(name):
		return fmt.Errorf("tensor name %q is not valid UTF-8", name)
	}
	return nil
}

// byteLength is the data length of a tensor, with overflow checks.
func byteLength(dtype DType, shape []int64) (int64, error) {
	size := dtype.Size()
	if size == 0 {
		return 0, fmt.Errorf("unknown dtype %q", string(dtype))
	}
	n := size
	for i, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("shape[%d] = %d is negative", i, d)
		}
		if d != 0 && n > math.MaxInt64/d {
			return 0, fmt.Errorf("shape %v overflows 2^63 bytes", shape)
		}
		n *= d
	}
	return n, nil
}

// EncodeHeader returns the file prefix for h: the 8-byte length and the
// JSON header padded with spaces to a multiple of 8 bytes.
func (h *Header) EncodeHeader() ([]byte, error) {
	obj := make(map[string]any, len(h.Tensors)+1)
	if h.Metadata != nil {
		obj[MetadataKey] = h.Metadata
	}
	for _, e := range h.Tensors {
		if _, dup := obj[e.Name]; dup {
			return nil, fmt.Errorf("tensor %q: duplicate name", e.Name)
		}
		shape := e.Shape
		if shape == nil {
			shape = []int64{}
		}
		obj[e.Name] = map[string]any{
			"dtype":        string(e.DType),
			"shape":        shape,
			"data_offsets": []int64{e.Begin, e.End},
		}
	}
	js, err := canonjson.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encoding safetensors header: %w", err)
	}
	padded := (len(js) + headerAlign - 1) / headerAlign * headerAlign
	if padded > MaxHeaderSize {
		return nil, fmt.Errorf("safetensors header of %d bytes exceeds %d", padded, MaxHeaderSize)
	}
	out := make([]byte, 8+padded)
	putUint64LE(out[:8], uint64(padded))
	copy(out[8:], js)
	for i := 8 + len(js); i < len(out); i++ {
		out[i] = ' '
	}
	return out, nil
}

func putUint64LE(b []byte, v uint64) {
	for i := 0; i < 8; i++ {
		b[i] = byte(v >> (8 * i))
	}
}

func uint64LE(b []byte) uint64 {
	var v uint64
	for i := 7; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	return v
}

// ParseHeader parses and checks the JSON header text of a file whose data
// section is dataSize bytes long.
func ParseHeader(js []byte, dataSize int64) (*Header, error) {
	if len(js) == 0 || js[0] != '{' {
		return nil, formatErr("header does not start with '{'")
	}
	v, err := canonjson.Parse(js)
	if err != nil {
		return nil, formatErr("header: %v", err)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, formatErr("header is not a JSON object")
	}
	names := make([]string, 0, len(obj))
	for k := range obj {
		names = append(names, k)
	}
	sort.Strings(names)
	h := &Header{}
	for _, name := range names {
		if name == MetadataKey {
			md, err := parseMetadata(obj[name])
			if err != nil {
				return nil, err
			}
			h.Metadata = md
			continue
		}
		e, err := parseEntry(name, obj[name])
		if err != nil {
			return nil, err
		}
		h.Tensors = append(h.Tensors, e)
	}
	// Data order: by range, ties (zero-length tensors) by name, so the
	// contiguity check below sees every range exactly once.
	sort.SliceStable(h.Tensors, func(i, j int) bool {
		a, b := h.Tensors[i], h.Tensors[j]
		if a.Begin != b.Begin {
			return a.Begin < b.Begin
		}
		return a.End < b.End
	})
	var offset int64
	for _, e := range h.Tensors {
		if e.Begin != offset {
			if e.Begin > offset {
				return nil, formatErr("tensor %q: data_offsets begin at %d, leaving bytes %d..%d unused", e.Name, e.Begin, offset, e.Begin)
			}
			return nil, formatErr("tensor %q: data_offsets [%d, %d] overlap the previous tensor ending at %d", e.Name, e.Begin, e.End, offset)
		}
		offset = e.End
	}
	if offset != dataSize {
		return nil, formatErr("tensors cover %d data bytes, the file holds %d", offset, dataSize)
	}
	return h, nil
}

func parseMetadata(v any) (map[string]string, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, formatErr("%s is not an object", MetadataKey)
	}
	md := make(map[string]string, len(obj))
	for k, val := range obj {
		s, ok := val.(string)
		if !ok {
			return nil, formatErr("%s.%s is not a string", MetadataKey, k)
		}
		md[k] = s
	}
	return md, nil
}

func parseEntry(name string, v any) (Entry, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		return Entry{}, formatErr("tensor %q: entry is not an object", name)
	}
	for k := range obj {
		if k != "dtype" && k != "shape" && k != "data_offsets" {
			return Entry{}, formatErr("tensor %q: unknown field %q", name, k)
		}
	}
	dt, ok := obj["dtype"].(string)
	if !ok {
		return Entry{}, formatErr("tensor %q: dtype missing or not a string", name)
	}
	dtype := DType(dt)
	if dtype.Size() == 0 {
		return Entry{}, formatErr("tensor %q: unknown dtype %q", name, dt)
	}
	shape, err := intList(obj["shape"], -1)
	if err != nil {
		return Entry{}, formatErr("tensor %q: shape: %v", name, err)
	}
	offsets, err := intList(obj["data_offsets"], 2)
	if err != nil {
		return Entry{}, formatErr("tensor %q: data_offsets: %v", name, err)
	}
	if offsets[1] < offsets[0] {
		return Entry{}, formatErr("tensor %q: data_offsets [%d, %d] end before they begin", name, offsets[0], offsets[1])
	}
	n, err := byteLength(dtype, shape)
	if err != nil {
		return Entry{}, formatErr("tensor %q: %v", name, err)
	}
	if got := offsets[1] - offsets[0]; got != n {
		return Entry{}, formatErr("tensor %q: data_offsets span %d bytes, dtype %s shape %v needs %d", name, got, dt, shape, n)
	}
	return Entry{Name: name, DType: dtype, Shape: shape, Begin: offsets[0], End: offsets[1]}, nil
}

// intList reads a JSON array of non-negative integers that fit int64;
// want >= 0 also fixes its length.
func intList(v any, want int) ([]int64, error) {
	arr, ok := v.([]any)
	if !ok {
		return nil, errors.New("missing or not an array")
	}
	if want >= 0 && len(arr) != want {
		return nil, fmt.Errorf("has %d elements, want %d", len(arr), want)
	}
	out := make([]int64, len(arr))
	for i, x := range arr {
		b, ok := x.(*big.Int)
		if !ok || b.Sign() < 0 || !b.IsInt64() {
			return nil, fmt.Errorf("element %d is not a non-negative 64-bit integer", i)
		}
		out[i] = b.Int64()
	}
	return out, nil
}
