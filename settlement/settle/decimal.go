package settle

import (
	"fmt"
	"math/big"
)

// maxDecimalLen bounds a speedup string, so a hostile row cannot make
// the exact arithmetic below slow. 17 significant digits (what the
// speed policies write) need far fewer.
const maxDecimalLen = 64

// ppmScale is 10^6: speedup_ppm = floor(speedup × 10^6).
var ppmScale = big.NewInt(1_000_000)

// parseDecimal reads a canonical decimal string exactly: digits, an
// optional fraction, no sign, no exponent, no leading zero before another
// digit and no trailing zero after the point. Exactly one spelling per
// value is accepted, because speedups are compared and hashed as written
// and "1.50" must not be a second name for "1.5".
func parseDecimal(s string) (*big.Rat, error) {
	if s == "" {
		return nil, fmt.Errorf("empty decimal")
	}
	if len(s) > maxDecimalLen {
		return nil, fmt.Errorf("decimal %.20q… has %d characters, at most %d", s, len(s), maxDecimalLen)
	}
	intEnd := len(s)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '.' {
			intEnd = i
			break
		}
		if c < '0' || c > '9' {
			return nil, fmt.Errorf("decimal %q: %q is not a digit (no sign, no exponent)", s, c)
		}
	}
	intPart := s[:intEnd]
	if intPart == "" {
		return nil, fmt.Errorf("decimal %q has no integer part", s)
	}
	if len(intPart) > 1 && intPart[0] == '0' {
		return nil, fmt.Errorf("decimal %q has a leading zero", s)
	}
	if intEnd < len(s) {
		frac := s[intEnd+1:]
		if frac == "" {
			return nil, fmt.Errorf("decimal %q ends in its point", s)
		}
		for i := 0; i < len(frac); i++ {
			if frac[i] < '0' || frac[i] > '9' {
				return nil, fmt.Errorf("decimal %q: %q is not a digit", s, frac[i])
			}
		}
		if frac[len(frac)-1] == '0' {
			return nil, fmt.Errorf("decimal %q has a trailing zero (not canonical)", s)
		}
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return nil, fmt.Errorf("decimal %q does not parse", s)
	}
	return r, nil
}

// ppmOf is floor(x × 10^6) for x ≥ 0, exactly.
func ppmOf(x *big.Rat) *big.Int {
	n := new(big.Int).Mul(x.Num(), ppmScale)
	return n.Quo(n, x.Denom())
}
