package stack

import (
	"bytes"
	"strings"
	"testing"

	"github.com/cacheon/engine/internal/identity"
)

func emptyRelease(t testing.TB, snap []byte, catalogDigest identity.Digest) []byte {
	t.Helper()
	m, err := NewEngineReleaseManifest(dg("1"), dg("2"), catalogDigest, snap, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := m.CanonicalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseManifest(t *testing.T) {
	snap, catalogDigest, _ := defaultSnapshot(t)
	canon := emptyRelease(t, snap, catalogDigest)
	if !bytes.Contains(canon, []byte(`"entries":{}`)) {
		t.Fatalf("the empty release manifest has no empty entries object: %.200s", canon)
	}
	edit := func(old, new string) []byte { return []byte(strings.Replace(string(canon), old, new, 1)) }
	tests := []struct {
		name    string
		in      []byte
		wantErr string // "" parses
	}{
		{"canonical", canon, ""},
		{"one trailing newline", append(append([]byte(nil), canon...), '\n'), ""},
		{"two trailing newlines", append(append([]byte(nil), canon...), '\n', '\n'), "not in canonical form"},
		{"spaced", edit(`{"base_engine_digest"`, `{ "base_engine_digest"`), "not in canonical form"},
		{"unknown field", edit(`{"base_engine_digest"`, `{"arena_digest":"x","base_engine_digest"`), "unknown field"},
		{"evaluation type", edit(`"type":"engine_release"`, `"type":"evaluation_stack"`), "want engine_release"},
		{"other policy", edit(`"stack_policy_version":"engine-release.v1"`, `"stack_policy_version":"engine-release.v2"`), "want engine_release"},
		{"proposal entry", edit(`"entries":{}`, `"entries":{"activation.silu_and_mul":{"type":"proposal"}}`), "integrated (reviewed) contributions only"},
		{"entry not an object", edit(`"entries":{}`, `"entries":{"activation.silu_and_mul":1}`), "entry activation.silu_and_mul"},
		{"not JSON", []byte("{"), "parse release manifest"},
		{"short digest in an entry names its field", edit(`"entries":{}`, `"entries":{"activation.silu_and_mul":{"type":"integrated","attribution_digest":"abc"}}`),
			"entry activation.silu_and_mul: attribution_digest: invalid digest"},
		{"upper-case digest in an entry names its field", edit(`"entries":{}`, `"entries":{"activation.silu_and_mul":{"type":"integrated","target_spec_digest":"`+strings.Repeat("A", 64)+`"}}`),
			"entry activation.silu_and_mul: target_spec_digest: invalid digest"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := ParseManifest(tt.in)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("ParseManifest: %v", err)
				}
				if got, _ := m.CanonicalJSON(); !bytes.Equal(got, canon) {
					t.Errorf("round trip gives %.200s…", got)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

// FuzzParseManifest: the release-manifest parser refuses or returns a
// manifest whose canonical encoding is exactly the bytes it read (less
// one trailing newline), and never panics.
func FuzzParseManifest(f *testing.F) {
	snap, catalogDigest, _ := defaultSnapshot(f)
	f.Add(emptyRelease(f, snap, catalogDigest))
	f.Add([]byte(`{"type":"engine_release","entries":{"a":{"type":"integrated"}}}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseManifest(data)
		if err != nil {
			return
		}
		got, err := m.CanonicalJSON()
		if err != nil {
			t.Fatalf("a parsed manifest does not encode: %v", err)
		}
		if !bytes.Equal(got, bytes.TrimSuffix(data, []byte("\n"))) {
			t.Fatalf("parsed %q, encodes as %q", data, got)
		}
	})
}
