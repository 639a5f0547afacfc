package verify

import (
	"crypto"
	"errors"
	"fmt"
	"time"

	"github.com/cacheon/engine/release/envelope"
	"github.com/cacheon/engine/release/key"
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
