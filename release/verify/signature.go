package verify

import (
	"crypto"
	"errors"
	"fmt"
	"time"

	"github.com/cacheon/engine/release/envelope"
	"github.com/cacheon/engine/release/key"
	"github.com/cacheon/engine/release/store"
)

// checkSignature (CheckSignature, CheckKeyPolicy) opens the attached
// signature bundles one at a time until one verifies with a key the
// policy trusts at the verification time. When none does, the first
// bundle's failure is the verdict.
func (v *verification) checkSignature() error {
	var firstErr error
	err := v.att.each(store.ArtifactBundle, func(b *store.Referrer) (bool, error) {
		if err := v.att.load(b); err != nil {
			return false, err
		}
		st, err := Bundle(b.Data, v.opts.Policy, v.now)
		if err == nil {
			v.signed, v.rel.Bundle = st, b.Data
			v.rel.Attachments = append(v.rel.Attachments, *b)
			return true, nil
		}
		if firstErr == nil {
			firstErr = err
		}
		return false, nil
	})
	if err != nil {
		return err
	}
	if v.signed == nil {
		return firstErr
	}
	v.rep.KeyID = v.signed.KeyID
	v.rel.SignerPublic = v.signed.Public
	v.rep.pass(CheckKeyPolicy, "key %s is trusted and valid at %s", v.signed.KeyID, v.now.UTC().Format(time.RFC3339))
	v.rep.pass(CheckSignature, "DSSE signature by key %s verifies", v.signed.KeyID)
	v.rel.Statement = v.signed.Statement
	return nil
}

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
	b, err := envelope.Parse(bundleJSON)
	if err != nil {
		return nil, fail(CheckSignature, err)
	}
	trusted, err := policy.Lookup(b.Hint, now)
	if err != nil {
		if errors.Is(err, key.ErrKeyExpired) || errors.Is(err, key.ErrKeyNotTrusted) {
			return nil, fail(CheckKeyPolicy, err)
		}
		return nil, err
	}
	if err := b.Verify(trusted.Public); err != nil {
		return nil, fail(CheckSignature, fmt.Errorf("bundle claiming key %s does not verify: %w", b.Hint, err))
	}
	return &SignedStatement{Statement: b.Payload, KeyID: b.Hint, Public: trusted.Public}, nil
}
