package envelope_test

import (
	"crypto"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	sgbundle "github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	sgverify "github.com/sigstore/sigstore-go/pkg/verify"
	"github.com/sigstore/sigstore/pkg/signature"

	"github.com/cacheon/engine/release/envelope"
	"github.com/cacheon/engine/release/key"
	"github.com/cacheon/engine/release/sign"
)

const statement = `{"_type":"https://in-toto.io/Statement/v1","subject":[{"name":"x","digest":{"sha256":"00000000000000000000000000000000000000000000000000000000000000ab"}}],"predicateType":"https://slsa.dev/provenance/v1","predicate":{}}`

func signed(t *testing.T, s crypto.Signer, stmt string) []byte {
	t.Helper()
	b, _, err := sign.Statement([]byte(stmt), s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func generate(t *testing.T, a key.Algorithm) crypto.Signer {
	t.Helper()
	s, err := key.Generate(a)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// edit decodes a bundle, lets fn change it and encodes it again.
func edit(t *testing.T, b []byte, fn func(doc map[string]any)) []byte {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	fn(doc)
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func dsseOf(doc map[string]any) map[string]any { return doc["dsseEnvelope"].(map[string]any) }

func TestParseRefusesMalformedBundles(t *testing.T) {
	good := signed(t, generate(t, key.Ed25519), statement)
	cases := []struct {
		name string
		in   []byte
		want string
	}{
		{"not JSON", []byte("{"), "parse sigstore bundle"},
		{"unknown field", edit(t, good, func(d map[string]any) { d["extra"] = 1 }), "parse sigstore bundle"},
		{"older media type", edit(t, good, func(d map[string]any) { d["mediaType"] = "application/vnd.dev.sigstore.bundle+json;version=0.2" }), "bundle media type"},
		{"message signature", edit(t, good, func(d map[string]any) {
			delete(d, "dsseEnvelope")
			d["messageSignature"] = map[string]any{}
		}), "no DSSE envelope"},
		{"other payload type", edit(t, good, func(d map[string]any) { dsseOf(d)["payloadType"] = "text/plain" }), "DSSE payload type"},
		{"no payload", edit(t, good, func(d map[string]any) { delete(dsseOf(d), "payload") }), "no payload"},
		{"no signature", edit(t, good, func(d map[string]any) { dsseOf(d)["signatures"] = []any{} }), "unsigned bundle"},
		{"certificate", edit(t, good, func(d map[string]any) {
			d["verificationMaterial"] = map[string]any{"certificate": map[string]any{"rawBytes": "AAAA"}}
		}), "not signed with a public key"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := envelope.Parse(c.in)
			if !errors.Is(err, envelope.ErrMalformed) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Parse: err = %v, want ErrMalformed containing %q", err, c.want)
			}
		})
	}
}

func TestVerifyAcceptsOnlyTheSigningKey(t *testing.T) {
	for _, alg := range []key.Algorithm{key.Ed25519, key.ECDSAP256} {
		t.Run(string(alg), func(t *testing.T) {
			s := generate(t, alg)
			other := generate(t, alg)
			b, err := envelope.Parse(signed(t, s, statement))
			if err != nil {
				t.Fatal(err)
			}
			if id, _ := key.ID(s.Public()); b.Hint != id {
				t.Errorf("hint %q, want the key id %q", b.Hint, id)
			}
			if string(b.Payload) != statement {
				t.Errorf("payload %q, want the signed statement", b.Payload)
			}
			if err := b.Verify(s.Public()); err != nil {
				t.Errorf("Verify with the signing key: %v", err)
			}
			if err := b.Verify(other.Public()); err == nil {
				t.Error("Verify with another key succeeded")
			}
		})
	}
}

// mutations are bundles a verifier must judge; sigstore-go's key-only
// verifier (the one release/verify used before release/envelope) and
// this package must agree on every one.
func mutations(t *testing.T, s, other crypto.Signer) map[string][]byte {
	good := signed(t, s, statement)
	forged := signed(t, other, statement)
	return map[string][]byte{
		"good": good,
		"payload changed": edit(t, good, func(d map[string]any) {
			dsseOf(d)["payload"] = []byte(strings.Replace(statement, `"x"`, `"y"`, 1))
		}),
		"signature of another key": edit(t, good, func(d map[string]any) {
			var f map[string]any
			json.Unmarshal(forged, &f)
			dsseOf(d)["signatures"] = dsseOf(f)["signatures"]
		}),
		"two signatures": edit(t, good, func(d map[string]any) {
			sigs := dsseOf(d)["signatures"].([]any)
			dsseOf(d)["signatures"] = append(sigs, sigs[0])
		}),
		"payload type changed": edit(t, good, func(d map[string]any) { dsseOf(d)["payloadType"] = "application/json" }),
		"not a statement":      signed(t, s, `{"hello":"world"}`),
		"signature not base64": edit(t, good, func(d map[string]any) {
			dsseOf(d)["signatures"].([]any)[0].(map[string]any)["sig"] = "!!"
		}),
	}
}

func sigstoreVerdict(b []byte, hint string, pub crypto.PublicKey) error {
	var sb sgbundle.Bundle
	if err := sb.UnmarshalJSON(b); err != nil {
		return err
	}
	if sb.GetDsseEnvelope().GetPayloadType() != envelope.PayloadType {
		return errors.New("payload type")
	}
	hash := crypto.SHA256
	if alg, _ := key.AlgorithmOf(pub); alg == key.Ed25519 {
		hash = crypto.Hash(0)
	}
	v, err := signature.LoadVerifier(pub, hash)
	if err != nil {
		return err
	}
	material := root.NewTrustedPublicKeyMaterialFromMapping(map[string]*root.ExpiringKey{hint: root.NewExpiringKey(v, time.Time{}, time.Time{})})
	sv, err := sgverify.NewVerifier(material, sgverify.WithNoObserverTimestamps())
	if err != nil {
		return err
	}
	_, err = sv.Verify(&sb, sgverify.NewPolicy(sgverify.WithoutArtifactUnsafe(), sgverify.WithKey()))
	return err
}

func TestVerifyAgreesWithSigstoreGo(t *testing.T) {
	for _, alg := range []key.Algorithm{key.Ed25519, key.ECDSAP256} {
		s, other := generate(t, alg), generate(t, alg)
		hint, _ := key.ID(s.Public())
		for name, b := range mutations(t, s, other) {
			t.Run(string(alg)+"/"+name, func(t *testing.T) {
				want := sigstoreVerdict(b, hint, s.Public())
				var got error
				p, err := envelope.Parse(b)
				if got = err; err == nil {
					got = p.Verify(s.Public())
				}
				if (got == nil) != (want == nil) {
					t.Fatalf("envelope: %v; sigstore-go: %v", got, want)
				}
				if name == "good" && got != nil {
					t.Fatalf("the good bundle does not verify: %v", got)
				}
			})
		}
	}
}
