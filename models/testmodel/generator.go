package testmodel

import (
	"crypto/sha256"
	"encoding/binary"
)

// GeneratorName names the value generator below. It is recorded in
// config.json; any change to the values it produces needs a new name.
const GeneratorName = "cacheon.test-model.v1"

// The generator is counter-based: element j of a tensor is a pure function
// of (seed, tensor name, j), so tensors can be produced in any order, in
// pieces or in parallel and still come out byte-identical.
//
//   - Stream key: the first 8 bytes, little-endian, of
//     SHA-256(GeneratorName || 0x00 || seed as 8 bytes little-endian || name).
//   - Word c of a stream is the SplitMix64 output for counter c: the state
//     key + (c+1)·0x9e3779b97f4a7c15 passed through the SplitMix64 finalizer.
//   - Element j uses words 6j … 6j+5, split into twelve 32-bit uniforms
//     u_k. Their Irwin–Hall sum minus 6 (scaled by 2^-32) has mean 0 and
//     variance exactly 1 and is bounded by ±6: z = (Σ u_k − 6·2^32) · 2^-32.
//   - A matrix element is float32(float64(z·std)); a norm weight is
//     float32(1 + float64(z·std)). Both are then rounded to bfloat16.
//
// Irwin–Hall rather than Box–Muller keeps the whole path to z in integer
// arithmetic and the rest in single, explicitly rounded IEEE operations
// (no log, no sine, nothing a compiler may fuse), so every platform
// produces the same bytes.

const (
	splitMixGamma = 0x9e3779b97f4a7c15
	wordsPerValue = 6
)

// streamKey derives the SplitMix64 stream of one tensor.
func streamKey(seed uint64, name string) uint64 {
	h := sha256.New()
	h.Write([]byte(GeneratorName))
	h.Write([]byte{0})
	var s [8]byte
	binary.LittleEndian.PutUint64(s[:], seed)
	h.Write(s[:])
	h.Write([]byte(name))
	return binary.LittleEndian.Uint64(h.Sum(nil)[:8])
}

func splitMix64(key, counter uint64) uint64 {
	z := key + (counter+1)*splitMixGamma
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// standardValue returns z for element j of the stream key: an
// approximately standard normal value with mean 0 and variance 1.
func standardValue(key uint64, j uint64) float64 {
	var sum uint64
	base := j * wordsPerValue
	for c := uint64(0); c < wordsPerValue; c++ {
		w := splitMix64(key, base+c)
		sum += w&0xffffffff + w>>32
	}
	// |sum − 6·2^32| < 2^35, exactly representable; the scaling is by a
	// power of two, so z is exact.
	return float64(int64(sum)-6<<32) * 0x1p-32
}
