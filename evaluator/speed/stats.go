package speed

import (
	"math"
	"math/big"
	"sort"
)

// Median of xs as Python's statistics.median computes it: the middle value,
// or the float mean of the two middle values.
func Median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// mean is the exact mean of xs rounded once to float64, as Python's
// statistics.mean computes it (through fractions, not a running sum).
func mean(xs []float64) float64 {
	sum := new(big.Rat)
	for _, x := range xs {
		sum.Add(sum, new(big.Rat).SetFloat64(x))
	}
	sum.Quo(sum, new(big.Rat).SetInt64(int64(len(xs))))
	f, _ := sum.Float64()
	return f
}

// pstdev is the population standard deviation of xs: the square root of
// the exact mean squared deviation, correctly rounded (Python 3.11+'s
// statistics.pstdev).
func pstdev(xs []float64) float64 {
	n := new(big.Rat).SetInt64(int64(len(xs)))
	sum := new(big.Rat)
	rs := make([]*big.Rat, len(xs))
	for i, x := range xs {
		rs[i] = new(big.Rat).SetFloat64(x)
		sum.Add(sum, rs[i])
	}
	mu := new(big.Rat).Quo(sum, n)
	ss := new(big.Rat)
	for _, r := range rs {
		d := new(big.Rat).Sub(r, mu)
		ss.Add(ss, d.Mul(d, d))
	}
	ss.Quo(ss, n)
	// 256 bits of precision then one rounding to float64: the square root
	// of a rational is either exact or irrational, so the double rounding
	// cannot land on a tie.
	v := new(big.Float).SetPrec(256).SetRat(ss)
	v.Sqrt(v)
	f, _ := v.Float64()
	return f
}

// relativeSpread is how far a set of rates disagrees: infinite below two,
// (max−min)/mean for two, population stdev/mean for three or more.
func relativeSpread(xs []float64) float64 {
	switch len(xs) {
	case 0, 1:
		return math.Inf(1)
	case 2:
		lo, hi := math.Min(xs[0], xs[1]), math.Max(xs[0], xs[1])
		return (hi - lo) / mean(xs)
	default:
		return pstdev(xs) / mean(xs)
	}
}

func minOf(xs []float64) float64 {
	m := xs[0]
	for _, x := range xs[1:] {
		m = math.Min(m, x)
	}
	return m
}

func maxOf(xs []float64) float64 {
	m := xs[0]
	for _, x := range xs[1:] {
		m = math.Max(m, x)
	}
	return m
}
