package bundle

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Hostile shapes of the attack review: small texts that made loading
// quadratic or huge. Each builder returns a document of about n bytes or
// n units (rows, keys, values) of the shape.
func variantRows(slots, variants int) string {
	var b strings.Builder
	b.WriteString(header)
	for s := 0; s < slots; s++ {
		for v := 0; v < variants; v++ {
			fmt.Fprintf(&b, "\n[[ops]]\nslot = \"slot.s%d\"\nvariant = \"v%d\"\nsource = \"k.py\"\nentry = \"f\"\n", s, v)
		}
	}
	return b.String()
}

func keysInOneTable(n int) string {
	var b strings.Builder
	b.WriteString(header + siluOp)
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "x%d = 1\n", i)
	}
	return b.String()
}

func distinctTables(n int) string {
	var b strings.Builder
	b.WriteString(header + siluOp)
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "[t%d]\nk = 1\n", i)
	}
	return b.String()
}

// heldKeysThenElements holds keys in many array-table elements at once,
// then starts n elements of another array: the decoder rescans every key
// it holds for each new element.
func heldKeysThenElements(arrays, keys, n int) string {
	var b strings.Builder
	b.WriteString(header + siluOp)
	for a := 0; a < arrays; a++ {
		fmt.Fprintf(&b, "[[b%d]]\n", a)
		for k := 0; k < keys; k++ {
			fmt.Fprintf(&b, "k%d = 1\n", k)
		}
	}
	b.WriteString(strings.Repeat("[[a]]\n", n))
	return b.String()
}

func dottedKey(components int) string {
	return header + siluOp + "x" + strings.Repeat(".a", components) + " = 1\n"
}

// metadataLongKeyOverArray is one long key above a long array: building
// every element's JSON path by concatenation copied the key per element.
func metadataLongKeyOverArray(keyBytes, elements int) []byte {
	return []byte(`{"notes": {"` + strings.Repeat("k", keyBytes) + `": [` + strings.TrimSuffix(strings.Repeat("0,", elements), ",") + `]}}`)
}

func metadataOneOf(values int) []byte {
	var b strings.Builder
	b.WriteString(`{"capabilities": {"head_dim": [`)
	for i := 0; i < values; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%d", i)
	}
	b.WriteString("]}}")
	return []byte(b.String())
}

func TestParseLimits(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want string
	}{
		{"manifest over the size limit", header + siluOp + "# " + strings.Repeat("x", MaxManifestBytes) + "\n", "at most 1048576 are allowed"},
		{"dotted key deeper than the key depth", dottedKey(100_000), "components"},
		{"table header deeper than the key depth", header + siluOp + "[x" + strings.Repeat(".a", MaxTOMLKeyDepth) + "]\n", "more than 16 components"},
		{"long key component", header + siluOp + strings.Repeat("k", MaxTOMLKeyBytes+1) + " = 1\n", "a key component is 257 bytes"},
		{"many keys in one table", keysInOneTable(MaxTOMLLiveKeys + 1), "distinct keys held at once"},
		{"many distinct tables", distinctTables(MaxTOMLLiveKeys), "distinct keys held at once"},
		{"many keys in an inline table", header + siluOp + "x = {" + inlineKeys(MaxTOMLLiveKeys+1) + "}\n", "distinct keys held at once"},
		{"keys held across array tables", heldKeysThenElements(2, MaxTOMLLiveKeys/2, 10), "distinct keys held at once"},
		{"array-table headers over the limit", header + siluOp + strings.Repeat("[[a]]\n", MaxTOMLArrayTables+1), "more than 16384 array-table headers"},
		{"deeply nested arrays", header + siluOp + "x = " + strings.Repeat("[", MaxTOMLValueDepth+1) + strings.Repeat("]", MaxTOMLValueDepth+1) + "\n", "nest more than 32 levels"},
		{"more op rows than allowed", variantRows(MaxOps/MaxVariantsPerSlot+1, MaxVariantsPerSlot), "op rows; at most 256"},
		{"more variants of one slot than allowed", variantRows(1, MaxVariantsPerSlot+1), "more than 64 variants"},
		{"manifest dtypes list over the value limit", header + siluOp + "dtypes = [" + strings.Repeat(`"bf16", `, MaxPredicateValues+1) + "]\n", "at most 4096 are allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.doc), FileName)
			if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want an intake-limit rejection mentioning %q", err, tt.want)
			}
			if !strings.HasPrefix(err.Error(), FileName) {
				t.Errorf("error %q does not name %s", err, FileName)
			}
		})
	}
}

func inlineKeys(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf("k%d = 1", i)
	}
	return strings.Join(parts, ", ")
}

// TestParseWithinLimitsAccepts keeps the limits from refusing the shapes
// real manifests have at their largest.
func TestParseWithinLimitsAccepts(t *testing.T) {
	for name, doc := range map[string]string{
		"MaxOps rows of MaxVariantsPerSlot variants": variantRows(MaxOps/MaxVariantsPerSlot, MaxVariantsPerSlot),
		"keys up to the live-key limit":              keysInOneTable(MaxTOMLLiveKeys - 64),
		"a key at the depth limit":                   header + siluOp + "[a.b.c.d]\n" + "x" + strings.Repeat(".a", MaxTOMLKeyDepth-5) + " = 1\n",
		"many rows each with subtables":              variantRows(1, MaxVariantsPerSlot) + "[ops.extra]\nk = 1\n",
	} {
		if _, err := Parse([]byte(doc), FileName); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestMetadataLimits(t *testing.T) {
	tests := []struct {
		name string
		doc  []byte
		want string
	}{
		{"one_of over the value limit", metadataOneOf(MaxPredicateValues + 1), "one_of has 4097 values"},
		{"integer longer than Python parses", []byte(`{"max_last_dim": ` + strings.Repeat("9", MaxIntegerDigits+1) + `}`), "must be a non-negative integer"},
		{"dtypes list over the value limit", []byte(`{"dtypes": [` + strings.TrimSuffix(strings.Repeat(`"bf16",`, MaxPredicateValues+1), ",") + `]}`), "at most 4096 are allowed"},
		{"nested deeper than the JSON depth", []byte(strings.Repeat(`{"a":`, MaxJSONDepth+2) + "1" + strings.Repeat("}", MaxJSONDepth+2)), "nested deeper than 256 levels"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseMetadata("metadata/m.json", tt.doc)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want a rejection mentioning %q", err, tt.want)
			}
			if len(err.Error()) > 512 {
				t.Errorf("error quotes %d bytes of hostile input", len(err.Error()))
			}
		})
	}
}

// TestLoadReadsEveryParsedFileThroughItsLimit grows parsed files past
// their limits: Load must refuse them by size, before a parser runs.
func TestLoadReadsEveryParsedFileThroughItsLimit(t *testing.T) {
	base := map[string]string{
		"manifest.toml":   header + "\n[[ops]]\nslot = \"s\"\nsource = \"k.py\"\nentry = \"f\"\nmetadata = \"metadata/m.json\"\n",
		"k.py":            "def f(x, out):\n    pass\n",
		"metadata/m.json": "{}",
	}
	tests := []struct {
		name, rel, content string
		class              error
	}{
		{"metadata", "metadata/m.json", `{"notes": "` + strings.Repeat("x", MaxMetadataBytes) + `"}`, ErrMetadata},
		{"rebuild plan", RebuildPlanName, `{"steps": [], "pad": "` + strings.Repeat("x", MaxRebuildPlanBytes) + `"}`, ErrLimit},
		{"manifest", FileName, base["manifest.toml"] + "# " + strings.Repeat("x", MaxManifestBytes) + "\n", ErrLimit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := map[string]string{}
			for k, v := range base {
				files[k] = v
			}
			files[tt.rel] = tt.content
			_, err := Load(writeBundle(t, files))
			if !errors.Is(err, tt.class) || !strings.Contains(err.Error(), tt.rel) || !strings.Contains(err.Error(), "are allowed") {
				t.Fatalf("err = %v, want a %v size rejection naming %s", err, tt.class, tt.rel)
			}
		})
	}
}

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestMetadataAllocationGrowsLinearly compares the bytes allocated for a
// hostile metadata shape at n and 4n bytes (key and array both grow):
// linear code allocates about 4 times as much, the per-element path
// concatenation it replaced 16 times.
func TestMetadataAllocationGrowsLinearly(t *testing.T) {
	small := metadataLongKeyOverArray(8<<10, 4<<10)
	large := metadataLongKeyOverArray(32<<10, 16<<10)
	parse := func(doc []byte) func() {
		return func() {
			if _, err := parseMetadata("m.json", doc); err != nil {
				t.Fatal(err)
			}
		}
	}
	a, b := allocated(parse(small)), allocated(parse(large))
	if ratio := float64(b) / float64(a); ratio > 6 {
		t.Fatalf("4x the elements allocated %.1fx the bytes (%d vs %d); want about 4x", ratio, b, a)
	}
}

// TestParseAllocationGrowsLinearly does the same for manifest rows.
func TestParseAllocationGrowsLinearly(t *testing.T) {
	parse := func(doc string) func() {
		return func() {
			if _, err := Parse([]byte(doc), FileName); err != nil {
				t.Fatal(err)
			}
		}
	}
	a := allocated(parse(variantRows(1, MaxVariantsPerSlot)))
	b := allocated(parse(variantRows(4, MaxVariantsPerSlot)))
	if ratio := float64(b) / float64(a); ratio > 6 {
		t.Fatalf("4x the rows allocated %.1fx the bytes (%d vs %d); want about 4x", ratio, b, a)
	}
}

func writeTemp(t testing.TB, name string, data []byte) string {
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
