package weights

import (
	"fmt"
	"math/big"
	"regexp"
)

// decimalPattern is the plain decimal a settled speedup is written as:
// digits, optionally a point and more digits; no sign, exponent or
// surrounding space.
var decimalPattern = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?$`)

// SpeedupPPM converts a settled conservative speedup, a canonical decimal
// string such as "1.0734", to the speedup_ppm a claim carries:
// ⌊speedup × 10⁶⌋, computed exactly (no float ever sees the value, so
// "1.000001" is 1000001 and not 1000000.9999). The result must fit a
// claim field (at most 2⁶³−1).
func SpeedupPPM(decimal string) (uint64, error) {
	bad := func(format string, args ...any) error {
		return &FieldError{Class: ErrClaim, Where: "speedup", Reason: fmt.Sprintf(format, args...)}
	}
	if len(decimal) > 64 || !decimalPattern.MatchString(decimal) {
		return 0, bad("%q is not a plain decimal number", decimal)
	}
	r, ok := new(big.Rat).SetString(decimal)
	if !ok {
		return 0, bad("%q is not a decimal number", decimal)
	}
	r.Mul(r, big.NewRat(speedupUnit, 1))
	ppm := new(big.Int).Quo(r.Num(), r.Denom()) // both positive: Quo is the floor
	if !ppm.IsInt64() {
		return 0, bad("%s × 10⁶ is above %d", decimal, uint64(MaxInt))
	}
	return uint64(ppm.Int64()), nil
}
