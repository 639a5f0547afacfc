// Package identity computes Cacheon's domain-separated digests.
//
// Every identity in the system is H(domain, payload, schema_version): the
// lowercase hex SHA-256 of the canonical JSON of the envelope
// {"domain": domain, "payload": payload, "schema_version": n}. The domain
// string separates kinds of object, so two different kinds can never share
// a digest even when their payloads are equal. The construction is
// byte-compatible with the upstream Python toolchain.
package identity

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"

	"github.com/cacheon/engine/tools/canonjson"
)

// DefaultSchemaVersion is the envelope schema version used unless a caller
// names another.
const DefaultSchemaVersion = 1

var domainPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)

// ValidateDomain reports whether domain is a legal domain string.
func ValidateDomain(domain string) error {
	if !domainPattern.MatchString(domain) {
		return fmt.Errorf("domain %q must match [a-z0-9][a-z0-9._-]*", domain)
	}
	return nil
}

type envelope struct {
	Domain        string `json:"domain"`
	Payload       any    `json:"payload"`
	SchemaVersion int    `json:"schema_version"`
}

// Envelope returns the canonical bytes that Digest hashes.
func Envelope(domain string, payload any, schemaVersion int) ([]byte, error) {
	if err := ValidateDomain(domain); err != nil {
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

// Digest returns H(domain, payload) with the default schema version.
func Digest(domain string, payload any) (string, error) {
	return DigestVersion(domain, payload, DefaultSchemaVersion)
}

// DigestVersion returns H(domain, payload, schemaVersion) as 64 lowercase hex.
func DigestVersion(domain string, payload any, schemaVersion int) (string, error) {
	b, err := Envelope(domain, payload, schemaVersion)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// MustDigest is Digest for payloads built by the program itself, where an
// error is a programming mistake rather than bad input.
func MustDigest(domain string, payload any) string {
	d, err := Digest(domain, payload)
	if err != nil {
		panic(fmt.Sprintf("identity: %v", err))
	}
	return d
}

// IsHex64 reports whether s is a 64-character lowercase hex digest.
func IsHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

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
