package verify

import (
	"crypto"
	"errors"
	"fmt"
	"time"

	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	sgverify "github.com/sigstore/sigstore-go/pkg/verify"
	"github.com/sigstore/sigstore/pkg/signature"

	"github.com/cacheon/engine/release/key"
	"github.com/cacheon/engine/release/sign"
)

// SignedStatement is a statement whose signature verified.
type SignedStatement struct {
	Statement []byte // the exact DSSE payload that was signed
	KeyID     string
	Public    crypto.PublicKey
}

// Bundle verifies a sigstore bundle offline: it must be a v0.3 DSSE
// bundle of an in-toto statement, signed by a key the policy trusts and
// that is valid at now. No transparency log, timestamp authority or
// certificate is consulted (none is reachable offline); key validity is
// the policy's. The statement's subjects are the caller's to check
// (CheckSubjects names the one that differs).
func Bundle(bundleJSON []byte, policy *key.Policy, now time.Time) (*SignedStatement, error) {
	var b bundle.Bundle
	if err := b.UnmarshalJSON(bundleJSON); err != nil {
		return nil, fail(CheckSignature, fmt.Errorf("parse sigstore bundle: %w", err))
	}
	if b.GetMediaType() != sign.BundleMediaType {
		return nil, fail(CheckSignature, fmt.Errorf("bundle media type %q, want %q", b.GetMediaType(), sign.BundleMediaType))
	}
	env := b.GetDsseEnvelope()
	if env == nil {
		return nil, fail(CheckSignature, errors.New("bundle holds no DSSE envelope"))
	}
	if env.GetPayloadType() != sign.PayloadType {
		return nil, fail(CheckSignature, fmt.Errorf("DSSE payload type %q, want %q", env.GetPayloadType(), sign.PayloadType))
	}
	if len(env.GetSignatures()) == 0 {
		return nil, fail(CheckSignature, errors.New("unsigned bundle: the DSSE envelope has no signature"))
	}
	pk := b.GetVerificationMaterial().GetPublicKey()
	if pk == nil {
		return nil, fail(CheckSignature, errors.New("bundle is not signed with a public key (certificates are not accepted)"))
	}
	hint := pk.GetHint()
	trusted, err := policy.Lookup(hint, now)
	if err != nil {
		if errors.Is(err, key.ErrKeyExpired) || errors.Is(err, key.ErrKeyNotTrusted) {
			return nil, fail(CheckKeyPolicy, err)
		}
		return nil, err
	}
	hash := crypto.SHA256
	if alg, _ := key.AlgorithmOf(trusted.Public); alg == key.Ed25519 {
		hash = crypto.Hash(0)
	}
	verifier, err := signature.LoadVerifier(trusted.Public, hash)
	if err != nil {
		return nil, fmt.Errorf("load verifier for key %s: %w", hint, err)
	}
	material := root.NewTrustedPublicKeyMaterialFromMapping(map[string]*root.ExpiringKey{
		// The window is open here: sigstore-go cannot check it without a
		// trusted time; the policy above did.
		hint: root.NewExpiringKey(verifier, time.Time{}, time.Time{}),
	})
	v, err := sgverify.NewVerifier(material, sgverify.WithNoObserverTimestamps())
	if err != nil {
		return nil, fmt.Errorf("configure verifier: %w", err)
	}
	if _, err := v.Verify(&b, sgverify.NewPolicy(sgverify.WithoutArtifactUnsafe(), sgverify.WithKey())); err != nil {
		return nil, fail(CheckSignature, fmt.Errorf("bundle claiming key %s does not verify: %w", hint, err))
	}
	return &SignedStatement{Statement: env.GetPayload(), KeyID: hint, Public: trusted.Public}, nil
}
