package identity

import (
	"math/big"
	"testing"

	"github.com/cacheon/engine/tools/canonjson"
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
