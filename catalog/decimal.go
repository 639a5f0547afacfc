package catalog

import (
	"fmt"
	"math/big"
	"strings"
)

// Decimal is a non-integer number as identities carry it: a canonical
// decimal string. Canonical JSON rejects floats, because two languages can
// print the same float differently; a threshold such as 1e-5 therefore
// travels as the string "0.00001".
//
// The canonical form has no exponent, no sign for zero, no leading zeros
// in the integer part beyond a single "0", and no trailing zeros in the
// fraction; a fraction that becomes empty drops its point. So "0.020"
// becomes "0.02", "1.0" becomes "1", "000" and "-0.0" become "0", and
// "0.00001" stays as it is. The zero value of Decimal is "0".
type Decimal struct {
	text string // canonical; "" means "0"
}

// ParseDecimal reads a decimal written as an optional "-", one or more
// digits, and optionally "." followed by one or more digits, and returns
// it in canonical form. Exponents, a leading "+", whitespace, a bare
// ".5" or "5.", hexadecimal, "NaN" and "Inf" are rejected: the catalog
// is authored by people, and a spelling the rule does not cover is more
// likely a mistake than a number.
func ParseDecimal(s string) (Decimal, error) {
	body, negative := strings.CutPrefix(s, "-")
	intPart, fracPart, hasPoint := strings.Cut(body, ".")
	if !allDigits(intPart) || hasPoint && !allDigits(fracPart) {
		return Decimal{}, fmt.Errorf("%q is not a decimal: write digits with an optional \"-\" and an optional fraction after \".\", without exponent (for example \"0.00001\", not \"1e-5\")", s)
	}
	intPart = strings.TrimLeft(intPart, "0")
	fracPart = strings.TrimRight(fracPart, "0")
	if intPart == "" {
		intPart = "0"
	}
	text := intPart
	if fracPart != "" {
		text += "." + fracPart
	}
	if negative && text != "0" {
		text = "-" + text
	}
	return Decimal{text: text}, nil
}

// MustDecimal is ParseDecimal for constants written in the program.
func MustDecimal(s string) Decimal {
	d, err := ParseDecimal(s)
	if err != nil {
		panic(err)
	}
	return d
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// String returns the canonical decimal string.
func (d Decimal) String() string {
	if d.text == "" {
		return "0"
	}
	return d.text
}

// IsZero reports whether d is zero.
func (d Decimal) IsZero() bool { return d.String() == "0" }

// Rat returns d as an exact rational number.
func (d Decimal) Rat() *big.Rat {
	r, ok := new(big.Rat).SetString(d.String())
	if !ok {
		// The canonical grammar is a subset of what SetString accepts.
		panic(fmt.Sprintf("catalog: canonical decimal %q not parsable", d.String()))
	}
	return r
}

// Cmp compares d and e as numbers: -1, 0 or +1.
func (d Decimal) Cmp(e Decimal) int { return d.Rat().Cmp(e.Rat()) }

// MarshalText returns the canonical string, so a Decimal encodes as a JSON
// string wherever it appears.
func (d Decimal) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText parses a decimal with ParseDecimal.
func (d *Decimal) UnmarshalText(b []byte) error {
	v, err := ParseDecimal(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}
