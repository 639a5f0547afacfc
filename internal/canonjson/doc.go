// Package canonjson encodes and parses the canonical JSON that every
// Cacheon identity is computed over.
//
// The format is byte-compatible with the upstream Python toolchain
// (json.dumps with sort_keys=True, separators=(",", ":"),
// ensure_ascii=False, allow_nan=False) restricted to the value universe
// upstream accepts: null, booleans, integers of any size, strings, arrays
// and objects with string keys. Floats are rejected everywhere: identities
// carry non-integer numbers as canonical decimal strings instead, so that a
// value never hashes differently because two languages print a float
// differently.
//
// Go's encoding/json cannot be used directly: it escapes <, > and &, always
// escapes U+2028 and U+2029, writes \b and \f as \u0008 and \u000c, and
// cannot tell 1 from 1.0 once a document is decoded. This package writes
// the exact Python escaping instead and parses JSON text without losing
// that distinction.
package canonjson
