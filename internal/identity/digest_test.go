package identity

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

const (
	hex64  = "2d88663189776a8721b7c7aa0f57c8a9d54e6f0b8671e552a5a718c2cfc64a20"
	hex128 = hex64 + hex64
)

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		want    Digest // zero when the input must be refused
		wantErr string // a fragment of the error
	}{
		{"bare sha256", hex64, Digest{SHA256, hex64}, ""},
		{"all-zero sha256 parses (record types refuse it themselves)", strings.Repeat("0", 64), Digest{SHA256, strings.Repeat("0", 64)}, ""},
		{"sha512", "sha512:" + hex128, Digest{SHA512, hex128}, ""},
		{"prefixed sha256 is not the canonical form", "sha256:" + hex64, Digest{}, "bare hex"},
		{"empty", "", Digest{}, "has 0 characters"},
		{"short", hex64[:63], Digest{}, "has 63 characters, want 64"},
		{"long", hex64 + "0", Digest{}, "has 65 characters, want 64"},
		{"uppercase", strings.ToUpper(hex64), Digest{}, "not lowercase hex"},
		{"non-hex", "g" + hex64[1:], Digest{}, "not lowercase hex"},
		{"unknown algorithm", "md5:" + hex64[:32], Digest{}, "unknown algorithm"},
		{"empty algorithm", ":" + hex64, Digest{}, "unknown algorithm"},
		{"sha512 of sha256 length", "sha512:" + hex64, Digest{}, "want 128"},
		{"two colons", "sha512:" + hex128 + ":", Digest{}, "has 129 characters"},
		{"surrounding space", " " + hex64, Digest{}, "has 65 characters"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := Parse(tc.in)
			if tc.wantErr != "" {
				if err == nil {
					t.Fatalf("Parse(%q) = %v, want an error containing %q", tc.in, got, tc.wantErr)
				}
				if !errors.Is(err, ErrInvalidDigest) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Parse(%q) error = %v, want ErrInvalidDigest containing %q", tc.in, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.in, err)
			}
			if got != tc.want {
				t.Fatalf("Parse(%q) = %#v, want %#v", tc.in, got, tc.want)
			}
			if s := got.String(); s != tc.in {
				t.Fatalf("Parse(%q).String() = %q, want the input back", tc.in, s)
			}
		})
	}
}

func TestNewDigest(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		algorithm string
		hex       string
		wantErr   bool
	}{
		{"sha256", SHA256, hex64, false},
		{"sha512", SHA512, hex128, false},
		{"sha256 with sha512 length", SHA256, hex128, true},
		{"uppercase algorithm", "SHA256", hex64, true},
		{"empty", "", "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d, err := NewDigest(tc.algorithm, tc.hex)
			if (err != nil) != tc.wantErr {
				t.Fatalf("NewDigest(%q, %q) = %v, %v; want error %v", tc.algorithm, tc.hex, d, err, tc.wantErr)
			}
			if err == nil && (d.Algorithm != tc.algorithm || d.Hex != tc.hex) {
				t.Fatalf("NewDigest(%q, %q) = %#v", tc.algorithm, tc.hex, d)
			}
		})
	}
}

// A Digest must be interchangeable with the hex string it replaces in a
// JSON document: same bytes as a value and as an object key.
func TestDigestJSONKeepsTheWireBytes(t *testing.T) {
	t.Parallel()
	a, b := MustParse(hex64), MustParse("sha512:"+hex128)
	type record struct {
		Digest Digest            `json:"digest"`
		ByKey  map[Digest]string `json:"by_key"`
	}
	in := record{Digest: a, ByKey: map[Digest]string{a: "a", b: "b"}}
	got, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"digest":"` + hex64 + `","by_key":{"` + hex64 + `":"a","sha512:` + hex128 + `":"b"}}`
	if string(got) != want {
		t.Fatalf("json.Marshal = %s\nwant           %s", got, want)
	}
	var out record
	if err := json.Unmarshal(got, &out); err != nil {
		t.Fatal(err)
	}
	if out.Digest != in.Digest || len(out.ByKey) != 2 || out.ByKey[a] != "a" || out.ByKey[b] != "b" {
		t.Fatalf("round trip = %#v, want %#v", out, in)
	}
}

func TestDigestJSONRefusals(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		do   func() error
	}{
		{"marshal the zero digest", func() error { _, err := json.Marshal(Digest{}); return err }},
		{"marshal a digest built without NewDigest", func() error { _, err := json.Marshal(Digest{SHA256, "abc"}); return err }},
		{"unmarshal a short digest", func() error { var d Digest; return json.Unmarshal([]byte(`"abc"`), &d) }},
		{"unmarshal a prefixed sha256", func() error { var d Digest; return json.Unmarshal([]byte(`"sha256:`+hex64+`"`), &d) }},
		{"unmarshal a number", func() error { var d Digest; return json.Unmarshal([]byte(`12`), &d) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if err := tc.do(); err == nil {
				t.Fatal("succeeded, want an error")
			}
		})
	}
}

func TestDigestZeroValue(t *testing.T) {
	t.Parallel()
	var d Digest
	if !d.IsZero() || d.String() != "" {
		t.Fatalf("zero Digest: IsZero %v, String %q; want true and empty", d.IsZero(), d.String())
	}
	if MustParse(strings.Repeat("0", 64)).IsZero() {
		t.Fatal("the all-zero hex digest reports IsZero; IsZero means no digest at all")
	}
}

// H's result is the same identity whichever way it is spelled: the typed
// digest prints the hex the upstream golden pins.
func TestHReturnsAParsableDigest(t *testing.T) {
	t.Parallel()
	d := MustH("x", map[string]any{"a": nil, "b": []any{1, "é"}})
	if d.Algorithm != SHA256 || d.String() != hex64 {
		t.Fatalf("MustH = %#v, want sha256 %s", d, hex64)
	}
	if p := MustParse(d.String()); p != d {
		t.Fatalf("Parse(String()) = %#v, want %#v", p, d)
	}
}

// FuzzParseDigest checks that whatever Parse accepts has exactly one text
// form: String gives the input back, MarshalText agrees with String, and
// NewDigest rebuilds the same value from its parts.
func FuzzParseDigest(f *testing.F) {
	for _, s := range []string{hex64, "sha512:" + hex128, "sha256:" + hex64, "", ":", "md5:00", strings.ToUpper(hex64)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := Parse(s)
		if err != nil {
			if !errors.Is(err, ErrInvalidDigest) {
				t.Fatalf("Parse(%q) error %v is not an ErrInvalidDigest", s, err)
			}
			return
		}
		if d.String() != s {
			t.Fatalf("Parse(%q).String() = %q", s, d.String())
		}
		text, err := d.MarshalText()
		if err != nil || string(text) != s {
			t.Fatalf("MarshalText of Parse(%q) = %q, %v", s, text, err)
		}
		var back Digest
		if err := back.UnmarshalText(text); err != nil || back != d {
			t.Fatalf("UnmarshalText(%q) = %#v, %v; want %#v", text, back, err, d)
		}
		if rebuilt, err := NewDigest(d.Algorithm, d.Hex); err != nil || rebuilt != d {
			t.Fatalf("NewDigest(%q, %q) = %#v, %v; want %#v", d.Algorithm, d.Hex, rebuilt, err, d)
		}
	})
}
