// Package envelope reads the signed form of a release statement: a
// sigstore bundle (v0.3) holding one DSSE envelope of an in-toto
// statement, signed by a bare public key whose identity the bundle
// carries as its hint.
//
// release/sign writes it; release/verify and the image entrypoint read it
// offline. Reading needs no certificate, transparency log, timestamp
// authority or trusted root, so this package parses the bundle with the
// protobuf-specs types and checks the signature with the DSSE library
// sigstore-go itself uses, the way sigstore-go's key-only verifier does
// (one signature, PAE over the payload type and payload, the statement
// decodes). It does not import sigstore-go's bundle and verify packages:
// they link its Rekor client (net/http) and, through pkg/root, its TUF
// client, which an offline verifier must not carry (tools/fences).
package envelope

import (
	"context"
	"crypto"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	intoto "github.com/in-toto/attestation/go/v1"
	"github.com/secure-systems-lab/go-securesystemslib/dsse"
	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	"github.com/sigstore/sigstore/pkg/signature"
	sigdsse "github.com/sigstore/sigstore/pkg/signature/dsse"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/cacheon/engine/release/key"
)

// MediaType is the media type of a release signature bundle.
const MediaType = "application/vnd.dev.sigstore.bundle.v0.3+json"

// PayloadType is the DSSE payload type of an in-toto statement.
const PayloadType = "application/vnd.in-toto+json"

// ErrMalformed is wrapped by every refusal of a bundle's shape, before any
// signature is checked.
var ErrMalformed = errors.New("malformed signature bundle")

// Bundle is a parsed signature bundle. Nothing in it is trusted until
// Verify returns nil for a key the caller trusts.
type Bundle struct {
	// Hint names the key the bundle claims to be signed with.
	Hint string
	// Payload is the exact statement bytes the envelope carries.
	Payload []byte
	env     *dsse.Envelope
}

// Parse decodes bundle JSON and checks its shape: the v0.3 media type, a
// DSSE envelope of an in-toto statement with at least one signature, and
// a public key hint as the verification material (certificates are not
// accepted). Transparency-log entries and timestamps a bundle may carry
// are not consulted: offline there is no trusted root to check them
// against, and key validity is the key policy's.
func Parse(b []byte) (*Bundle, error) {
	var pb protobundle.Bundle
	if err := protojson.Unmarshal(b, &pb); err != nil {
		return nil, fmt.Errorf("%w: parse sigstore bundle: %w", ErrMalformed, err)
	}
	if pb.GetMediaType() != MediaType {
		return nil, fmt.Errorf("%w: bundle media type %q, want %q", ErrMalformed, pb.GetMediaType(), MediaType)
	}
	env := pb.GetDsseEnvelope()
	if env == nil {
		return nil, fmt.Errorf("%w: bundle holds no DSSE envelope", ErrMalformed)
	}
	if env.GetPayloadType() != PayloadType {
		return nil, fmt.Errorf("%w: DSSE payload type %q, want %q", ErrMalformed, env.GetPayloadType(), PayloadType)
	}
	if len(env.GetPayload()) == 0 {
		return nil, fmt.Errorf("%w: the DSSE envelope has no payload", ErrMalformed)
	}
	if len(env.GetSignatures()) == 0 {
		return nil, fmt.Errorf("%w: unsigned bundle: the DSSE envelope has no signature", ErrMalformed)
	}
	pk := pb.GetVerificationMaterial().GetPublicKey()
	if pk == nil {
		return nil, fmt.Errorf("%w: bundle is not signed with a public key (certificates are not accepted)", ErrMalformed)
	}
	// The DSSE library works on the JSON envelope form: base64 payload
	// and signatures, as sigstore-go converts it.
	out := &dsse.Envelope{PayloadType: env.GetPayloadType(), Payload: encode(env.GetPayload())}
	for _, s := range env.GetSignatures() {
		if s == nil {
			return nil, fmt.Errorf("%w: empty DSSE signature", ErrMalformed)
		}
		out.Signatures = append(out.Signatures, dsse.Signature{KeyID: s.GetKeyid(), Sig: encode(s.GetSig())})
	}
	return &Bundle{Hint: pk.GetHint(), Payload: env.GetPayload(), env: out}, nil
}

// Verify checks the envelope's signature with pub: a sigstore bundle's
// envelope holds exactly one signature, over the DSSE pre-authentication
// encoding of the payload type and payload (Ed25519 signs it as is, ECDSA
// P-256 its SHA-256), and the signed payload is an in-toto statement.
func (b *Bundle) Verify(pub crypto.PublicKey) error {
	if n := len(b.env.Signatures); n != 1 {
		return fmt.Errorf("the DSSE envelope holds %d signatures, a sigstore bundle holds exactly one", n)
	}
	alg, err := key.AlgorithmOf(pub)
	if err != nil {
		return err
	}
	hash := crypto.SHA256
	if alg == key.Ed25519 {
		hash = crypto.Hash(0)
	}
	verifier, err := signature.LoadVerifier(pub, hash)
	if err != nil {
		return fmt.Errorf("load verifier: %w", err)
	}
	ev, err := dsse.NewEnvelopeVerifier(&sigdsse.VerifierAdapter{SignatureVerifier: verifier, Pub: pub})
	if err != nil {
		return fmt.Errorf("load envelope verifier: %w", err)
	}
	if _, err := ev.Verify(context.Background(), b.env); err != nil {
		return fmt.Errorf("verify envelope: %w", err)
	}
	var st intoto.Statement
	if err := protojson.Unmarshal(b.Payload, &st); err != nil {
		return fmt.Errorf("the signed payload is not an in-toto statement: %w", err)
	}
	return nil
}

// EnvelopeJSON is the bundle's DSSE envelope on its own, in the DSSE
// JSON form (payloadType, base64 payload, signatures with keyid and
// base64 sig): what cosign's legacy attestations store as a layer. The
// bytes depend only on the envelope. Like the bundle, it is trusted only
// after Verify.
func (b *Bundle) EnvelopeJSON() ([]byte, error) { return json.Marshal(b.env) }

func encode(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
