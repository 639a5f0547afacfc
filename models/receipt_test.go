package models

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func provision(t *testing.T, root string) *Receipt {
	t.Helper()
	r, err := Provision(root, Options{})
	if err != nil {
		t.Fatalf("Provision: %v", err)
	}
	return r
}

func TestReceiptRoundTrips(t *testing.T) {
	r := provision(t, makeTree(t, map[string]string{"config.json": "{}", "w/model-00001.safetensors": "abc", "é.txt": "é"}))
	b, err := r.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseReceipt(b)
	if err != nil {
		t.Fatalf("ParseReceipt: %v", err)
	}
	if !reflect.DeepEqual(back, r) {
		t.Errorf("round trip\n got %+v\nwant %+v", back, r)
	}
	// Formatting does not matter, only the values.
	indented := strings.ReplaceAll(string(b), ",", ",\n  ")
	if _, err := ParseReceipt([]byte(indented)); err != nil {
		t.Errorf("reformatted receipt rejected: %v", err)
	}
}

func TestParseReceiptRejects(t *testing.T) {
	r := provision(t, makeTree(t, map[string]string{"a": "1", "b/c": "2"}))
	good, _ := r.Marshal()
	h1, h2 := r.Files[0].SHA256, r.Files[1].SHA256
	tests := []struct {
		name  string
		edit  func(string) string
		field string
	}{
		{"not JSON", func(string) string { return "{" }, "invalid model provision receipt"},
		{"not an object", func(string) string { return "[]" }, "$: not a JSON object"},
		{"wrong type", func(s string) string { return strings.Replace(s, `"cacheon.model-provision"`, `"cacheon.model"`, 1) }, "type"},
		{"schema 2", func(s string) string { return strings.Replace(s, `"schema_version":1`, `"schema_version":2`, 1) }, "schema_version"},
		{"unknown field", func(s string) string {
			return strings.Replace(s, `{"content_digest"`, `{"extra":1,"content_digest"`, 1)
		}, "unknown field(s) extra"},
		{"missing field", func(s string) string { return strings.Replace(s, `"schema_version":1,`, ``, 1) }, "missing field(s) schema_version"},
		{"uppercase digest", func(s string) string { return strings.Replace(s, r.ContentDigest, strings.ToUpper(r.ContentDigest), 1) }, "content_digest"},
		{"content digest of other files", func(s string) string { return strings.Replace(s, h1, h2, 1) }, "is not the digest of the files"},
		{"bad sha256", func(s string) string { return strings.Replace(s, h1, h1[:63], 1) }, "files[0]: sha256"},
		{"negative size", func(s string) string { return strings.Replace(s, `"size":1`, `"size":-1`, 1) }, "files[0]: size"},
		{"float size", func(s string) string { return strings.Replace(s, `"size":1`, `"size":1.0`, 1) }, "invalid model provision receipt"},
		{"unknown file field", func(s string) string { return strings.Replace(s, `"size":1`, `"size":1,"mode":420`, 1) }, "files[0]: unknown field(s) mode"},
		{"unsorted", func(s string) string { return strings.Replace(s, `"path":"b/c"`, `"path":"0"`, 1) }, "files[1].path"},
		{"duplicate", func(s string) string { return strings.Replace(s, `"path":"b/c"`, `"path":"a"`, 1) }, "sorted by path and unique"},
		{"case collision", func(s string) string { return strings.Replace(s, `"path":"a"`, `"path":"B/C"`, 1) }, "collide when case-folded"},
		{"NFC and NFD spellings", func(s string) string {
			s = strings.Replace(s, `"path":"a"`, "\"path\":\"cafe\u0301\"", 1)
			return strings.Replace(s, `"path":"b/c"`, "\"path\":\"caf\u00e9\"", 1)
		}, "Unicode NFC normalization"},
		{"file and directory", func(s string) string { return strings.Replace(s, `"path":"b/c"`, `"path":"a/c"`, 1) }, "both a file and a directory"},
		{"dot-dot", func(s string) string { return strings.Replace(s, `"path":"b/c"`, `"path":"b/../c"`, 1) }, "not a clean relative path"},
		{"absolute", func(s string) string { return strings.Replace(s, `"path":"b/c"`, `"path":"/b/c"`, 1) }, "absolute"},
		{"empty component", func(s string) string { return strings.Replace(s, `"path":"b/c"`, `"path":"b//c"`, 1) }, "not a clean relative path"},
		{".cache", func(s string) string { return strings.Replace(s, `"path":"b/c"`, `"path":"b/.cache/c"`, 1) }, ".cache path component"},
		{"no files", func(s string) string {
			return `{"content_digest":"` + r.ContentDigest + `","files":[],"schema_version":1,"type":"cacheon.model-provision"}`
		}, "files: empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			edited := tt.edit(string(good))
			if edited == string(good) {
				t.Fatal("the edit changed nothing")
			}
			_, err := ParseReceipt([]byte(edited))
			if !errors.Is(err, ErrInvalidReceipt) || !IsRejection(err) {
				t.Fatalf("err = %v, want ErrInvalidReceipt", err)
			}
			if !strings.Contains(err.Error(), tt.field) {
				t.Errorf("err = %v, want it to mention %q", err, tt.field)
			}
		})
	}
}

func TestWriteReceiptPublishesBesideTheRootOnly(t *testing.T) {
	root := makeTree(t, map[string]string{"config.json": "{}"})
	r := provision(t, root)
	def, err := DefaultReceiptPath(root, r)
	if err != nil {
		t.Fatal(err)
	}
	d, err := r.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(filepath.Dir(root), "model-provision-sha256-"+d+".json"); def != want {
		t.Fatalf("default path %s, want %s", def, want)
	}
	if err := WriteReceipt(def, root, r); err != nil {
		t.Fatalf("WriteReceipt: %v", err)
	}
	info, err := os.Stat(def)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o444 {
		t.Errorf("receipt mode %v, want 0444", info.Mode().Perm())
	}
	back, err := ReadReceipt(def)
	if err != nil || !reflect.DeepEqual(back, r) {
		t.Fatalf("ReadReceipt = %+v, %v", back, err)
	}
	// Publishing the same receipt again is a no-op.
	if err := WriteReceipt(def, root, r); err != nil {
		t.Errorf("republishing an identical receipt: %v", err)
	}
	// The tree itself was not touched.
	if again := provision(t, root); again.ContentDigest != r.ContentDigest {
		t.Error("publishing the receipt changed the tree")
	}

	link := filepath.Join(t.TempDir(), "into-root")
	must(t, os.Symlink(root, link))
	for name, dest := range map[string]string{
		"inside":              filepath.Join(root, "receipt.json"),
		"deeper":              filepath.Join(root, ".", "config.json"),
		"the root itself":     root,
		"through a symlink":   filepath.Join(link, "receipt.json"),
		"through dot-dot":     filepath.Join(root, "..", filepath.Base(root), "r.json"),
		"checked before work": filepath.Join(root, "x.json"),
	} {
		if err := CheckReceiptDestination(dest, root); !errors.Is(err, ErrReceiptInsideRoot) {
			t.Errorf("%s: CheckReceiptDestination(%s) = %v, want ErrReceiptInsideRoot", name, dest, err)
		}
		if err := WriteReceipt(dest, root, r); !errors.Is(err, ErrReceiptInsideRoot) {
			t.Errorf("%s: WriteReceipt(%s) = %v, want ErrReceiptInsideRoot", name, dest, err)
		}
	}
	if got := provision(t, root); !reflect.DeepEqual(got.Files, r.Files) {
		t.Errorf("refused writes changed the tree: %+v", got.Files)
	}
	// A sibling whose name starts with the root's name is outside.
	sibling := root + "-receipt.json"
	if err := WriteReceipt(sibling, root, r); err != nil {
		t.Errorf("sibling %s: %v", sibling, err)
	}
}

func TestWriteReceiptNeverReplacesAnotherFile(t *testing.T) {
	root := makeTree(t, map[string]string{"config.json": "{}"})
	r := provision(t, root)
	dest := filepath.Join(filepath.Dir(root), "receipt.json")
	must(t, os.WriteFile(dest, []byte("someone else's"), 0o644))
	if err := WriteReceipt(dest, root, r); !errors.Is(err, ErrReceiptExists) {
		t.Fatalf("err = %v, want ErrReceiptExists", err)
	}
	if b, _ := os.ReadFile(dest); string(b) != "someone else's" {
		t.Errorf("existing file became %q", b)
	}
	entries, _ := os.ReadDir(filepath.Dir(root))
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
}

func FuzzParseReceipt(f *testing.F) {
	files := []File{{"a", 1, strings.Repeat("a", 64)}, {"b/c", 0, strings.Repeat("b", 64)}}
	r, _ := NewReceipt(files)
	good, _ := r.Marshal()
	f.Add(good)
	f.Add([]byte(`{"type":"cacheon.model-provision","schema_version":1,"content_digest":"x","files":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := ParseReceipt(data)
		if err != nil {
			if !IsRejection(err) {
				t.Fatalf("error %v is not a rejection", err)
			}
			return
		}
		b, err := r.Marshal()
		if err != nil {
			t.Fatalf("accepted receipt does not marshal: %v", err)
		}
		back, err := ParseReceipt(b)
		if err != nil || !reflect.DeepEqual(back, r) {
			t.Fatalf("accepted receipt does not round-trip: %v", err)
		}
	})
}

// TestReadReceiptChecksAPublishedName: a file named as a published receipt
// opens only if it holds the receipt of that digest, as upstream reopens
// it; under any other name the receipt is read as it is.
func TestReadReceiptChecksAPublishedName(t *testing.T) {
	root := makeTree(t, map[string]string{"config.json": "{}"})
	r := provision(t, root)
	d, err := r.Digest()
	if err != nil {
		t.Fatal(err)
	}
	data, err := r.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tests := []struct {
		name, file, want string
	}{
		{"named by its receipt digest", FileName(d), ""},
		{"a build's own name", "tiny_llama.receipt.json", ""},
		{"named by its content digest (this project's old name)", FileName(r.ContentDigest), "does not match the receipt's canonical digest " + d},
		{"named by another receipt's digest", FileName(strings.Repeat("0", 64)), "does not match"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, tt.file)
			if err := os.WriteFile(path, data, 0o444); err != nil {
				t.Fatal(err)
			}
			_, err := ReadReceipt(path)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.want != "" && (err == nil || !errors.Is(err, ErrInvalidReceipt) || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("error %v, want %q", err, tt.want)
			}
		})
	}
}
