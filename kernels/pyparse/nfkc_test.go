package pyparse

import (
	"testing"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// decompose reads each character's decomposition straight from the
// library's table, which is only right while the table holds full
// decompositions. This checks that for every character, so a library
// upgrade that changed it would fail here rather than change names.
func TestTableDecompositionsAreFull(t *testing.T) {
	var one [utf8.UTFMax]byte
	for r := rune(0); r <= utf8.MaxRune; r++ {
		if !utf8.ValidRune(r) || r >= hangulFirst && r <= hangulLast {
			continue
		}
		n := utf8.EncodeRune(one[:], r)
		dec := norm.NFKD.Properties(one[:n]).Decomposition()
		if len(dec) == 0 {
			dec = one[:n]
		}
		if full := norm.NFKD.Bytes(one[:n]); string(dec) != string(full) {
			t.Errorf("%U: table decomposition %+q, full NFKD %+q", r, dec, full)
		}
	}
}
