package fingerprint

import (
	"hash/fnv"
	"sort"
)

// winnow selects the fingerprints of a token stream as MOSS does
// (Schleimer, Wilkerson and Aiken, "Winnowing: local algorithms for
// document fingerprinting", 2003): hash every k-gram of tokens, and from
// each window of w consecutive k-gram hashes keep the smallest (the
// rightmost on a tie). Any run of at least w+k-1 tokens two streams share
// yields a shared fingerprint, and no run shorter than k does. The result
// is sorted and without duplicates: containment counts distinct hashes.
func winnow(tokens []string, k, w int) []uint64 {
	if len(tokens) < k {
		return []uint64{}
	}
	th := make([]uint64, len(tokens))
	for i, t := range tokens {
		h := fnv.New64a()
		h.Write([]byte(t))
		th[i] = h.Sum64()
	}
	grams := make([]uint64, len(tokens)-k+1)
	for i := range grams {
		// FNV-1a over the k token hashes: order-sensitive, so a k-gram
		// is a sequence, not a bag.
		h := uint64(14695981039346656037)
		for _, x := range th[i : i+k] {
			for s := 0; s < 64; s += 8 {
				h ^= (x >> s) & 0xff
				h *= 1099511628211
			}
		}
		grams[i] = h
	}
	if len(grams) < w {
		w = len(grams)
	}
	picked := map[uint64]bool{}
	for i := 0; i+w <= len(grams); i++ {
		m := i
		for j := i; j < i+w; j++ {
			if grams[j] <= grams[m] {
				m = j
			}
		}
		picked[grams[m]] = true
	}
	out := make([]uint64, 0, len(picked))
	for h := range picked {
		out = append(out, h)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// intersect counts the values two sorted sets share.
func intersect(a, b []uint64) int {
	n, i, j := 0, 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] == b[j]:
			n++
			i++
			j++
		case a[i] < b[j]:
			i++
		default:
			j++
		}
	}
	return n
}

// union merges sorted sets into one.
func union(sets ...[]uint64) []uint64 {
	seen := map[uint64]bool{}
	for _, s := range sets {
		for _, h := range s {
			seen[h] = true
		}
	}
	out := make([]uint64, 0, len(seen))
	for h := range seen {
		out = append(out, h)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
