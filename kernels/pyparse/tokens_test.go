package pyparse

import (
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
