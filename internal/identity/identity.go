// Package identity computes Cacheon's domain-separated digests.
//
// Every identity in the system is H(domain, payload, schema_version): the
// lowercase hex SHA-256 of the canonical JSON of the envelope
// {"domain": domain, "payload": payload, "schema_version": n}. The domain
// string separates kinds of object, so two different kinds can never share
// a digest even when their payloads are equal. The construction is
// byte-compatible with the upstream Python toolchain.
//
// Identities are typed: H takes a Domain (every domain of the system is
// declared once, in domains.go) and returns a Digest, whose text form is
// the bare lowercase hex every identity field carries on the wire.
package identity

import (
	"crypto/sha256"
	"fmt"
	"regexp"

	"github.com/cacheon/engine/internal/canonjson"
)

// DefaultSchemaVersion is the envelope schema version used unless a caller
// names another.
const DefaultSchemaVersion = 1

var domainPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)

// Domain is a domain-separation string: the kind of object an identity
// names. Every domain the system uses is declared in domains.go; a Domain
// built from other text (the cacheon digest command's --domain) is checked
// by Validate before it is hashed.
type Domain string

// Validate reports whether d is a legal domain string.
func (d Domain) Validate() error {
	if !domainPattern.MatchString(string(d)) {
		return fmt.Errorf("domain %q must match [a-z0-9][a-z0-9._-]*", string(d))
	}
	return nil
}

// ValidateDomain reports whether domain is a legal domain string.
func ValidateDomain(domain string) error { return Domain(domain).Validate() }

type envelope struct {
	Domain        Domain `json:"domain"`
	Payload       any    `json:"payload"`
	SchemaVersion int    `json:"schema_version"`
}

// Envelope returns the canonical bytes that H hashes.
func Envelope(domain Domain, payload any, schemaVersion int) ([]byte, error) {
	if err := domain.Validate(); err != nil {
		return nil, err
	}
	if schemaVersion < 1 {
		return nil, fmt.Errorf("schema version %d must be a positive integer", schemaVersion)
	}
	b, err := canonjson.Marshal(envelope{Domain: domain, Payload: payload, SchemaVersion: schemaVersion})
	if err != nil {
		return nil, fmt.Errorf("domain %s: %w", domain, err)
	}
	return b, nil
}

// H returns H(domain, payload) with the default schema version.
func H(domain Domain, payload any) (Digest, error) {
	return HVersion(domain, payload, DefaultSchemaVersion)
}

// HVersion returns H(domain, payload, schemaVersion), a SHA-256 digest.
func HVersion(domain Domain, payload any, schemaVersion int) (Digest, error) {
	b, err := Envelope(domain, payload, schemaVersion)
	if err != nil {
		return Digest{}, err
	}
	return SHA256Sum(sha256.Sum256(b)), nil
}

// MustH is H for payloads built by the program itself, where an error is a
// programming mistake rather than bad input.
func MustH(domain Domain, payload any) Digest {
	d, err := H(domain, payload)
	if err != nil {
		panic(fmt.Sprintf("identity: %v", err))
	}
	return d
}

// IsHex64 reports whether s is a 64-character lowercase hex digest.
func IsHex64(s string) bool { return len(s) == 64 && isLowerHex(s) }

// IsZeroDigest reports whether s is the all-zero digest, which several
// record types forbid as a placeholder.
func IsZeroDigest(s string) bool {
	return s == "0000000000000000000000000000000000000000000000000000000000000000"
}

// CheckDigest validates a digest field, naming it in the error.
func CheckDigest(field, s string, allowZero bool) error {
	if !IsHex64(s) {
		return fmt.Errorf("%s: %q is not a 64-character lowercase hex digest", field, s)
	}
	if !allowZero && IsZeroDigest(s) {
		return fmt.Errorf("%s: the all-zero digest is not allowed", field)
	}
	return nil
}

// ParseField parses the digest a named field holds, with CheckDigest's
// rules and messages: 64 lowercase hex characters, the all-zero digest
// only when allowZero. Decoders use it to turn a wire string into a typed
// identity while naming the field that was wrong.
func ParseField(field, s string, allowZero bool) (Digest, error) {
	if err := CheckDigest(field, s, allowZero); err != nil {
		return Digest{}, err
	}
	return Digest{Algorithm: SHA256, Hex: s}, nil
}

// CheckField is CheckDigest of a typed identity: an unset digest, another
// algorithm than SHA-256 or (unless allowZero) the all-zero digest is an
// error naming field.
func CheckField(field string, d Digest, allowZero bool) error {
	return CheckDigest(field, d.String(), allowZero)
}
