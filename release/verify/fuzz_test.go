package verify_test

import (
	"testing"
	"time"

	"github.com/cacheon/engine/release/key"
	fixture "github.com/cacheon/engine/release/releasetest"
	"github.com/cacheon/engine/release/sign"
	"github.com/cacheon/engine/release/verify"
)

// FuzzBundle feeds arbitrary bytes to the sigstore bundle and DSSE
// envelope checks, which run on attacker-supplied attachments before
// anything else is trusted: they refuse or verify, never panic, and
// nothing but a bundle signed by the trusted key verifies.
func FuzzBundle(f *testing.F) {
	signer, _, pub := fixture.Keys(f, f.TempDir(), "fuzz", key.Ed25519)
	policy, err := key.LoadPolicy(pub)
	if err != nil {
		f.Fatal(err)
	}
	stmt := []byte(`{"_type":"https://in-toto.io/Statement/v1","subject":[{"name":"x","digest":{"sha256":"` + "00000000000000000000000000000000000000000000000000000000000000ab" + `"}}],"predicateType":"https://slsa.dev/provenance/v1","predicate":{}}`)
	good, _, err := sign.Statement(stmt, signer)
	if err != nil {
		f.Fatal(err)
	}
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	if _, err := verify.Bundle(good, policy, now); err != nil {
		f.Fatalf("the seed bundle does not verify: %v", err)
	}
	f.Add(good)
	f.Add([]byte(`{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json","dsseEnvelope":{"payload":"","payloadType":"application/vnd.in-toto+json","signatures":[{"sig":""}]},"verificationMaterial":{"publicKey":{"hint":"x"}}}`))
	f.Add([]byte(`{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json","messageSignature":{}}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := verify.Bundle(data, policy, now)
		if err == nil && st.KeyID == "" {
			t.Fatalf("a bundle verified without naming its key")
		}
	})
}
