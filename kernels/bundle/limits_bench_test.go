package bundle

import (
	"fmt"
	"math/big"
	"testing"
)

// The hostile shapes of the attack review at three sizes each, 2x apart:
// linear loading shows cost growing with size; quadratic loading, 4x per
// step. Run with
//
//	go test -run '^$' -bench 'Hostile|WithinLimits' -benchmem ./tools/manifest
//
// Shapes past a limit are rejected, and the benchmark measures the
// rejection.
func BenchmarkHostile(b *testing.B) {
	for _, n := range []int{16 << 10, 32 << 10, 64 << 10} {
		doc := metadataOneOf(n)
		b.Run(fmt.Sprintf("metadata_one_of/values=%d", n), benchMetadata(doc))
	}
	for _, n := range []int{64 << 10, 128 << 10, 256 << 10} {
		doc := metadataLongKeyOverArray(n/2, n/4)
		b.Run(fmt.Sprintf("metadata_long_key_over_array/bytes=%d", len(doc)), benchMetadata(doc))
	}
	for _, n := range []int{2000, 4000, 8000} {
		b.Run(fmt.Sprintf("variant_rows/rows=%d", n), benchParse(variantRows(1, n)))
	}
	for _, n := range []int{2000, 4000, 8000} {
		b.Run(fmt.Sprintf("table_keys/keys=%d", n), benchParse(keysInOneTable(n)))
	}
	for _, n := range []int{4 << 10, 8 << 10, 16 << 10} {
		// Keys held just under the limit, then many array-table elements
		// (the last size is past MaxTOMLArrayTables).
		b.Run(fmt.Sprintf("held_keys_then_elements/elements=%d", n), benchParse(heldKeysThenElements(1, MaxTOMLLiveKeys-64, n)))
	}
	for _, n := range []int{64 << 10, 128 << 10, 256 << 10} {
		b.Run(fmt.Sprintf("dotted_key/components=%d", n), benchParse(dottedKey(n)))
	}
}

// BenchmarkWithinLimits measures accepted inputs up to the limits: rows
// (slots of 64 variants with disjoint metadata domains) parsed and checked
// for overlap, and one_of predicates.
func BenchmarkWithinLimits(b *testing.B) {
	for _, slots := range []int{1, 2, 4} {
		text := variantRows(slots, 64)
		b.Run(fmt.Sprintf("rows_and_variant_domains/rows=%d", slots*64), func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				m, err := Parse([]byte(text), FileName)
				if err != nil {
					b.Fatal(err)
				}
				for j := range m.Ops {
					lo := big.NewInt(int64(j%64) * 100)
					m.Ops[j].MetadataDoc = &Metadata{MinNumTokens: lo, MaxNumTokens: new(big.Int).Add(lo, big.NewInt(99))}
				}
				if err := CheckVariantDomains(m); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	for _, n := range []int{1 << 10, 2 << 10, 4 << 10} {
		b.Run(fmt.Sprintf("metadata_one_of/values=%d", n), benchMetadata(metadataOneOf(n)))
	}
}

func benchMetadata(doc []byte) func(*testing.B) {
	return func(b *testing.B) {
		b.SetBytes(int64(len(doc)))
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			parseMetadata("metadata/m.json", doc)
		}
	}
}

func benchParse(text string) func(*testing.B) {
	data := []byte(text)
	return func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			Parse(data, FileName)
		}
	}
}
