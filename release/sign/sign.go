// Package sign signs release statements as sigstore bundles (v0.3, DSSE)
// with an external key: any crypto.Signer, so a key file, an HSM or a KMS.
// No Fulcio certificate, no Rekor entry, no timestamp authority and no
// network: the bundle carries the key's hint, and consumers verify it
// against a public key they already trust (release/verify).
package sign

import (
	"context"
	"crypto"
	"crypto/rand"
	"fmt"

	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	"github.com/sigstore/sigstore-go/pkg/sign"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/cacheon/engine/internal/canonjson"
	"github.com/cacheon/engine/release/envelope"
	"github.com/cacheon/engine/release/key"
)

// PayloadType is the DSSE payload type of an in-toto statement.
const PayloadType = envelope.PayloadType

// BundleMediaType is the media type of the bundles written here; the
// format is declared in release/envelope, which the offline verifier reads
// it with.
const BundleMediaType = envelope.MediaType

// keypair adapts a crypto.Signer to sigstore-go's Keypair.
type keypair struct {
	signer  crypto.Signer
	details signature.AlgorithmDetails
	hint    string
}

var _ sign.Keypair = (*keypair)(nil)

func newKeypair(s crypto.Signer) (*keypair, error) {
	alg, err := key.AlgorithmOf(s.Public())
	if err != nil {
		return nil, err
	}
	pkd := protocommon.PublicKeyDetails_PKIX_ED25519
	if alg == key.ECDSAP256 {
		pkd = protocommon.PublicKeyDetails_PKIX_ECDSA_P256_SHA_256
	}
	details, err := signature.GetAlgorithmDetails(pkd)
	if err != nil {
		return nil, err
	}
	id, err := key.ID(s.Public())
	if err != nil {
		return nil, err
	}
	return &keypair{signer: s, details: details, hint: id}, nil
}

func (k *keypair) GetHashAlgorithm() protocommon.HashAlgorithm { return k.details.GetProtoHashType() }
func (k *keypair) GetSigningAlgorithm() protocommon.PublicKeyDetails {
	return k.details.GetSignatureAlgorithm()
}
func (k *keypair) GetHint() []byte                { return []byte(k.hint) }
func (k *keypair) GetPublicKey() crypto.PublicKey { return k.signer.Public() }
func (k *keypair) GetKeyAlgorithm() string {
	if k.details.GetKeyType() == signature.ED25519 {
		return "ED25519"
	}
	return "ECDSA"
}
func (k *keypair) GetPublicKeyPem() (string, error) {
	b, err := cryptoutils.MarshalPublicKeyToPEM(k.signer.Public())
	return string(b), err
}

// SignData signs data: Ed25519 signs the message itself, ECDSA its
// SHA-256 digest.
func (k *keypair) SignData(_ context.Context, data []byte) ([]byte, []byte, error) {
	hf := k.details.GetHashType()
	msg := data
	if hf != crypto.Hash(0) {
		h := hf.New()
		h.Write(data)
		msg = h.Sum(nil)
	}
	sig, err := k.signer.Sign(rand.Reader, msg, hf)
	if err != nil {
		return nil, nil, fmt.Errorf("sign with %s key %s: %w", k.GetKeyAlgorithm(), k.hint, err)
	}
	return sig, msg, nil
}

// Statement signs an in-toto statement (its exact bytes become the DSSE
// payload) and returns the bundle as canonical JSON: protojson varies its
// whitespace from one build of the tool to the next, canonical JSON does
// not. It also returns the signing key's identity (the bundle's hint).
func Statement(statement []byte, s crypto.Signer) (bundle []byte, keyID string, err error) {
	kp, err := newKeypair(s)
	if err != nil {
		return nil, "", err
	}
	pb, err := sign.Bundle(&sign.DSSEData{Data: statement, PayloadType: PayloadType}, kp, sign.BundleOptions{})
	if err != nil {
		return nil, "", fmt.Errorf("sign statement: %w", err)
	}
	raw, err := protojson.Marshal(pb)
	if err != nil {
		return nil, "", fmt.Errorf("encode bundle: %w", err)
	}
	v, err := canonjson.Parse(raw)
	if err != nil {
		return nil, "", fmt.Errorf("canonicalize bundle: %w", err)
	}
	out, err := canonjson.Marshal(v)
	if err != nil {
		return nil, "", fmt.Errorf("canonicalize bundle: %w", err)
	}
	return out, kp.hint, nil
}
