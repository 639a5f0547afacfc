package settle

import (
	"math/big"
	"strings"
	"testing"
)

// FuzzParseDecimal: whatever parseDecimal accepts is the one canonical
// spelling of its value, and ppmOf is the exact floor.
func FuzzParseDecimal(f *testing.F) {
	for _, s := range []string{"1", "1.25", "0.5", "10", "1.0956091854508474", "1.50", "01", ".5", "1.", "1e3", "-1", "+2", "", "1.2.3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := parseDecimal(s)
		if err != nil {
			return
		}
		frac := 0
		if _, after, ok := strings.Cut(s, "."); ok {
			frac = len(after)
		}
		if got := r.FloatString(frac); got != s {
			t.Fatalf("parseDecimal(%q) accepted a spelling of %s", s, got)
		}
		// floor(r × 10^6) ≤ r × 10^6 < floor + 1
		ppm := new(big.Rat).SetInt(ppmOf(r))
		scaled := new(big.Rat).Mul(r, new(big.Rat).SetInt(ppmScale))
		next := new(big.Rat).Add(ppm, big.NewRat(1, 1))
		if ppm.Cmp(scaled) > 0 || scaled.Cmp(next) >= 0 {
			t.Fatalf("ppmOf(%s) = %s, not the floor of %s", s, ppm.FloatString(0), scaled.FloatString(8))
		}
	})
}
