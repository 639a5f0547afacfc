package canonjson

import (
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// The limits of Parse. Each refusal wraps its error, so callers can tell
// a limit from malformed input with errors.Is.
const (
	// MaxInputBytes bounds the JSON text Parse reads. It is above the
	// largest document any caller hands it (a safetensors header, at most
	// 100 MiB); callers reading untrusted input bound it lower.
	MaxInputBytes = 128 << 20
	// MaxDepth bounds the nesting of arrays and objects, so hostile input
	// cannot exhaust the stack.
	MaxDepth = 512
	// MaxNumberDigits bounds the digits of an integer literal. Converting
	// decimal text to an integer costs time quadratic in its length, and
	// the upstream Python toolchain refuses to convert more than 4300
	// digits (CPython's default sys.int_info.default_max_str_digits), so
	// a longer integer could never match an upstream identity anyway.
	MaxNumberDigits = 4300
)

var (
	// ErrTooLarge is wrapped when the input exceeds MaxInputBytes.
	ErrTooLarge = errors.New("JSON text exceeds the size limit")
	// ErrTooDeep is wrapped when arrays and objects nest deeper than MaxDepth.
	ErrTooDeep = errors.New("JSON nesting exceeds the depth limit")
	// ErrNumberTooLong is wrapped when an integer has more than MaxNumberDigits digits.
	ErrNumberTooLong = errors.New("JSON integer exceeds the digit limit")
)

// Parse decodes JSON text into the canonical value universe: nil, bool,
// string, *big.Int, []any and map[string]any.
//
// It is stricter than encoding/json where identities need it: a number
// written with a fraction or exponent is a float and is rejected (Python's
// json module would decode 1.0 as a float, which upstream then refuses);
// duplicate object keys, invalid UTF-8, lone UTF-16 surrogates and trailing
// data are errors. Errors carry the JSON path and the line and column.
func Parse(data []byte) (any, error) {
	return parseAt(data, "$")
}

func parseAt(data []byte, root string) (any, error) {
	if len(data) > MaxInputBytes {
		return nil, &PathError{Path: root, Reason: fmt.Sprintf("%v: the input is %d bytes, the limit %d", ErrTooLarge, len(data), MaxInputBytes), Err: ErrTooLarge}
	}
	p := &parser{data: data}
	p.skipSpace()
	v, err := p.value(root)
	if err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.pos != len(p.data) {
		return nil, p.errorf(root, "unexpected data after the top-level value")
	}
	return v, nil
}

type parser struct {
	data  []byte
	pos   int
	depth int
}

func (p *parser) errorf(path, format string, args ...any) error {
	return p.limitf(nil, path, format, args...)
}

// limitf is errorf for a broken limit, which the error wraps.
func (p *parser) limitf(limit error, path, format string, args ...any) error {
	line, col := 1, 1
	for i := 0; i < p.pos && i < len(p.data); i++ {
		if p.data[i] == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	return &PathError{Path: path, Reason: fmt.Sprintf("%s (line %d, column %d)", fmt.Sprintf(format, args...), line, col), Err: limit}
}

func (p *parser) skipSpace() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) value(path string) (any, error) {
	if p.pos >= len(p.data) {
		return nil, p.errorf(path, "unexpected end of input")
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object(path)
	case c == '[':
		return p.array(path)
	case c == '"':
		return p.string(path)
	case c == '-' || c >= '0' && c <= '9':
		return p.number(path)
	case p.literal("true"):
		return true, nil
	case p.literal("false"):
		return false, nil
	case p.literal("null"):
		return nil, nil
	case p.literal("NaN") || p.literal("Infinity") || p.literal("-Infinity"):
		return nil, p.errorf(path, "non-finite numbers are not allowed")
	default:
		return nil, p.errorf(path, "unexpected character %q", rune(c))
	}
}

func (p *parser) literal(word string) bool {
	if len(p.data)-p.pos >= len(word) && string(p.data[p.pos:p.pos+len(word)]) == word {
		p.pos += len(word)
		return true
	}
	return false
}

func (p *parser) enter(path string) error {
	p.depth++
	if p.depth > MaxDepth {
		return p.limitf(ErrTooDeep, path, "%v: nesting deeper than %d levels", ErrTooDeep, MaxDepth)
	}
	return nil
}

func (p *parser) object(path string) (any, error) {
	if err := p.enter(path); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	p.pos++ // '{'
	out := map[string]any{}
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		return out, nil
	}
	for {
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return nil, p.errorf(path, "object keys must be strings")
		}
		key, err := p.string(path)
		if err != nil {
			return nil, err
		}
		k := key.(string)
		child := childPath(path, k)
		if _, dup := out[k]; dup {
			return nil, p.errorf(child, "duplicate key %q", k)
		}
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return nil, p.errorf(child, "expected ':' after object key")
		}
		p.pos++
		p.skipSpace()
		v, err := p.value(child)
		if err != nil {
			return nil, err
		}
		out[k] = v
		p.skipSpace()
		if p.pos >= len(p.data) {
			return nil, p.errorf(path, "unexpected end of input in object")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case '}':
			p.pos++
			return out, nil
		default:
			return nil, p.errorf(path, "expected ',' or '}' in object")
		}
	}
}

func (p *parser) array(path string) (any, error) {
	if err := p.enter(path); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	p.pos++ // '['
	out := []any{}
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		return out, nil
	}
	for i := 0; ; i++ {
		p.skipSpace()
		v, err := p.value(fmt.Sprintf("%s[%d]", path, i))
		if err != nil {
			return nil, err
		}
		out = append(out, v)
		p.skipSpace()
		if p.pos >= len(p.data) {
			return nil, p.errorf(path, "unexpected end of input in array")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			return out, nil
		default:
			return nil, p.errorf(path, "expected ',' or ']' in array")
		}
	}
}

func (p *parser) number(path string) (any, error) {
	start := p.pos
	if p.data[p.pos] == '-' {
		p.pos++
	}
	digits := p.pos
	for p.pos < len(p.data) && p.data[p.pos] >= '0' && p.data[p.pos] <= '9' {
		p.pos++
	}
	if p.pos == digits {
		return nil, p.errorf(path, "invalid number")
	}
	if p.data[digits] == '0' && p.pos-digits > 1 {
		return nil, p.errorf(path, "invalid number: leading zeros")
	}
	if p.pos-digits > MaxNumberDigits {
		p.pos = start // point the location at the number itself
		return nil, p.limitf(ErrNumberTooLong, path, "%v: an integer has at most %d digits", ErrNumberTooLong, MaxNumberDigits)
	}
	if p.pos < len(p.data) {
		switch p.data[p.pos] {
		case '.', 'e', 'E':
			text := p.floatText(start)
			p.pos = start // point the location at the number itself
			return nil, p.errorf(path, "float %s is not allowed in an identity (carry it as a canonical decimal string)", text)
		}
	}
	n, ok := new(big.Int).SetString(string(p.data[start:p.pos]), 10)
	if !ok {
		return nil, p.errorf(path, "invalid number")
	}
	return n, nil
}

func (p *parser) floatText(start int) string {
	end := p.pos
	for end < len(p.data) && (p.data[end] >= '0' && p.data[end] <= '9' || p.data[end] == '.' || p.data[end] == 'e' || p.data[end] == 'E' || p.data[end] == '+' || p.data[end] == '-') {
		end++
	}
	return string(p.data[start:end])
}

func (p *parser) string(path string) (any, error) {
	p.pos++ // opening quote
	var out []byte
	for {
		if p.pos >= len(p.data) {
			return nil, p.errorf(path, "unterminated string")
		}
		c := p.data[p.pos]
		switch {
		case c == '"':
			p.pos++
			return string(out), nil
		case c == '\\':
			r, err := p.escape(path)
			if err != nil {
				return nil, err
			}
			out = utf8.AppendRune(out, r)
		case c < 0x20:
			return nil, p.errorf(path, "control character %q must be escaped in a string", rune(c))
		case c < utf8.RuneSelf:
			out = append(out, c)
			p.pos++
		default:
			r, size := utf8.DecodeRune(p.data[p.pos:])
			if r == utf8.RuneError && size <= 1 {
				return nil, p.errorf(path, "string is not valid UTF-8")
			}
			out = append(out, p.data[p.pos:p.pos+size]...)
			p.pos += size
		}
	}
}

func (p *parser) escape(path string) (rune, error) {
	p.pos++ // backslash
	if p.pos >= len(p.data) {
		return 0, p.errorf(path, "unterminated escape")
	}
	c := p.data[p.pos]
	p.pos++
	switch c {
	case '"', '\\', '/':
		return rune(c), nil
	case 'b':
		return '\b', nil
	case 'f':
		return '\f', nil
	case 'n':
		return '\n', nil
	case 'r':
		return '\r', nil
	case 't':
		return '\t', nil
	case 'u':
		r, err := p.hex4(path)
		if err != nil {
			return 0, err
		}
		if utf16.IsSurrogate(r) {
			if r >= 0xDC00 || !p.literal(`\u`) {
				return 0, p.errorf(path, "lone UTF-16 surrogate \\u%04x cannot be encoded as UTF-8", r)
			}
			low, err := p.hex4(path)
			if err != nil {
				return 0, err
			}
			combined := utf16.DecodeRune(r, low)
			if combined == utf8.RuneError {
				return 0, p.errorf(path, "lone UTF-16 surrogate \\u%04x cannot be encoded as UTF-8", r)
			}
			return combined, nil
		}
		return r, nil
	default:
		return 0, p.errorf(path, "invalid escape \\%c", c)
	}
}

func (p *parser) hex4(path string) (rune, error) {
	if len(p.data)-p.pos < 4 {
		return 0, p.errorf(path, "truncated \\u escape")
	}
	v, err := strconv.ParseUint(string(p.data[p.pos:p.pos+4]), 16, 32)
	if err != nil {
		return 0, p.errorf(path, "invalid \\u escape")
	}
	p.pos += 4
	return rune(v), nil
}

var errNotInteger = errors.New("not an integer")

func parseInteger(text string) (*big.Int, error) {
	if len(strings.TrimPrefix(text, "-")) > MaxNumberDigits {
		return nil, fmt.Errorf("%w: an integer has at most %d digits", ErrNumberTooLong, MaxNumberDigits)
	}
	n, ok := new(big.Int).SetString(text, 10)
	if !ok {
		if _, err := strconv.ParseFloat(text, 64); err == nil {
			return nil, fmt.Errorf("float %s is not allowed in an identity (carry it as a canonical decimal string)", text)
		}
		return nil, fmt.Errorf("%q: %w", text, errNotInteger)
	}
	return n, nil
}
