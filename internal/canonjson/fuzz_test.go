package canonjson

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzParseMarshal checks that whatever Parse accepts, Marshal encodes to
// valid JSON that is a fixed point: parsing and re-encoding it gives the
// same bytes, and encoding/json reads it as the same document.
func FuzzParseMarshal(f *testing.F) {
	for _, seed := range []string{
		`{"b":[1,"é"],"a":null}`, `[]`, `{}`, `"\u0000\b\f\n\r\t\u2028"`, `-0`,
		`123456789012345678901234567890`, `{"a":{"b":{"c":[true,false,null]}}}`,
		`"\ud83d\ude00"`, `1.5`, `{"a":1,"a":2}`, `"\ud800"`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := Parse(data)
		if err != nil {
			return
		}
		enc, err := Marshal(v)
		if err != nil {
			t.Fatalf("Marshal of a parsed value failed: %v", err)
		}
		if !json.Valid(enc) {
			t.Fatalf("Marshal produced invalid JSON: %q", enc)
		}
		v2, err := Parse(enc)
		if err != nil {
			t.Fatalf("canonical output does not parse: %v (%q)", err, enc)
		}
		enc2, err := Marshal(v2)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(enc, enc2) {
			t.Fatalf("canonical form is not a fixed point:\n%q\n%q", enc, enc2)
		}
		var a, b any
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		if err := dec.Decode(&a); err != nil {
			t.Fatalf("encoding/json rejects input Parse accepted: %v", err)
		}
		dec = json.NewDecoder(bytes.NewReader(enc))
		dec.UseNumber()
		if err := dec.Decode(&b); err != nil {
			t.Fatal(err)
		}
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if !bytes.Equal(normalizeNegZero(ja), normalizeNegZero(jb)) {
			t.Fatalf("canonical form changed the document:\n%s\n%s", ja, jb)
		}
	})
}

// normalizeNegZero makes "-0" and "0" compare equal: Python reads -0 as the
// integer 0, so the canonical form drops the sign.
func normalizeNegZero(b []byte) []byte {
	b = bytes.ReplaceAll(b, []byte(":-0,"), []byte(":0,"))
	b = bytes.ReplaceAll(b, []byte(":-0}"), []byte(":0}"))
	b = bytes.ReplaceAll(b, []byte("[-0,"), []byte("[0,"))
	b = bytes.ReplaceAll(b, []byte(",-0]"), []byte(",0]"))
	b = bytes.ReplaceAll(b, []byte(",-0,"), []byte(",0,"))
	b = bytes.ReplaceAll(b, []byte("[-0]"), []byte("[0]"))
	if bytes.Equal(b, []byte("-0")) {
		return []byte("0")
	}
	return b
}
