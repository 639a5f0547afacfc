package safetensors

import "math"

// BF16FromFloat32 rounds f to bfloat16 (the top 16 bits of a float32) to
// nearest, ties to even, as hardware conversions and torch do. NaN stays
// a quiet NaN of the same sign; values beyond the bfloat16 range round to
// infinity.
func BF16FromFloat32(f float32) uint16 {
	bits := math.Float32bits(f)
	if bits&0x7fffffff > 0x7f800000 {
		// Truncation could turn a NaN with only low payload bits into
		// infinity; force the quiet bit instead.
		return uint16(bits>>16) | 0x0040
	}
	rounding := uint32(0x7fff) + (bits>>16)&1
	return uint16((bits + rounding) >> 16)
}

// Float32FromBF16 widens a bfloat16 to float32 exactly.
func Float32FromBF16(b uint16) float32 {
	return math.Float32frombits(uint32(b) << 16)
}
