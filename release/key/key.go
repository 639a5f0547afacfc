// Package key loads release signing keys and the policy that says which
// public keys a consumer trusts, and for how long.
//
// Private keys are PEM "PRIVATE KEY" (PKCS#8) files, public keys PEM
// "PUBLIC KEY" (PKIX) files; Ed25519 and ECDSA P-256 are accepted. Signing
// goes through crypto.Signer, so a key held in an HSM or KMS plugs in the
// same way as a file. A key's identity (its hint in a sigstore bundle) is
// base64(SHA-256(PKIX DER of the public key)).
//
// Without a trusted timestamp a signature carries no trusted signing time,
// so the signature libraries cannot check a key's validity window; the
// policy here does, against the time of verification.
package key

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/cacheon/engine/internal/reject"
)

// Algorithm names a supported key algorithm.
type Algorithm string

const (
	Ed25519   Algorithm = "ed25519"
	ECDSAP256 Algorithm = "ecdsa-p256"
)

// AlgorithmOf returns the algorithm of a supported public key.
func AlgorithmOf(pub crypto.PublicKey) (Algorithm, error) {
	switch k := pub.(type) {
	case ed25519.PublicKey:
		return Ed25519, nil
	case *ecdsa.PublicKey:
		if k.Curve == elliptic.P256() {
			return ECDSAP256, nil
		}
		return "", fmt.Errorf("ECDSA curve %s is not supported (want P-256)", k.Curve.Params().Name)
	}
	return "", fmt.Errorf("public key type %T is not supported (want Ed25519 or ECDSA P-256)", pub)
}

// ID returns the key's identity: base64 of the SHA-256 of its PKIX DER.
func ID(pub crypto.PublicKey) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", fmt.Errorf("encode public key: %w", err)
	}
	sum := sha256.Sum256(der)
	return base64.StdEncoding.EncodeToString(sum[:]), nil
}

// LoadSigner reads a PEM PKCS#8 private key file.
func LoadSigner(path string) (crypto.Signer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read private key: %w", err)
	}
	s, err := ParseSigner(b)
	if err != nil {
		return nil, reject.Errorf("private key %s: %w", path, err)
	}
	return s, nil
}

// ParseSigner parses PEM PKCS#8 private key bytes.
func ParseSigner(b []byte) (crypto.Signer, error) {
	blk, rest := pem.Decode(b)
	if blk == nil {
		return nil, errors.New("no PEM block found")
	}
	if strings.TrimSpace(string(rest)) != "" {
		return nil, errors.New("trailing data after the PEM block")
	}
	if blk.Type != "PRIVATE KEY" {
		return nil, fmt.Errorf("PEM block %q: want \"PRIVATE KEY\" (PKCS#8)", blk.Type)
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parse PKCS#8: %w", err)
	}
	s, ok := k.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("key type %T cannot sign", k)
	}
	if _, err := AlgorithmOf(s.Public()); err != nil {
		return nil, err
	}
	return s, nil
}

// LoadPublic reads a PEM PKIX public key file.
func LoadPublic(path string) (crypto.PublicKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read public key: %w", err)
	}
	p, err := ParsePublic(b)
	if err != nil {
		return nil, reject.Errorf("public key %s: %w", path, err)
	}
	return p, nil
}

// ParsePublic parses PEM PKIX public key bytes.
func ParsePublic(b []byte) (crypto.PublicKey, error) {
	blk, rest := pem.Decode(b)
	if blk == nil {
		return nil, errors.New("no PEM block found")
	}
	if strings.TrimSpace(string(rest)) != "" {
		return nil, errors.New("trailing data after the PEM block")
	}
	if blk.Type != "PUBLIC KEY" {
		return nil, fmt.Errorf("PEM block %q: want \"PUBLIC KEY\" (PKIX)", blk.Type)
	}
	p, err := x509.ParsePKIXPublicKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parse PKIX: %w", err)
	}
	if _, err := AlgorithmOf(p); err != nil {
		return nil, err
	}
	return p, nil
}

// MarshalPublic encodes pub as a PEM PKIX block.
func MarshalPublic(pub crypto.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}

// MarshalPrivate encodes s as a PEM PKCS#8 block.
func MarshalPrivate(s crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(s)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// Generate makes a new key of algorithm a.
func Generate(a Algorithm) (crypto.Signer, error) {
	switch a {
	case Ed25519:
		_, k, err := ed25519.GenerateKey(rand.Reader)
		return k, err
	case ECDSAP256:
		return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	}
	return nil, fmt.Errorf("algorithm %q: want ed25519 or ecdsa-p256", string(a))
}

// PolicyType is the type field of a trusted-key policy file.
const PolicyType = "cacheon.release-keys.v1"

// Trusted is one public key a consumer accepts, with its validity window
// (either end may be open).
type Trusted struct {
	ID        string
	Public    crypto.PublicKey
	NotBefore time.Time
	NotAfter  time.Time
}

// Policy is the set of trusted release keys.
type Policy struct{ Keys []Trusted }

type policyFile struct {
	Type string      `json:"type"`
	Keys []policyKey `json:"keys"`
}

type policyKey struct {
	PublicKey string `json:"public_key"` // PEM PKIX
	NotBefore string `json:"not_before,omitempty"`
	NotAfter  string `json:"not_after,omitempty"`
}

// LoadPolicy reads a trust policy: either a single PEM public key (trusted
// without a time limit) or a JSON policy file
// {"type":"cacheon.release-keys.v1","keys":[{"public_key":PEM,
// "not_before":RFC3339,"not_after":RFC3339}]}.
func LoadPolicy(path string) (*Policy, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read trusted key: %w", err)
	}
	p, err := ParsePolicy(b)
	if err != nil {
		return nil, reject.Errorf("trusted key %s: %w", path, err)
	}
	return p, nil
}

// ParsePolicy parses the bytes of a policy file or of a PEM public key.
func ParsePolicy(b []byte) (*Policy, error) {
	if strings.HasPrefix(strings.TrimSpace(string(b)), "-----BEGIN") {
		pub, err := ParsePublic(b)
		if err != nil {
			return nil, err
		}
		id, err := ID(pub)
		if err != nil {
			return nil, err
		}
		return &Policy{Keys: []Trusted{{ID: id, Public: pub}}}, nil
	}
	var f policyFile
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("parse key policy: %w", err)
	}
	if f.Type != PolicyType {
		return nil, fmt.Errorf("key policy type %q: want %q", f.Type, PolicyType)
	}
	if len(f.Keys) == 0 {
		return nil, errors.New("key policy lists no keys")
	}
	p := &Policy{}
	seen := map[string]bool{}
	for i, k := range f.Keys {
		pub, err := ParsePublic([]byte(k.PublicKey))
		if err != nil {
			return nil, fmt.Errorf("keys[%d].public_key: %w", i, err)
		}
		id, err := ID(pub)
		if err != nil {
			return nil, err
		}
		if seen[id] {
			return nil, fmt.Errorf("keys[%d]: key %s listed twice", i, id)
		}
		seen[id] = true
		t := Trusted{ID: id, Public: pub}
		if k.NotBefore != "" {
			if t.NotBefore, err = time.Parse(time.RFC3339, k.NotBefore); err != nil {
				return nil, fmt.Errorf("keys[%d].not_before: %w", i, err)
			}
		}
		if k.NotAfter != "" {
			if t.NotAfter, err = time.Parse(time.RFC3339, k.NotAfter); err != nil {
				return nil, fmt.Errorf("keys[%d].not_after: %w", i, err)
			}
		}
		if !t.NotBefore.IsZero() && !t.NotAfter.IsZero() && !t.NotAfter.After(t.NotBefore) {
			return nil, fmt.Errorf("keys[%d]: not_after %s is not after not_before %s", i, k.NotAfter, k.NotBefore)
		}
		p.Keys = append(p.Keys, t)
	}
	return p, nil
}

// ErrKeyNotTrusted and ErrKeyExpired are the policy's verdicts.
var (
	ErrKeyNotTrusted = errors.New("key is not in the trusted key policy")
	ErrKeyExpired    = errors.New("key is outside its validity window")
)

// Lookup returns the trusted key with identity id, valid at now.
func (p *Policy) Lookup(id string, now time.Time) (*Trusted, error) {
	for i := range p.Keys {
		k := &p.Keys[i]
		if k.ID != id {
			continue
		}
		if !k.NotBefore.IsZero() && now.Before(k.NotBefore) {
			return nil, fmt.Errorf("key %s: %w: not valid before %s (now %s)", id, ErrKeyExpired, k.NotBefore.Format(time.RFC3339), now.UTC().Format(time.RFC3339))
		}
		if !k.NotAfter.IsZero() && now.After(k.NotAfter) {
			return nil, fmt.Errorf("key %s: %w: expired at %s (now %s)", id, ErrKeyExpired, k.NotAfter.Format(time.RFC3339), now.UTC().Format(time.RFC3339))
		}
		return k, nil
	}
	ids := make([]string, len(p.Keys))
	for i, k := range p.Keys {
		ids[i] = k.ID
	}
	return nil, fmt.Errorf("key %s: %w (trusted: %s)", id, ErrKeyNotTrusted, strings.Join(ids, ", "))
}
