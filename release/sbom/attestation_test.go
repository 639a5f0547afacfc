package sbom

import (
	"encoding/json"
	"strings"
	"testing"
)

// The attestation's predicate is the document, byte for byte, and its one
// subject is the image; ParseStatement gives both back.
func TestStatementCarriesTheDocumentAboutTheImage(t *testing.T) {
	doc, err := Generate(input())
	if err != nil {
		t.Fatal(err)
	}
	digest := "sha256:" + strings.Repeat("cd", 32)
	st, err := Statement(doc, "cacheon-engine:1.0", digest)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(st), `"predicate":`+string(doc)+`,`) {
		t.Errorf("the predicate is not the document's bytes:\n%s", st)
	}
	a, err := ParseStatement(st)
	if err != nil {
		t.Fatal(err)
	}
	if string(a.Predicate) != string(doc) || len(a.Subjects) != 1 || a.Subjects[0].Name != "cacheon-engine:1.0" || a.Subjects[0].Digest["sha256"] != strings.Repeat("cd", 32) {
		t.Errorf("parsed %+v", a.Subjects)
	}
	again, _ := Statement(doc, "cacheon-engine:1.0", digest)
	if string(again) != string(st) {
		t.Error("two statements of one document differ")
	}
}

func TestStatementRefusals(t *testing.T) {
	doc, _ := Generate(input())
	digest := "sha256:" + strings.Repeat("cd", 32)
	for _, c := range []struct {
		name, doc, digest, want string
	}{
		{"digest not sha256", string(doc), "sha512:" + strings.Repeat("cd", 64), "not sha256:<hex>"},
		{"short digest", string(doc), "sha256:abcd", "not sha256:<hex>"},
		{"not an SPDX document", `{"spdxVersion":"SPDX-2.2"}`, digest, "not an SPDX 2.3 document"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := Statement([]byte(c.doc), "x", c.digest); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
		})
	}
}

func TestParseStatementRefusals(t *testing.T) {
	doc, _ := Generate(input())
	good, _ := Statement(doc, "x", "sha256:"+strings.Repeat("cd", 32))
	edit := func(f func(m map[string]any)) string {
		var m map[string]any
		json.Unmarshal(good, &m)
		f(m)
		b, _ := json.Marshal(m)
		return string(b)
	}
	for _, c := range []struct{ name, in, want string }{
		{"not JSON", "{", "parse in-toto statement"},
		{"another statement type", edit(func(m map[string]any) { m["_type"] = "https://in-toto.io/Statement/v0.1" }), "_type"},
		{"SLSA provenance", edit(func(m map[string]any) { m["predicateType"] = "https://slsa.dev/provenance/v1" }), "predicateType"},
		{"no subject", edit(func(m map[string]any) { m["subject"] = []any{} }), "no subject"},
		{"predicate not an object", edit(func(m map[string]any) { m["predicate"] = "doc" }), "not a JSON object"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := ParseStatement([]byte(c.in)); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
		})
	}
}
