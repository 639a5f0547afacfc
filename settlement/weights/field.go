package weights

import (
	"fmt"
	"math"
	"math/big"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/cacheon/engine/internal/canonjson"
	"github.com/cacheon/engine/internal/identity"
)

// MaxInt is the largest integer any field of the emissions inputs takes
// (blocks, ppm, bounty units): 2⁶³−1, so every value is a non-negative
// int64 on every platform and in every language that reads the weight
// file, and h + age (two such values) never overflows a uint64.
const MaxInt = math.MaxInt64

// MaxHotkeyLength bounds a hotkey, in characters, as upstream does.
const MaxHotkeyLength = 256

// reader reads typed fields out of a document that canonjson parsed, so
// that every refusal names its JSON path. canonjson, not encoding/json,
// parses the inputs: it refuses duplicate keys (which encoding/json
// silently resolves to the last one, letting two readers of one file see
// two claims), floats, invalid UTF-8 and trailing data.
type reader struct{ class error }

func (r reader) fail(where, format string, args ...any) error {
	return &FieldError{Class: r.class, Where: where, Reason: fmt.Sprintf(format, args...)}
}

// parse parses data, naming the document in a syntax error.
func (r reader) parse(data []byte) (any, error) {
	v, err := canonjson.Parse(data)
	if err != nil {
		return nil, r.fail("(document)", "%v", err)
	}
	return v, nil
}

// object checks that v is an object with exactly the required fields,
// plus any of the optional ones.
func (r reader) object(v any, where string, required []string, optional ...string) (map[string]any, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, r.fail(where, "is %s, want an object", kind(v))
	}
	allowed := map[string]bool{}
	for _, f := range required {
		allowed[f] = true
		if _, ok := m[f]; !ok {
			return nil, r.fail(join(where, f), "missing")
		}
	}
	for _, f := range optional {
		allowed[f] = true
	}
	var unknown []string
	for k := range m {
		if !allowed[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, r.fail(join(where, unknown[0]), "unknown field (the fields are %s)", strings.Join(append(append([]string{}, required...), optional...), ", "))
	}
	return m, nil
}

func (r reader) array(v any, where string) ([]any, error) {
	a, ok := v.([]any)
	if !ok {
		return nil, r.fail(where, "is %s, want an array", kind(v))
	}
	return a, nil
}

// uint reads a JSON integer in [min, MaxInt].
func (r reader) uint(m map[string]any, where, field string, min uint64) (uint64, error) {
	at := join(where, field)
	n, ok := m[field].(*big.Int)
	if !ok {
		return 0, r.fail(at, "is %s, want an integer", kind(m[field]))
	}
	if n.Sign() < 0 || !n.IsInt64() {
		return 0, r.fail(at, "%s is outside [%d, %d]", n, min, uint64(MaxInt))
	}
	u := uint64(n.Int64())
	if u < min {
		return 0, r.fail(at, "%d is below the minimum %d", u, min)
	}
	return u, nil
}

func (r reader) string(m map[string]any, where, field string) (string, error) {
	s, ok := m[field].(string)
	if !ok {
		return "", r.fail(join(where, field), "is %s, want a string", kind(m[field]))
	}
	return s, nil
}

// digest reads a SHA-256 digest: 64 lowercase hex, not all zero (the
// all-zero digest is a placeholder, never an identity).
func (r reader) digest(m map[string]any, where, field string) (identity.Digest, error) {
	s, err := r.string(m, where, field)
	if err != nil {
		return identity.Digest{}, err
	}
	if err := checkDigest(s); err != nil {
		return identity.Digest{}, r.fail(join(where, field), "%v", err)
	}
	return identity.MustParse(s), nil
}

func (r reader) hotkey(m map[string]any, where, field string) (string, error) {
	s, err := r.string(m, where, field)
	if err != nil {
		return "", err
	}
	if err := checkHotkey(s); err != nil {
		return "", r.fail(join(where, field), "%v", err)
	}
	return s, nil
}

func checkDigest(s string) error {
	if !identity.IsHex64(s) {
		return fmt.Errorf("%q is not a 64-character lowercase hex digest", s)
	}
	if identity.IsZeroDigest(s) {
		return fmt.Errorf("the all-zero digest is not allowed")
	}
	return nil
}

// checkDigestValue checks a typed digest the way checkDigest checks text.
func checkDigestValue(d identity.Digest) error {
	if d.Algorithm != identity.SHA256 {
		return fmt.Errorf("%q is not a SHA-256 digest", d.String())
	}
	return checkDigest(d.Hex)
}

// checkHotkey applies upstream's hotkey rule: 1 to 256 characters, none of
// them whitespace. Python's str whitespace includes the separators
// U+001C–U+001F, which unicode.IsSpace does not, so they are added.
func checkHotkey(s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("%q is not valid UTF-8", s)
	}
	n := utf8.RuneCountInString(s)
	if n < 1 || n > MaxHotkeyLength {
		return fmt.Errorf("hotkey %q has %d characters, want 1 to %d", s, n, MaxHotkeyLength)
	}
	for _, c := range s {
		if unicode.IsSpace(c) || (c >= 0x1c && c <= 0x1f) {
			return fmt.Errorf("hotkey %q contains whitespace", s)
		}
	}
	return nil
}

func join(where, field string) string {
	if where == "" {
		return field
	}
	return where + "." + field
}

func kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	case *big.Int:
		return "an integer"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("a %T", v)
}
