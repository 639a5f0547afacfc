package fingerprint

import (
	"reflect"
	"strings"
	"testing"
)

// A stored fingerprint decodes to one that compares exactly as the
// original does.
func TestEncodeRoundTrip(t *testing.T) {
	a := fingerprintDir(t, bundleCopy(t, "contributions/rmsnorm_triton"))
	b := fingerprintDir(t, bundleCopy(t, "contributions/silu_and_mul_triton"))
	data, err := Encode(a)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Files, a.Files) || back.NormalizedDeltaDigest != a.NormalizedDeltaDigest || back.SelectedPayloadDigest != a.SelectedPayloadDigest {
		t.Fatalf("round trip changed the fingerprint")
	}
	if again, _ := Encode(back); string(again) != string(data) {
		t.Errorf("re-encoding differs")
	}
	if got, want := Compare(back, b), Compare(a, b); !reflect.DeepEqual(got, want) {
		t.Errorf("decoded compares %+v, original %+v", got, want)
	}
	for _, c := range []struct{ name, from, to, want string }{
		{"a version from the future", `"schema_version":1`, `"schema_version":2`, "schema_version 2"},
		{"a digest that is not one", a.NormalizedDeltaDigest.String(), "xyz", "normalized_delta_digest"},
		{"hashes cut short", `","normalized_sha256"`, `0","normalized_sha256"`, "16 hex digits"},
	} {
		t.Run(c.name, func(t *testing.T) {
			bad := strings.Replace(string(data), c.from, c.to, 1)
			if bad == string(data) {
				t.Fatalf("%q not in the encoding", c.from)
			}
			if _, err := Decode([]byte(bad)); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Decode: %v, want an error naming %q", err, c.want)
			}
		})
	}
}
