package sign

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/cacheon/engine/release/key"
)

func TestStatementBundle(t *testing.T) {
	stmt := []byte(`{"_type":"https://in-toto.io/Statement/v1"}`)
	for _, alg := range []key.Algorithm{key.Ed25519, key.ECDSAP256} {
		t.Run(string(alg), func(t *testing.T) {
			s, _ := key.Generate(alg)
			b, id, err := Statement(stmt, s)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := key.ID(s.Public())
			if id != want {
				t.Errorf("key id %s, want %s", id, want)
			}
			var doc struct {
				MediaType            string `json:"mediaType"`
				VerificationMaterial struct {
					PublicKey struct {
						Hint string `json:"hint"`
					} `json:"publicKey"`
				} `json:"verificationMaterial"`
				DSSE struct {
					Payload     []byte `json:"payload"`
					PayloadType string `json:"payloadType"`
				} `json:"dsseEnvelope"`
			}
			if err := json.Unmarshal(b, &doc); err != nil {
				t.Fatal(err)
			}
			if doc.MediaType != BundleMediaType || doc.VerificationMaterial.PublicKey.Hint != id ||
				string(doc.DSSE.Payload) != string(stmt) || doc.DSSE.PayloadType != PayloadType {
				t.Errorf("bundle %s", b)
			}
			if strings.Contains(string(b), ": ") || strings.Contains(string(b), ", ") {
				t.Errorf("bundle is not canonical JSON: %s", b)
			}
			if alg == key.Ed25519 {
				again, _, _ := Statement(stmt, s)
				if string(again) != string(b) {
					t.Error("two Ed25519 bundles of one statement differ")
				}
			}
		})
	}
}
