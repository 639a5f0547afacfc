package canonjson

import (
	"fmt"
	"os"
	"testing"
)

// A catalog-sized document: the shape identities are usually computed over.
func benchDocument() map[string]any {
	files := make([]any, 0, 200)
	for i := 0; i < 200; i++ {
		files = append(files, map[string]any{
			"mode": 292, "path": fmt.Sprintf("cacheon_c_%064x/kernels/file_%03d.py", i, i),
			"role": "python", "sha256": fmt.Sprintf("%064x", i*7919), "size": i * 1024,
		})
	}
	return map[string]any{"files": files, "materializer_policy_version": 2, "note": "é漢\n\t"}
}

func BenchmarkMarshal(b *testing.B) {
	doc := benchDocument()
	enc, _ := Marshal(doc)
	b.SetBytes(int64(len(enc)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := Marshal(doc); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParse(b *testing.B) {
	enc, _ := Marshal(benchDocument())
	b.SetBytes(int64(len(enc)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := Parse(enc); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCatalogSnapshot parses and re-encodes the upstream default
// catalog snapshot, when the spec is checked out beside the repository.
func BenchmarkCatalogSnapshot(b *testing.B) {
	data, err := os.ReadFile("../../catalog/testdata/upstream-default-catalog.snapshot.json")
	if err != nil {
		b.Skip("catalog snapshot fixture not present")
	}
	b.SetBytes(int64(len(data)))
	for i := 0; i < b.N; i++ {
		v, err := Parse(data)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Marshal(v); err != nil {
			b.Fatal(err)
		}
	}
}
