package identity

import (
	"crypto/sha256"
	"math/big"
	"strings"
	"testing"

	"github.com/cacheon/engine/internal/canonjson"
)

// The upstream golden of the spec: H("x", {"b":[1,"é"],"a":null}).
func TestDigestUpstreamGolden(t *testing.T) {
	payload, err := canonjson.Parse([]byte(`{"b":[1,"é"],"a":null}`))
	if err != nil {
		t.Fatal(err)
	}
	env, err := Envelope("x", payload, 1)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"domain":"x","payload":{"a":null,"b":[1,"é"]},"schema_version":1}`; string(env) != want {
		t.Fatalf("envelope = %s, want %s", env, want)
	}
	got, err := H("x", payload)
	if err != nil {
		t.Fatal(err)
	}
	if want := "2d88663189776a8721b7c7aa0f57c8a9d54e6f0b8671e552a5a718c2cfc64a20"; got.String() != want {
		t.Fatalf("digest = %s, want %s", got, want)
	}
}

func TestDigestRejects(t *testing.T) {
	tests := []struct {
		name    string
		domain  Domain
		payload any
		version int
	}{
		{"float", "x", map[string]any{"a": 1.5}, 1},
		{"integral float", "x", []any{float64(1)}, 1},
		{"uppercase domain", "X", nil, 1},
		{"empty domain", "", nil, 1},
		{"domain starting with dot", ".x", nil, 1},
		{"domain with space", "a b", nil, 1},
		{"zero schema version", "x", nil, 0},
		{"non-string key", "x", map[int]any{1: 2}, 1},
		{"invalid utf-8", "x", "\xff", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := HVersion(tc.domain, tc.payload, tc.version); err == nil {
				t.Fatalf("HVersion(%q, %#v) succeeded, want an error", tc.domain, tc.payload)
			}
		})
	}
}

func TestDigestBigIntegers(t *testing.T) {
	huge, _ := new(big.Int).SetString("123456789012345678901234567890123456789", 10)
	a, err := H("x", []any{huge})
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := canonjson.Parse([]byte(`[123456789012345678901234567890123456789]`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := H("x", parsed)
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Fatalf("big.Int and parsed text digests differ: %s vs %s", a, b)
	}
}

func TestCheckDigest(t *testing.T) {
	zero := "0000000000000000000000000000000000000000000000000000000000000000"
	if err := CheckDigest("f", zero, false); err == nil {
		t.Fatal("zero digest accepted")
	}
	if err := CheckDigest("f", zero, true); err != nil {
		t.Fatal(err)
	}
	if err := CheckDigest("f", "ABC", true); err == nil {
		t.Fatal("short uppercase digest accepted")
	}
}

func TestParseFieldAndCheckField(t *testing.T) {
	zero := strings.Repeat("0", 64)
	valid := MustH(DomainProposal, map[string]int{"n": 1})
	for _, tc := range []struct {
		name      string
		s         string
		allowZero bool
		want      string // "" means accepted
	}{
		{"valid", valid.String(), false, ""},
		{"all-zero refused", zero, false, `f: the all-zero digest is not allowed`},
		{"all-zero allowed", zero, true, ""},
		{"empty", "", true, `f: "" is not a 64-character lowercase hex digest`},
		{"upper case", strings.ToUpper(valid.String()), true, "is not a 64-character lowercase hex digest"},
		{"prefixed", "sha256:" + valid.String(), true, "is not a 64-character lowercase hex digest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := ParseField("f", tc.s, tc.allowZero)
			if tc.want == "" {
				if err != nil || d.String() != tc.s || d.Algorithm != SHA256 {
					t.Fatalf("ParseField = %v, %v; want %s", d, err, tc.s)
				}
				// CheckField agrees with ParseField on what it parsed.
				if err := CheckField("f", d, tc.allowZero); err != nil {
					t.Fatalf("CheckField of a parsed digest: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !d.IsZero() {
				t.Fatalf("ParseField = %v, %v; want the zero Digest and an error with %q", d, err, tc.want)
			}
			// CheckField gives the same message for the same text.
			bad := Digest{Algorithm: SHA256, Hex: tc.s}
			if err2 := CheckField("f", bad, tc.allowZero); err2 == nil || err2.Error() != err.Error() {
				t.Fatalf("CheckField = %v, ParseField = %v", err2, err)
			}
		})
	}
	if err := CheckField("f", Digest{}, true); err == nil {
		t.Fatal("CheckField accepted an unset digest")
	}
	if err := CheckField("f", MustParse("sha512:"+strings.Repeat("ab", 64)), true); err == nil {
		t.Fatal("CheckField accepted a SHA-512 digest where a SHA-256 identity belongs")
	}
}

func TestSHA256SumIsHOfTheSameBytes(t *testing.T) {
	b, err := Envelope(DomainProposal, map[string]int{"n": 1}, DefaultSchemaVersion)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := SHA256Sum(sha256.Sum256(b)), MustH(DomainProposal, map[string]int{"n": 1}); got != want {
		t.Fatalf("SHA256Sum = %s, H = %s", got, want)
	}
}
