package bundle

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkParse measures manifest.toml parsing and validation alone (no
// file system): one row, and 64 variant rows with metadata paths.
func BenchmarkParse(b *testing.B) {
	var big strings.Builder
	big.WriteString(header)
	for i := 0; i < 64; i++ {
		fmt.Fprintf(&big, "\n[[ops]]\nslot = \"activation.silu_and_mul\"\nvariant = \"v%02d\"\nsource = \"kernels/k%02d.py\"\nentry = \"silu_and_mul\"\ndtypes = [\"bfloat16\", \"float16\"]\nmetadata = \"metadata/k%02d.json\"\n", i, i, i)
	}
	for _, c := range []struct{ name, text string }{{"one_op", header + siluOp}, {"64_variants", big.String()}} {
		b.Run(c.name, func(b *testing.B) {
			data := []byte(c.text)
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := Parse(data, FileName); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func FuzzParseMetadata(f *testing.F) {
	f.Add([]byte(`{"dtypes": ["bf16"], "max_last_dim": 4096, "capabilities": {"head_dim": [64, 128], "num_tokens": {"min": 1}}}`))
	f.Add([]byte(`{"graph_safe": true, "quant": ["nvfp4"], "capabilities": {"model": "M"}}`))
	f.Add([]byte(`{"capabilities": {"num_tokens": {"min": 1, "max": 99999999999999999999999}, "dtype": {"one_of": ["bf16", "fp16", "bf16"]}}, "notes": {"x": [1.5, {"y": null}]}}`))
	f.Add(metadataLongKeyOverArray(64, 16))
	f.Fuzz(func(t *testing.T, data []byte) {
		md, err := parseMetadata("m.json", data)
		if err != nil {
			return
		}
		out, err := md.CanonicalBytes()
		if err != nil {
			t.Fatal(err)
		}
		// The projection is itself valid metadata and a fixed point.
		again, err := parseMetadata("m.json", out)
		if err != nil {
			t.Fatalf("projection %q does not parse: %v", out, err)
		}
		out2, _ := again.CanonicalBytes()
		if string(out2) != string(out) {
			t.Fatalf("projection is not a fixed point:\n%s\n%s", out, out2)
		}
	})
}
