package pyparse

import (
	"sort"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// nfkc normalizes an identifier exactly as Python does
// (unicodedata.normalize("NFKC", name)): full compatibility
// decomposition, canonical ordering, canonical composition, as Unicode
// Standard Annex #15 defines them.
//
// The x/text normalizer is not used for whole identifiers because it
// differs from Python in two ways. It writes the stream-safe text format,
// inserting U+034F COMBINING GRAPHEME JOINER after 30 consecutive
// combining marks; and it composes a mark with a starter across another
// starter that itself combines backwards ("O\u09be\u031e\u0304" becomes
// "\u014c\u09be\u031e"). Either way two spellings Python reads as one name
// (an import alias and its use, say) could become two names here, which
// would let code walk around the scanner. Only the library's per-character
// data is used: decompositions, combining classes, and pairwise
// composition. The work is linear in the length of the identifier apart
// from sorting runs of combining marks.
func nfkc(s string) string {
	rs := decompose(s)
	canonicalOrder(rs)
	rs = compose(rs)
	var b strings.Builder
	b.Grow(len(s))
	for _, c := range rs {
		b.WriteRune(c.r)
	}
	return b.String()
}

type cccRune struct {
	r   rune
	ccc uint8
}

const hangulFirst, hangulLast = 0xAC00, 0xD7A3

// decompose returns the full compatibility decomposition of s with each
// character's canonical combining class. The library's table holds each
// character's full decomposition (at most 18 characters, far below the
// stream-safe limit); Hangul syllables, which decompose by formula, go
// through its NFKD instead.
func decompose(s string) []cccRune {
	rs := make([]cccRune, 0, len(s))
	var one [utf8.UTFMax]byte
	for _, r := range s {
		n := utf8.EncodeRune(one[:], r)
		p := norm.NFKD.Properties(one[:n])
		dec := p.Decomposition()
		if r >= hangulFirst && r <= hangulLast {
			dec = norm.NFKD.Bytes(one[:n])
		} else if len(dec) == 0 {
			rs = append(rs, cccRune{r, p.CCC()})
			continue
		}
		for i := 0; i < len(dec); {
			d, n := utf8.DecodeRune(dec[i:])
			rs = append(rs, cccRune{d, norm.NFKD.Properties(dec[i : i+n]).CCC()})
			i += n
		}
	}
	return rs
}

// canonicalOrder sorts each run of combining marks stably by class.
func canonicalOrder(rs []cccRune) {
	for i := 0; i < len(rs); {
		if rs[i].ccc == 0 {
			i++
			continue
		}
		j := i
		for j < len(rs) && rs[j].ccc != 0 {
			j++
		}
		run := rs[i:j]
		sort.SliceStable(run, func(a, b int) bool { return run[a].ccc < run[b].ccc })
		i = j
	}
}

// compose is UAX #15's canonical composition: each character joins the
// last starter unless a character of the same or a higher class, or any
// starter, stands between them.
func compose(rs []cccRune) []cccRune {
	if len(rs) == 0 {
		return rs
	}
	starterPos, out := 0, 1
	lastClass := int(rs[0].ccc)
	if lastClass != 0 {
		lastClass = 256 // a leading combining mark has no starter to join
	}
	for i := 1; i < len(rs); i++ {
		c := rs[i]
		if lastClass < int(c.ccc) || lastClass == 0 {
			if comp, ok := composePair(rs[starterPos].r, c.r); ok {
				rs[starterPos] = cccRune{comp, 0}
				continue
			}
		}
		if c.ccc == 0 {
			starterPos = out
		}
		lastClass = int(c.ccc)
		rs[out] = c
		out++
	}
	return rs[:out]
}

// composePair returns the primary composite of a followed by b, if there
// is one: exactly when NFC turns the pair into a single character.
func composePair(a, b rune) (rune, bool) {
	var buf [2 * utf8.UTFMax]byte
	second := utf8.AppendRune(buf[utf8.UTFMax:utf8.UTFMax], b)
	if norm.NFC.Properties(second).BoundaryBefore() {
		return 0, false // b never combines with what precedes it
	}
	c := norm.NFC.Bytes(utf8.AppendRune(utf8.AppendRune(buf[:0], a), b))
	r, n := utf8.DecodeRune(c)
	if n != len(c) || r == utf8.RuneError {
		return 0, false
	}
	return r, true
}
