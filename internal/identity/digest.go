package identity

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// Digest is a parsed, validated digest: an algorithm and its lowercase hex.
// It is a comparable value, so it works as a map key and with ==; its text
// form (String, MarshalText) makes it a JSON string and a JSON object key.
//
// The text form is the one identities carry on the wire. Every Cacheon
// identity is SHA-256 and upstream writes it as bare hex, so a SHA-256
// digest prints as its 64 hex characters alone; any other algorithm prints
// as "algorithm:hex". Each digest has exactly one text form and Parse
// accepts only that form, so putting a Digest where a hex string was keeps
// every byte on the wire, and Parse(d.String()) == d.
//
// The zero Digest is "no digest": it prints as the empty string and does
// not marshal.
type Digest struct {
	Algorithm string // "sha256" or "sha512"
	Hex       string // lowercase, of the algorithm's length
}

// Algorithms.
const (
	SHA256 = "sha256"
	SHA512 = "sha512"
)

// hexLen is the hex length of each known algorithm's digest.
var hexLen = map[string]int{SHA256: 64, SHA512: 128}

// ErrInvalidDigest is the root of every digest parsing and validation error.
var ErrInvalidDigest = errors.New("invalid digest")

// NewDigest returns the digest of algorithm with the given hex, checking that
// the algorithm is known and the hex is lowercase and of its length.
func NewDigest(algorithm, hex string) (Digest, error) {
	n, ok := hexLen[algorithm]
	if !ok {
		return Digest{}, fmt.Errorf("%w: unknown algorithm %q (want %s or %s)", ErrInvalidDigest, algorithm, SHA256, SHA512)
	}
	if len(hex) != n {
		return Digest{}, fmt.Errorf("%w: %s hex %q has %d characters, want %d", ErrInvalidDigest, algorithm, hex, len(hex), n)
	}
	if !isLowerHex(hex) {
		return Digest{}, fmt.Errorf("%w: %s hex %q is not lowercase hex", ErrInvalidDigest, algorithm, hex)
	}
	return Digest{Algorithm: algorithm, Hex: hex}, nil
}

// Parse reads a digest's text form: 64 lowercase hex for SHA-256,
// "algorithm:hex" for another algorithm. "sha256:<hex>" is refused rather
// than read, because accepting a second spelling would let two different
// strings name one identity (and a field that holds bare hex today would
// start accepting the prefixed form).
func Parse(s string) (Digest, error) {
	alg, hex, prefixed := strings.Cut(s, ":")
	if !prefixed {
		return NewDigest(SHA256, s)
	}
	if alg == SHA256 {
		return Digest{}, fmt.Errorf("%w: %q: a SHA-256 digest is written as bare hex, without %q", ErrInvalidDigest, s, SHA256+":")
	}
	return NewDigest(alg, hex)
}

// SHA256Sum returns the digest whose bytes are sum, a SHA-256 output.
func SHA256Sum(sum [32]byte) Digest {
	return Digest{Algorithm: SHA256, Hex: hex.EncodeToString(sum[:])}
}

// MustParse is Parse for digests written into the program, where an error
// is a programming mistake.
func MustParse(s string) Digest {
	d, err := Parse(s)
	if err != nil {
		panic(fmt.Sprintf("identity: %v", err))
	}
	return d
}

// IsZero reports whether d is the zero Digest (no digest at all, not the
// all-zero hex).
func (d Digest) IsZero() bool { return d == Digest{} }

// String returns the text form that Parse reads; "" for the zero Digest.
func (d Digest) String() string {
	if d.Algorithm == SHA256 || d.IsZero() {
		return d.Hex
	}
	return d.Algorithm + ":" + d.Hex
}

// MarshalText writes the text form. The zero Digest and a Digest built
// without NewDigest that does not validate are errors, so an unset or
// corrupt identity never reaches the wire.
func (d Digest) MarshalText() ([]byte, error) {
	if d.IsZero() {
		return nil, fmt.Errorf("%w: marshal an unset digest", ErrInvalidDigest)
	}
	if _, err := NewDigest(d.Algorithm, d.Hex); err != nil {
		return nil, err
	}
	return []byte(d.String()), nil
}

// UnmarshalText parses the text form.
func (d *Digest) UnmarshalText(text []byte) error {
	parsed, err := Parse(string(text))
	if err != nil {
		return err
	}
	*d = parsed
	return nil
}

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
