package safetensors

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"reflect"
	"strings"
	"testing"
)

// encode lays out tensors and writes them with fill bytes i%251 so every
// tensor's data is recognizable.
func encode(t *testing.T, tensors []Tensor, md map[string]string) ([]byte, *Header) {
	t.Helper()
	h, err := Layout(tensors, md)
	if err != nil {
		t.Fatalf("Layout: %v", err)
	}
	var buf bytes.Buffer
	err = Encode(&buf, h, func(e Entry, w io.Writer) error {
		data := make([]byte, e.End-e.Begin)
		for i := range data {
			data[i] = byte((int64(i) + e.Begin) % 251)
		}
		_, err := w.Write(data)
		return err
	})
	if err != nil {
		t.Fatalf("Encode: %v", err)
	}
	return buf.Bytes(), h
}

func TestEncodeHeaderExactBytes(t *testing.T) {
	file, _ := encode(t, []Tensor{{Name: "w", DType: BF16, Shape: []int64{2}}}, map[string]string{"format": "pt"})
	js := `{"__metadata__":{"format":"pt"},"w":{"data_offsets":[0,4],"dtype":"BF16","shape":[2]}}`
	padded := js + strings.Repeat(" ", (8-len(js)%8)%8)
	var want bytes.Buffer
	binary.Write(&want, binary.LittleEndian, uint64(len(padded)))
	want.WriteString(padded)
	want.Write([]byte{0, 1, 2, 3})
	if !bytes.Equal(file, want.Bytes()) {
		t.Fatalf("file bytes\n got %q\nwant %q", file, want.Bytes())
	}
}

func TestRoundTripAlignsAndPreservesEveryTensor(t *testing.T) {
	tensors := []Tensor{
		{Name: "z.f32", DType: F32, Shape: []int64{3, 5}},
		{Name: "a.bf16", DType: BF16, Shape: []int64{7}},
		{Name: "scalar", DType: I64, Shape: []int64{}},
		{Name: "empty", DType: F16, Shape: []int64{0, 3}},
		{Name: "bytes", DType: U8, Shape: []int64{13}},
		{Name: "é.unicode", DType: F64, Shape: []int64{1, 1, 2}},
	}
	file, planned := encode(t, tensors, map[string]string{"format": "pt", "note": "x"})
	n := binary.LittleEndian.Uint64(file[:8])
	if (8+n)%8 != 0 {
		t.Errorf("data starts at %d, not 8-byte aligned", 8+n)
	}
	if js := file[8 : 8+n]; js[0] != '{' || strings.TrimRight(string(js), " ")[len(strings.TrimRight(string(js), " "))-1] != '}' {
		t.Errorf("header %q is not a JSON object padded with spaces", js)
	}
	f, err := Read(bytes.NewReader(file), int64(len(file)))
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	if !reflect.DeepEqual(f.Header.Metadata, planned.Metadata) {
		t.Errorf("metadata %v, want %v", f.Header.Metadata, planned.Metadata)
	}
	var names []string
	for i, e := range f.Header.Tensors {
		names = append(names, e.Name)
		p := planned.Tensors[i]
		if e.Name != p.Name || e.DType != p.DType || e.Begin != p.Begin || e.End != p.End || !reflect.DeepEqual(e.Shape, p.Shape) {
			t.Errorf("tensor %d: got %+v, want %+v", i, e, p)
		}
		if got, want := e.End-e.Begin, e.Elements()*e.DType.Size(); got != want {
			t.Errorf("%s: %d data bytes, shape and dtype need %d", e.Name, got, want)
		}
		data, err := f.TensorData(e.Name)
		if err != nil {
			t.Fatal(err)
		}
		for k, b := range data {
			if b != byte((int64(k)+e.Begin)%251) {
				t.Fatalf("%s byte %d = %d, want %d", e.Name, k, b, (int64(k)+e.Begin)%251)
			}
		}
	}
	want := []string{"a.bf16", "bytes", "empty", "scalar", "z.f32", "é.unicode"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("data order %v, want name order %v", names, want)
	}
}

func TestEncodeRejectsWrongFillLength(t *testing.T) {
	h, err := Layout([]Tensor{{Name: "w", DType: F32, Shape: []int64{4}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{15, 17} {
		err := Encode(io.Discard, h, func(e Entry, w io.Writer) error {
			_, err := w.Write(make([]byte, n))
			return err
		})
		if err == nil || !strings.Contains(err.Error(), `tensor "w"`) {
			t.Errorf("fill of %d bytes for 16: err = %v, want an error naming the tensor", n, err)
		}
	}
}

func TestLayoutRejects(t *testing.T) {
	tests := []struct {
		name    string
		tensors []Tensor
		want    string
	}{
		{"duplicate", []Tensor{{"a", F32, []int64{1}}, {"a", F32, []int64{1}}}, "duplicate"},
		{"reserved", []Tensor{{MetadataKey, F32, []int64{1}}}, "reserved"},
		{"empty name", []Tensor{{"", F32, []int64{1}}}, "empty"},
		{"unknown dtype", []Tensor{{"a", DType("F12"), []int64{1}}}, "unknown dtype"},
		{"negative dim", []Tensor{{"a", F32, []int64{2, -1}}}, "negative"},
		{"overflow", []Tensor{{"a", F64, []int64{1 << 31, 1 << 31}}}, "overflows"},
		{"invalid utf8", []Tensor{{"a\xff", F32, []int64{1}}}, "UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Layout(tt.tensors, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tt.want)
			}
		})
	}
}

// rawFile builds a file from header text and data without any checks.
func rawFile(header string, data int) []byte {
	var b bytes.Buffer
	binary.Write(&b, binary.LittleEndian, uint64(len(header)))
	b.WriteString(header)
	b.Write(make([]byte, data))
	return b.Bytes()
}

func TestReadRejectsMalformedFiles(t *testing.T) {
	huge := make([]byte, 8)
	binary.LittleEndian.PutUint64(huge, 1<<62)
	tests := []struct {
		name string
		file []byte
		want string
	}{
		{"shorter than the length field", []byte{1, 2, 3}, "shorter than the 8-byte"},
		{"header length beyond the file", rawFile(`{}`, 0)[:9], "exceeds the 1 bytes"},
		{"header length beyond the limit", huge, "exceeds 104857600"},
		{"not an object", rawFile(`[1]     `, 0), "does not start with '{'"},
		{"leading space", rawFile(` {}`, 0), "does not start with '{'"},
		{"invalid JSON", rawFile(`{"a":`, 0), "header"},
		{"duplicate key", rawFile(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}`, 1), "duplicate"},
		{"unknown dtype", rawFile(`{"a":{"dtype":"Q4","shape":[1],"data_offsets":[0,1]}}`, 1), "unknown dtype"},
		{"unknown field", rawFile(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":1}}`, 1), `unknown field "x"`},
		{"missing shape", rawFile(`{"a":{"dtype":"U8","data_offsets":[0,1]}}`, 1), "shape"},
		{"negative dim", rawFile(`{"a":{"dtype":"U8","shape":[-1],"data_offsets":[0,1]}}`, 1), "non-negative"},
		{"float dim", rawFile(`{"a":{"dtype":"U8","shape":[1.0],"data_offsets":[0,1]}}`, 1), "header"},
		{"three offsets", rawFile(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1,2]}}`, 1), "want 2"},
		{"reversed offsets", rawFile(`{"a":{"dtype":"U8","shape":[0],"data_offsets":[1,0]}}`, 1), "end before they begin"},
		{"span disagrees with shape", rawFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}`, 4), "needs 8"},
		{"hole before", rawFile(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}`, 2), "unused"},
		{"overlap", rawFile(`{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"b":{"dtype":"U8","shape":[2],"data_offsets":[1,3]}}`, 3), "overlap"},
		{"uncovered tail", rawFile(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}`, 2), "cover 1 data bytes, the file holds 2"},
		{"data past the end", rawFile(`{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}}`, 2), "cover 4 data bytes, the file holds 2"},
		{"metadata not strings", rawFile(`{"__metadata__":{"n":1}}`, 0), "not a string"},
		{"metadata not an object", rawFile(`{"__metadata__":"pt"}`, 0), "not an object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Read(bytes.NewReader(tt.file), int64(len(tt.file)))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tt.want)
			}
			if !errors.Is(err, ErrFormat) {
				t.Errorf("err = %v does not wrap ErrFormat", err)
			}
		})
	}
}

func TestBF16RoundsToNearestEven(t *testing.T) {
	tests := []struct {
		name string
		in   uint32 // float32 bits
		want uint16
	}{
		{"one", 0x3f800000, 0x3f80},
		{"minus zero", 0x80000000, 0x8000},
		{"below half rounds down", 0x3f807fff, 0x3f80},
		{"tie to even stays", 0x3f808000, 0x3f80},
		{"tie to even rounds up", 0x3f818000, 0x3f82},
		{"above half rounds up", 0x3f808001, 0x3f81},
		{"carry into exponent", 0x3fffffff, 0x4000},
		{"max float32 overflows to inf", 0x7f7fffff, 0x7f80},
		{"infinity", 0x7f800000, 0x7f80},
		{"negative infinity", 0xff800000, 0xff80},
		{"smallest subnormal", 0x00000001, 0x0000},
		{"NaN with low payload stays NaN", 0x7f800001, 0x7fc0},
		{"quiet NaN", 0x7fc00000, 0x7fc0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := BF16FromFloat32(math.Float32frombits(tt.in)); got != tt.want {
				t.Errorf("BF16FromFloat32(%#08x) = %#04x, want %#04x", tt.in, got, tt.want)
			}
		})
	}
	for b := 0; b < 1<<16; b++ {
		f := Float32FromBF16(uint16(b))
		if f != f {
			continue
		}
		if got := BF16FromFloat32(f); got != uint16(b) {
			t.Fatalf("bfloat16 %#04x does not round-trip: got %#04x", b, got)
		}
	}
}

func FuzzRead(f *testing.F) {
	f.Add(rawFile(`{"__metadata__":{"format":"pt"},"a":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]}}`, 4))
	f.Add(rawFile(`{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"b":{"dtype":"U8","shape":[0],"data_offsets":[2,2]}}`, 2))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Read(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return
		}
		var offset int64
		for _, e := range file.Header.Tensors {
			if e.Begin != offset || e.End-e.Begin != e.Elements()*e.DType.Size() {
				t.Fatalf("accepted inconsistent entry %+v at offset %d", e, offset)
			}
			if _, err := file.TensorData(e.Name); err != nil {
				t.Fatalf("accepted entry %q whose data cannot be read: %v", e.Name, err)
			}
			offset = e.End
		}
		if 8+file.HeaderSize+offset != int64(len(data)) {
			t.Fatalf("accepted file of %d bytes covering %d", len(data), 8+file.HeaderSize+offset)
		}
	})
}
