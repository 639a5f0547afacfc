package identity

import (
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the domain table of "+identityDoc+" from domains.go")

// identityDoc is the reference page whose domain table is generated from
// Domains, between the two marker lines.
const identityDoc = "../../docs/reference/identity.md"

const regenerate = "go test ./internal/identity -run TestDomainTableIsCurrent -update"

var (
	tableBegin = []byte("<!-- BEGIN GENERATED: domain table (" + regenerate + ") -->\n")
	tableEnd   = []byte("<!-- END GENERATED: domain table -->\n")
)

// TestDomainsListEveryConstantOnce parses domains.go, so that a constant
// added there without a Domains row (or a row naming the wrong constant)
// fails here rather than going missing from the reference table.
func TestDomainsListEveryConstantOnce(t *testing.T) {
	declared := domainConstants(t)
	listed := map[string]Domain{}
	values := map[Domain]string{}
	for _, info := range Domains() {
		if _, dup := listed[info.Name]; dup {
			t.Errorf("Domains lists %s twice", info.Name)
		}
		listed[info.Name] = info.Domain
		if other, dup := values[info.Domain]; dup {
			t.Errorf("%s and %s share the domain %q", other, info.Name, info.Domain)
		}
		values[info.Domain] = info.Name
		if err := info.Domain.Validate(); err != nil {
			t.Errorf("%s: %v", info.Name, err)
		}
		if info.Owner == "" || info.Payload == "" {
			t.Errorf("%s: the row needs an owner and a payload description", info.Name)
		}
	}
	for name, value := range declared {
		got, ok := listed[name]
		switch {
		case !ok:
			t.Errorf("domains.go declares %s = %q, Domains does not list it", name, value)
		case got != value:
			t.Errorf("Domains lists %s as %q, domains.go declares %q", name, got, value)
		}
	}
	for name := range listed {
		if _, ok := declared[name]; !ok {
			t.Errorf("Domains lists %s, which domains.go does not declare", name)
		}
	}
}

// TestDomainTableIsCurrent fails when the reference page's domain table is
// not the one Domains renders; -update rewrites it in place.
func TestDomainTableIsCurrent(t *testing.T) {
	doc, err := os.ReadFile(identityDoc)
	if err != nil {
		t.Fatal(err)
	}
	want, err := replaceTable(doc, renderDomainTable(Domains()))
	if err != nil {
		t.Fatalf("%s: %v", identityDoc, err)
	}
	if *update {
		if err := os.WriteFile(identityDoc, want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !bytes.Equal(doc, want) {
		t.Fatalf("%s: the domain table is stale against internal/identity/domains.go (regenerate it with: %s)", identityDoc, regenerate)
	}
}

func TestReplaceTable(t *testing.T) {
	tests := []struct {
		name    string
		doc     string
		want    string
		wantErr bool
	}{
		{"replaces between the markers", "a\n" + string(tableBegin) + "old\n" + string(tableEnd) + "b\n",
			"a\n" + string(tableBegin) + "new\n" + string(tableEnd) + "b\n", false},
		{"no markers", "a\n", "", true},
		{"end before begin", string(tableEnd) + string(tableBegin), "", true},
		{"two tables", strings.Repeat(string(tableBegin)+string(tableEnd), 2), "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := replaceTable([]byte(tc.doc), []byte("new\n"))
			if (err != nil) != tc.wantErr {
				t.Fatalf("replaceTable error = %v, want error %v", err, tc.wantErr)
			}
			if err == nil && string(got) != tc.want {
				t.Fatalf("replaceTable = %q, want %q", got, tc.want)
			}
		})
	}
}

func renderDomainTable(domains []DomainInfo) []byte {
	var b bytes.Buffer
	b.WriteString("| domain | constant | computed in | payload |\n|---|---|---|---|\n")
	for _, d := range domains {
		fmt.Fprintf(&b, "| `%s` | `identity.%s` | `%s` | %s |\n", d.Domain, d.Name, d.Owner, d.Payload)
	}
	return b.Bytes()
}

// replaceTable puts table between the one pair of markers in doc.
func replaceTable(doc, table []byte) ([]byte, error) {
	if bytes.Count(doc, tableBegin) != 1 || bytes.Count(doc, tableEnd) != 1 {
		return nil, fmt.Errorf("want exactly one %q and one %q line", bytes.TrimSpace(tableBegin), bytes.TrimSpace(tableEnd))
	}
	start := bytes.Index(doc, tableBegin) + len(tableBegin)
	end := bytes.Index(doc, tableEnd)
	if end < start {
		return nil, fmt.Errorf("the end marker comes before the begin marker")
	}
	out := append([]byte{}, doc[:start]...)
	out = append(out, table...)
	return append(out, doc[end:]...), nil
}

// domainConstants returns the Domain constants domains.go declares, by name.
func domainConstants(t *testing.T) map[string]Domain {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(".", "domains.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]Domain{}
	for _, decl := range f.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok || gen.Tok != token.CONST {
			continue
		}
		for _, spec := range gen.Specs {
			vs := spec.(*ast.ValueSpec)
			if ident, ok := vs.Type.(*ast.Ident); !ok || ident.Name != "Domain" {
				t.Fatalf("domains.go: constant %s is not declared as a Domain", vs.Names[0].Name)
			}
			for i, name := range vs.Names {
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					t.Fatalf("domains.go: %s is not a string literal", name.Name)
				}
				value, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				out[name.Name] = Domain(value)
			}
		}
	}
	return out
}
