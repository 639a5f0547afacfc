package testmodel

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/cacheon/engine/models/safetensors"
)

func write(t *testing.T, s Shape, seed uint64) (string, *Result) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "model")
	res, err := Write(dir, s, seed)
	if err != nil {
		t.Fatalf("Write: %v", err)
	}
	return dir, res
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestWriteIsByteDeterministic(t *testing.T) {
	for _, moe := range []bool{false, true} {
		t.Run(fmt.Sprintf("moe=%v", moe), func(t *testing.T) {
			s := DefaultShape(moe)
			a, ra := write(t, s, 42)
			b, rb := write(t, s, 42)
			c, rc := write(t, s, 43)
			for _, name := range []string{ConfigName, WeightsName} {
				if !bytes.Equal(readFile(t, filepath.Join(a, name)), readFile(t, filepath.Join(b, name))) {
					t.Errorf("%s differs between two writes with seed 42", name)
				}
			}
			if !reflect.DeepEqual(ra.Files, rb.Files) {
				t.Errorf("results differ for the same seed: %+v vs %+v", ra.Files, rb.Files)
			}
			if bytes.Equal(readFile(t, filepath.Join(a, WeightsName)), readFile(t, filepath.Join(c, WeightsName))) {
				t.Error("seeds 42 and 43 give identical weights")
			}
			if ra.Files[1].SHA256 == rc.Files[1].SHA256 {
				t.Error("seeds 42 and 43 report identical weight hashes")
			}
			for _, f := range ra.Files {
				info, err := os.Stat(filepath.Join(a, f.Path))
				if err != nil {
					t.Fatal(err)
				}
				if info.Size() != f.Size || info.Mode().Perm() != 0o444 {
					t.Errorf("%s: size %d mode %v, result says %d bytes, want mode 0444", f.Path, info.Size(), info.Mode().Perm(), f.Size)
				}
			}
		})
	}
}

// TestWeightsAreStable pins the bytes of two models. A change here means
// the generator changed: give it a new GeneratorName, because models made
// from the same seed would otherwise no longer match their receipts.
func TestWeightsAreStable(t *testing.T) {
	tests := []struct {
		moe  bool
		seed uint64
		want string
	}{
		{false, 1, "388e10073f992aefc99bb178662d63da9c9157040d82bbf57997004f7f6aa02f"},
		{true, 1, "937c2ced419b87ddac64c0296526c6e42eaa18b60910a3e75a26c1f43cc4ce9e"},
	}
	for _, tt := range tests {
		_, res := write(t, DefaultShape(tt.moe), tt.seed)
		if got := res.Files[1].SHA256; got != tt.want {
			t.Errorf("moe=%v seed %d: model.safetensors sha256 %s, want %s", tt.moe, tt.seed, got, tt.want)
		}
	}
}

func wantTensors(s Shape) map[string][]int64 {
	h, v, in, d := int64(s.Hidden), int64(s.Vocab), int64(s.Intermediate), int64(s.HeadDim())
	q, kv := int64(s.Heads)*d, int64(s.KVHeads)*d
	want := map[string][]int64{
		"model.embed_tokens.weight": {v, h},
		"model.norm.weight":         {h},
		"lm_head.weight":            {v, h},
	}
	for i := 0; i < s.Layers; i++ {
		p := fmt.Sprintf("model.layers.%d.", i)
		want[p+"input_layernorm.weight"] = []int64{h}
		want[p+"post_attention_layernorm.weight"] = []int64{h}
		want[p+"self_attn.q_proj.weight"] = []int64{q, h}
		want[p+"self_attn.k_proj.weight"] = []int64{kv, h}
		want[p+"self_attn.v_proj.weight"] = []int64{kv, h}
		want[p+"self_attn.o_proj.weight"] = []int64{h, q}
		if !s.MoE {
			want[p+"mlp.gate_proj.weight"] = []int64{in, h}
			want[p+"mlp.up_proj.weight"] = []int64{in, h}
			want[p+"mlp.down_proj.weight"] = []int64{h, in}
			continue
		}
		want[p+"block_sparse_moe.gate.weight"] = []int64{int64(s.Experts), h}
		for e := 0; e < s.Experts; e++ {
			ep := fmt.Sprintf("%sblock_sparse_moe.experts.%d.", p, e)
			want[ep+"w1.weight"] = []int64{in, h}
			want[ep+"w3.weight"] = []int64{in, h}
			want[ep+"w2.weight"] = []int64{h, in}
		}
	}
	return want
}

func openWeights(t *testing.T, dir string) *safetensors.File {
	t.Helper()
	fh, err := os.Open(filepath.Join(dir, WeightsName))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fh.Close() })
	info, err := fh.Stat()
	if err != nil {
		t.Fatal(err)
	}
	f, err := safetensors.Read(fh, info.Size())
	if err != nil {
		t.Fatalf("reading %s: %v", WeightsName, err)
	}
	return f
}

func TestSafetensorsHoldsEveryTensorWithItsDeclaredLength(t *testing.T) {
	shapes := map[string]Shape{
		"llama default":   DefaultShape(false),
		"mixtral default": DefaultShape(true),
		"llama odd sizes": {Layers: 3, Hidden: 48, Heads: 6, KVHeads: 3, Intermediate: 100, Vocab: 97, MaxPositions: 512},
		"mixtral top-1":   {Layers: 1, Hidden: 32, Heads: 2, KVHeads: 1, Intermediate: 40, Vocab: 50, MaxPositions: 64, MoE: true, Experts: 3, TopK: 1},
	}
	for name, s := range shapes {
		t.Run(name, func(t *testing.T) {
			dir, res := write(t, s, 5)
			raw := readFile(t, filepath.Join(dir, WeightsName))
			n := binary.LittleEndian.Uint64(raw[:8])
			if (8+n)%8 != 0 {
				t.Errorf("data section starts at %d, not 8-byte aligned", 8+n)
			}
			f := openWeights(t, dir)
			if got := f.Header.Metadata; !reflect.DeepEqual(got, map[string]string{"format": "pt"}) {
				t.Errorf("metadata %v, want {format: pt}", got)
			}
			want := wantTensors(s)
			got := make(map[string][]int64)
			var params int64
			for _, e := range f.Header.Tensors {
				got[e.Name] = e.Shape
				if e.DType != safetensors.BF16 {
					t.Errorf("%s: dtype %s, want BF16", e.Name, e.DType)
				}
				if e.End-e.Begin != e.Elements()*2 {
					t.Errorf("%s: %d bytes for %d BF16 elements", e.Name, e.End-e.Begin, e.Elements())
				}
				data, err := f.TensorData(e.Name)
				if err != nil || int64(len(data)) != e.Elements()*2 {
					t.Errorf("%s: read %d bytes (%v), want %d", e.Name, len(data), err, e.Elements()*2)
				}
				params += e.Elements()
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("tensors\n got %v\nwant %v", got, want)
			}
			if params != res.Parameters || len(f.Header.Tensors) != res.Tensors {
				t.Errorf("file has %d tensors, %d parameters; result says %d, %d", len(f.Header.Tensors), params, res.Tensors, res.Parameters)
			}
		})
	}
}

func TestConfigJSONDescribesTheModel(t *testing.T) {
	for _, moe := range []bool{false, true} {
		s := DefaultShape(moe)
		dir, _ := write(t, s, 9)
		var c map[string]any
		if err := json.Unmarshal(readFile(t, filepath.Join(dir, ConfigName)), &c); err != nil {
			t.Fatal(err)
		}
		want := map[string]any{
			"model_type": "llama", "hidden_size": 64.0, "intermediate_size": 128.0,
			"num_attention_heads": 4.0, "num_key_value_heads": 2.0, "num_hidden_layers": 2.0,
			"vocab_size": 256.0, "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "head_dim": 16.0,
			"max_position_embeddings": 2048.0, "torch_dtype": "bfloat16", "tie_word_embeddings": false,
			"hidden_act": "silu",
		}
		if moe {
			want["model_type"] = "mixtral"
			want["num_local_experts"] = 4.0
			want["num_experts_per_tok"] = 2.0
		} else if _, ok := c["num_local_experts"]; ok {
			t.Error("dense config has num_local_experts")
		}
		for k, v := range want {
			if c[k] != v {
				t.Errorf("moe=%v: config %s = %v, want %v", moe, k, c[k], v)
			}
		}
		origin, _ := c["cacheon_test_model"].(map[string]any)
		if origin["generator"] != GeneratorName || origin["seed"] != 9.0 {
			t.Errorf("cacheon_test_model = %v, want generator %s seed 9", origin, GeneratorName)
		}
	}
}

// decode returns the float values of a BF16 tensor.
func decode(data []byte) []float64 {
	out := make([]float64, len(data)/2)
	for i := range out {
		out[i] = float64(safetensors.Float32FromBF16(binary.LittleEndian.Uint16(data[2*i:])))
	}
	return out
}

func meanStd(v []float64) (float64, float64) {
	var sum, sq float64
	for _, x := range v {
		sum += x
	}
	mean := sum / float64(len(v))
	for _, x := range v {
		sq += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(sq / float64(len(v)))
}

// TestWeightsAreNotPeaked checks the value distribution: matrices, the
// embedding and the head included, have std 0.02; norm weights sit at 1.
func TestWeightsAreNotPeaked(t *testing.T) {
	s := DefaultShape(false)
	s.Vocab = 1024 // 65,536 embedding values: the std estimate is within 0.5 %
	dir, _ := write(t, s, 3)
	f := openWeights(t, dir)
	for _, e := range f.Header.Tensors {
		data, err := f.TensorData(e.Name)
		if err != nil {
			t.Fatal(err)
		}
		v := decode(data)
		mean, std := meanStd(v)
		if strings.HasSuffix(e.Name, "norm.weight") {
			if math.Abs(mean-1) > 0.01 || std > 0.03 {
				t.Errorf("%s: mean %.4f std %.4f, want about 1 and 0.02", e.Name, mean, std)
			}
			continue
		}
		tol := 4 * 0.02 / math.Sqrt(2*float64(len(v))) // four standard errors
		if math.Abs(std-0.02) > tol+0.0002 || math.Abs(mean) > 4*0.02/math.Sqrt(float64(len(v))) {
			t.Errorf("%s: mean %.5f std %.5f over %d values, want 0 and 0.02", e.Name, mean, std, len(v))
		}
		for _, x := range v {
			if math.Abs(x) > 6*0.02*1.01 {
				t.Fatalf("%s: value %g beyond the generator's ±6σ bound", e.Name, x)
			}
		}
	}
}

func TestShapeValidate(t *testing.T) {
	ok := DefaultShape(false)
	tests := []struct {
		name  string
		edit  func(*Shape)
		field string
	}{
		{"zero layers", func(s *Shape) { s.Layers = 0 }, "num_hidden_layers"},
		{"negative hidden", func(s *Shape) { s.Hidden = -64 }, "hidden_size"},
		{"huge vocab", func(s *Shape) { s.Vocab = 1 << 30 }, "vocab_size"},
		{"hidden not divisible by heads", func(s *Shape) { s.Heads = 3 }, "num_attention_heads"},
		{"odd head dim", func(s *Shape) { s.Hidden = 60; s.Heads = 4; s.KVHeads = 4 }, "even"},
		{"heads not divisible by kv heads", func(s *Shape) { s.KVHeads = 3 }, "num_key_value_heads"},
		{"experts without moe", func(s *Shape) { s.Experts = 4 }, "MoE"},
		{"moe without experts", func(s *Shape) { s.MoE = true; s.TopK = 1 }, "num_local_experts"},
		{"top-k above experts", func(s *Shape) { s.MoE = true; s.Experts = 2; s.TopK = 3 }, "num_experts_per_tok"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := ok
			tt.edit(&s)
			err := s.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.field) {
				t.Fatalf("Validate() = %v, want an error naming %q", err, tt.field)
			}
			if _, werr := Write(filepath.Join(t.TempDir(), "m"), s, 1); werr == nil {
				t.Fatal("Write accepted an invalid shape")
			}
		})
	}
	if err := ok.Validate(); err != nil {
		t.Fatalf("default shape: %v", err)
	}
}

func TestWriteRefusesNonEmptyOutputAndLeavesNothingBehind(t *testing.T) {
	parent := t.TempDir()
	full := filepath.Join(parent, "full")
	os.Mkdir(full, 0o755)
	os.WriteFile(filepath.Join(full, "keep.txt"), []byte("x"), 0o644)
	file := filepath.Join(parent, "file")
	os.WriteFile(file, []byte("x"), 0o644)

	for _, out := range []string{full, file} {
		if _, err := Write(out, DefaultShape(false), 1); !errors.Is(err, ErrOutputExists) {
			t.Errorf("Write(%s) = %v, want ErrOutputExists", out, err)
		}
	}
	if got := readFile(t, filepath.Join(full, "keep.txt")); string(got) != "x" {
		t.Errorf("existing file changed to %q", got)
	}
	if _, err := Write(filepath.Join(parent, "missing", "model"), DefaultShape(false), 1); err == nil {
		t.Error("Write into a missing parent succeeded")
	}

	empty := filepath.Join(parent, "empty")
	os.Mkdir(empty, 0o755)
	if _, err := Write(empty, DefaultShape(false), 1); err != nil {
		t.Fatalf("Write into an empty directory: %v", err)
	}
	entries, _ := os.ReadDir(parent)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := []string{"empty", "file", "full"}; !reflect.DeepEqual(names, want) {
		t.Errorf("parent holds %v, want %v (no temporary directories)", names, want)
	}
}

// pythonCrossCheck reads the file with plain Python and torch: the header
// with json and struct, the data with torch.frombuffer. It also recomputes
// the first values of one tensor from the generator's written definition,
// with no Go code involved.
const pythonCrossCheck = `
import hashlib, json, struct, sys, torch
path, seed, names = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
raw = open(path, "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
header = json.loads(raw[8:8 + n])
data = raw[8 + n:]
out = {"sums": {}, "generated": {}, "stored": {}}
for key, e in header.items():
    if key == "__metadata__":
        continue
    begin, end = e["data_offsets"]
    t = torch.frombuffer(bytearray(data[begin:end]), dtype=torch.bfloat16).reshape(e["shape"])
    out["sums"][key] = t.double().sum().item()

M = (1 << 64) - 1
def splitmix(key, c):
    z = (key + (c + 1) * 0x9e3779b97f4a7c15) & M
    z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & M
    z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & M
    return z ^ (z >> 31)
for name in names:
    key = int.from_bytes(hashlib.sha256(b"cacheon.test-model.v1\x00" + seed.to_bytes(8, "little") + name.encode()).digest()[:8], "little")
    bits = []
    for j in range(64):
        s = 0
        for c in range(6 * j, 6 * j + 6):
            w = splitmix(key, c)
            s += (w & 0xffffffff) + (w >> 32)
        z = (s - 6 * 2**32) * 2.0**-32
        v = z * 0.02
        if name.endswith("norm.weight"):
            v = 1 + v
        f = struct.unpack("<I", struct.pack("<f", v))[0]
        bits.append((f + 0x7fff + ((f >> 16) & 1)) >> 16)
    out["generated"][name] = bits
    begin, end = header[name]["data_offsets"]
    out["stored"][name] = list(struct.unpack("<64H", data[begin:begin + 128]))
print(json.dumps(out))
`

func TestPythonTorchReadsTheSameTensors(t *testing.T) {
	const python = "/usr/bin/python3"
	if err := exec.Command(python, "-c", "import torch").Run(); err != nil {
		t.Skipf("%s cannot import torch: %v", python, err)
	}
	const seed = 11
	dir, _ := write(t, DefaultShape(true), seed)
	f := openWeights(t, dir)
	names := []string{"model.layers.1.block_sparse_moe.experts.2.w3.weight", "model.norm.weight", "lm_head.weight"}
	args := append([]string{"-c", pythonCrossCheck, filepath.Join(dir, WeightsName), strconv.Itoa(seed)}, names...)
	out, err := exec.Command(python, args...).Output()
	if err != nil {
		t.Fatalf("python: %v", err)
	}
	var got struct {
		Sums      map[string]float64
		Generated map[string][]uint16
		Stored    map[string][]uint16
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("python output %q: %v", out, err)
	}
	if len(got.Sums) != len(f.Header.Tensors) {
		t.Errorf("python sees %d tensors, Go %d", len(got.Sums), len(f.Header.Tensors))
	}
	for _, e := range f.Header.Tensors {
		data, _ := f.TensorData(e.Name)
		var sum float64
		for _, x := range decode(data) {
			sum += x
		}
		if py, ok := got.Sums[e.Name]; !ok || math.Abs(py-sum) > 1e-9*math.Max(1, math.Abs(sum)) {
			t.Errorf("%s: torch sum %v, Go sum %v", e.Name, py, sum)
		}
	}
	for _, name := range names {
		data, _ := f.TensorData(name)
		if len(got.Generated[name]) != 64 || len(got.Stored[name]) != 64 {
			t.Fatalf("%s: python returned %d generated, %d stored values, want 64", name, len(got.Generated[name]), len(got.Stored[name]))
		}
		for j := 0; j < 64; j++ {
			want := binary.LittleEndian.Uint16(data[2*j:])
			if g, st := got.Generated[name][j], got.Stored[name][j]; g != want || st != want {
				t.Fatalf("%s element %d: Python generator %#04x, Python read %#04x, Go wrote %#04x", name, j, g, st, want)
			}
		}
	}
}
