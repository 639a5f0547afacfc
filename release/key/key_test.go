package key

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestRoundTripAndID(t *testing.T) {
	for _, alg := range []Algorithm{Ed25519, ECDSAP256} {
		t.Run(string(alg), func(t *testing.T) {
			s, err := Generate(alg)
			if err != nil {
				t.Fatal(err)
			}
			priv, _ := MarshalPrivate(s)
			pub, _ := MarshalPublic(s.Public())
			s2, err := ParseSigner(priv)
			if err != nil {
				t.Fatal(err)
			}
			p2, err := ParsePublic(pub)
			if err != nil {
				t.Fatal(err)
			}
			id1, _ := ID(s2.Public())
			id2, _ := ID(p2)
			if id1 != id2 || len(id1) != 44 {
				t.Errorf("ids %q %q", id1, id2)
			}
		})
	}
}

func TestRejectedKeys(t *testing.T) {
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 1024)
	rsaDER, _ := x509.MarshalPKCS8PrivateKey(rsaKey)
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	p384DER, _ := x509.MarshalPKIXPublicKey(p384.Public())
	s, _ := Generate(Ed25519)
	pub, _ := MarshalPublic(s.Public())
	priv, _ := MarshalPrivate(s)
	cases := []struct {
		name  string
		parse func() error
		want  string
	}{
		{"not PEM", func() error { _, err := ParsePublic([]byte("hello")); return err }, "no PEM block"},
		{"public as private", func() error { _, err := ParseSigner(pub); return err }, `want "PRIVATE KEY"`},
		{"private as public", func() error { _, err := ParsePublic(priv); return err }, `want "PUBLIC KEY"`},
		{"RSA", func() error {
			_, err := ParseSigner(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: rsaDER}))
			return err
		}, "not supported"},
		{"P-384", func() error {
			_, err := ParsePublic(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: p384DER}))
			return err
		}, "want P-256"},
		{"trailing data", func() error { _, err := ParsePublic(append(pub, []byte("junk")...)); return err }, "trailing data"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := c.parse(); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
		})
	}
}

func TestPolicy(t *testing.T) {
	s, _ := Generate(Ed25519)
	other, _ := Generate(ECDSAP256)
	pub, _ := MarshalPublic(s.Public())
	id, _ := ID(s.Public())
	otherID, _ := ID(other.Public())
	doc, _ := json.Marshal(map[string]any{"type": PolicyType, "keys": []any{map[string]any{
		"public_key": string(pub), "not_before": "2026-01-01T00:00:00Z", "not_after": "2027-01-01T00:00:00Z"}}})
	p, err := ParsePolicy(doc)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		id   string
		at   time.Time
		want error
	}{
		{"inside", id, time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC), nil},
		{"before", id, time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC), ErrKeyExpired},
		{"after", id, time.Date(2027, 6, 1, 0, 0, 0, 0, time.UTC), ErrKeyExpired},
		{"unknown key", otherID, time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC), ErrKeyNotTrusted},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := p.Lookup(c.id, c.at)
			if !errors.Is(err, c.want) && !(err == nil && c.want == nil) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
		})
	}
	bad := []struct{ name, doc, want string }{
		{"wrong type", `{"type":"x","keys":[]}`, "key policy type"},
		{"no keys", `{"type":"` + PolicyType + `","keys":[]}`, "lists no keys"},
		{"unknown field", `{"type":"` + PolicyType + `","keys":[],"extra":1}`, "unknown field"},
		{"window reversed", string(mustJSON(map[string]any{"type": PolicyType, "keys": []any{map[string]any{
			"public_key": string(pub), "not_before": "2027-01-01T00:00:00Z", "not_after": "2026-01-01T00:00:00Z"}}})), "is not after"},
		{"duplicate", string(mustJSON(map[string]any{"type": PolicyType, "keys": []any{
			map[string]any{"public_key": string(pub)}, map[string]any{"public_key": string(pub)}}})), "listed twice"},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			if _, err := ParsePolicy([]byte(c.doc)); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
		})
	}
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

func FuzzParsePolicy(f *testing.F) {
	s, _ := Generate(Ed25519)
	pub, _ := MarshalPublic(s.Public())
	f.Add(pub)
	f.Add([]byte(`{"type":"cacheon.release-keys.v1","keys":[{"public_key":"x"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParsePolicy(b)
		if err == nil && len(p.Keys) == 0 {
			t.Fatal("a policy without keys parsed")
		}
	})
}
