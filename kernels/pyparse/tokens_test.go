package pyparse

import (
	"bytes"
	"reflect"
	"testing"
)

// ParseTokens returns the tokens the tree was parsed from: comments and
// line joins gone, names NFKC-normalized, spans into the source.
func TestParseTokens(t *testing.T) {
	src := "x = (1 +  # one\n  ｙ)\n"
	f, mod, toks, err := ParseTokens("t.py", []byte(src))
	if err != nil || mod == nil {
		t.Fatal(err)
	}
	var got []string
	for _, tk := range toks {
		text := tk.Text
		if text == "" {
			text = f.Src[tk.Start:tk.End]
		}
		got = append(got, tk.Kind.String()+":"+text)
	}
	want := []string{"name:x", "operator:=", "operator:(", "number:1", "operator:+", "name:y", "operator:)", "newline:\n", "end of file:"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("tokens\n got %q\nwant %q", got, want)
	}
	if _, _, toks, err := ParseTokens("bad.py", []byte("x = (\n")); err == nil || toks != nil {
		t.Errorf("a syntax error gave tokens %v, error %v", toks, err)
	}
}

// scanString stops where a byte-by-byte scan stops, wherever the byte
// that ends the scan lies in a word and whatever lies around it.
func TestScanStringMatchesByteLoop(t *testing.T) {
	naive := func(s string, i int, quote byte) int {
		for ; i < len(s); i++ {
			if c := s[i]; c == '\\' || c == quote || c == '\n' || c == '\r' {
				return i
			}
		}
		return i
	}
	fillers := []byte{'a', 0, 0x80, 0xff, '"' ^ 0x80, '\'' + 1, '\\' - 1, '\n' + 1, 0x01}
	stops := []byte{'"', '\'', '\\', '\n', '\r'}
	for n := 0; n <= 40; n++ {
		for _, fill := range fillers {
			for _, stop := range stops {
				for at := 0; at <= n; at++ {
					b := bytes.Repeat([]byte{fill}, n)
					if at < n {
						b[at] = stop
					}
					s := string(b)
					for _, quote := range []byte{'"', '\''} {
						for i := 0; i <= min(n, 9); i++ {
							if got, want := scanString(s, i, quote), naive(s, i, quote); got != want {
								t.Fatalf("scanString(%q, %d, %q) = %d, want %d", s, i, quote, got, want)
							}
						}
					}
				}
			}
		}
	}
}
