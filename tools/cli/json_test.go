package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/cacheon/engine/internal/reject"
	"github.com/cacheon/engine/tools/cli/enginecli"
)

// oneJSONDocument decodes out as exactly one JSON object and returns it.
func oneJSONDocument(t *testing.T, out string) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(out))
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("stdout is not a JSON object: %v\n%s", err, out)
	}
	if _, err := dec.Token(); err != io.EOF {
		t.Fatalf("stdout holds more than one JSON document:\n%s", out)
	}
	return doc
}

func sortedKeys(doc map[string]any) []string {
	var keys []string
	for k := range doc {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func TestWriteJSON(t *testing.T) {
	type inner struct {
		Names []string `json:"names"`
	}
	type doc struct {
		Path   string            `json:"path"`
		List   []string          `json:"list"`
		Inner  *inner            `json:"inner"`
		Nested []inner           `json:"nested"`
		ByName map[string]inner  `json:"by_name"`
		Opt    *string           `json:"opt"`
		Any    any               `json:"any"`
		Skip   []string          `json:"skip,omitempty"`
		Raw    json.RawMessage   `json:"raw"`
		Extra  map[string]string `json:"extra"`
	}
	in := doc{Path: "<stdin> -> a&b", Inner: &inner{}, Nested: []inner{{}}, ByName: map[string]inner{"a": {}}, Any: inner{}, Raw: json.RawMessage(`[1]`)}
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"adds format_version, keeps null pointers, fills nil lists, no HTML escaping", in,
			`{"format_version":1,"path":"<stdin> -> a&b","list":[],"inner":{"names":[]},"nested":[{"names":[]}],"by_name":{"a":{"names":[]}},"opt":null,"any":{"names":[]},"raw":[1],"extra":null}`},
		{"keeps its own format_version", map[string]any{"format_version": 3, "a": []int(nil)}, `{"a":[],"format_version":3}`},
		{"a self-versioned report keeps its schema", map[string]any{"schema": "x.v1"}, `{"schema":"x.v1"}`},
		{"empty object", struct{}{}, `{"format_version":1}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := enginecli.WriteJSON(&buf, tc.v); err != nil {
				t.Fatal(err)
			}
			if !strings.HasSuffix(buf.String(), "}\n") || !strings.Contains(buf.String(), "\n  ") && tc.want != `{"format_version":1}` {
				t.Errorf("output is not indented with a final newline:\n%s", buf.String())
			}
			var compact bytes.Buffer
			if err := json.Compact(&compact, buf.Bytes()); err != nil {
				t.Fatal(err)
			}
			if got := compact.String(); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
	if in.Inner.Names != nil || in.Nested[0].Names != nil {
		t.Errorf("enginecli.WriteJSON wrote through the caller's values")
	}
	if err := enginecli.WriteJSON(io.Discard, []string{"a"}); err == nil {
		t.Errorf("a JSON array was accepted as a document")
	}
}

func TestJSONRefusalIsOneDocument(t *testing.T) {
	ws := incumbentWorkspace(t, t.TempDir())
	stackPath := filepath.Join(ws, "stacks", "incumbent.hcl")
	syntax := filepath.Join(ws, "stacks", "syntax.hcl")
	must(t, os.WriteFile(syntax, []byte("stack \"x\" {\n  kind = \n}\n"), 0o644))
	wrongTarget := filepath.Join(ws, "stacks", "wrong.hcl")
	must(t, os.WriteFile(wrongTarget, []byte(stackFile("evaluation", "norm.rmsnorm="+siluLabel)), 0o644))
	release := filepath.Join(ws, "stacks", "release.hcl")
	must(t, os.WriteFile(release, []byte(stackFile("reference")), 0o644))
	brokenCatalog := filepath.Join(ws, "catalog", "broken.hcl")
	must(t, os.WriteFile(brokenCatalog, []byte("target \"x\" {\n  kind = 3\n}\n"), 0o644))
	notATree := t.TempDir()
	must(t, os.WriteFile(filepath.Join(notATree, "f"), []byte("x"), 0o644))
	silu := filepath.Join(ws, "kernels", "contributions", "silu_and_mul_triton")
	violating := scanBundle(t, map[string]string{"kernels/silu_and_mul.py": "import os\nos.system('x')\n" + cleanKernel})
	receipt := filepath.Join(t.TempDir(), "receipt.json")
	must(t, os.WriteFile(receipt, []byte("{not json"), 0o644))

	tests := []struct {
		name     string
		args     []string
		wantKeys []string // the document's keys, when pinned here
	}{
		{"stack digest: HCL error", []string{"stack", "digest", "--json", syntax}, []string{"diagnostics", "error", "format_version", "ok"}},
		{"stack digest: assembly error", []string{"stack", "digest", "--json", wrongTarget}, []string{"diagnostics", "error", "format_version", "ok"}},
		{"stack materialize: assembly error", []string{"stack", "materialize", "--json", "--out", filepath.Join(ws, "o1"), wrongTarget}, []string{"diagnostics", "error", "format_version", "ok"}},
		{"stack materialize: destination refused", []string{"stack", "materialize", "--json", "--out", filepath.Join(silu, "engine"), stackPath}, []string{"diagnostics", "error", "format_version", "ok"}},
		{"stack plan: incumbent not an evaluation stack", []string{"stack", "plan", "--json", "--incumbent", release, "--candidate", silu}, []string{"diagnostics", "error", "format_version", "ok"}},
		{"stack plan: no-op candidate", []string{"stack", "plan", "--json", "--incumbent", stackPath, "--candidate", silu}, []string{"format_version", "rejected"}},
		{"stack verify: not a tree", []string{"stack", "verify", "--json", notATree}, []string{"diagnostics", "error", "format_version", "ok"}},
		{"bundle inspect: rejected bundle", []string{"bundle", "inspect", "--json", repoDir("kernels/fixtures/binary_object")}, nil},
		{"catalog check: invalid", []string{"catalog", "check", "--json", brokenCatalog}, nil},
		{"catalog digest: invalid", []string{"catalog", "digest", "--json", brokenCatalog}, nil},
		{"catalog show: unknown target", []string{"catalog", "show", "--json", "no.such.target"}, []string{"diagnostics", "error", "format_version", "ok"}},
		{"slots: invalid catalog", []string{"slots", "--json", "--file", brokenCatalog}, nil},
		{"scan: violations", []string{"scan", "--json", violating}, nil},
		{"model check: invalid receipt", []string{"model", "check", "--json", "--receipt", receipt, t.TempDir()}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := run(t, "", tc.args...)
			if code != enginecli.ExitRejected {
				t.Fatalf("exit %d, want %d\nstdout %s\nstderr %s", code, enginecli.ExitRejected, out, errOut)
			}
			doc := oneJSONDocument(t, out)
			if _, ok := doc["format_version"]; !ok {
				t.Errorf("document has no format_version: %v", sortedKeys(doc))
			}
			if tc.wantKeys != nil && !reflect.DeepEqual(sortedKeys(doc), tc.wantKeys) {
				t.Errorf("keys %v, want %v", sortedKeys(doc), tc.wantKeys)
			}
			if d, ok := doc["diagnostics"]; ok && d == nil {
				t.Errorf("diagnostics is null, want a list")
			}
		})
	}
}

func TestJSONRefusalCarriesDiagnosticRanges(t *testing.T) {
	ws := incumbentWorkspace(t, t.TempDir())
	wrongTarget := filepath.Join(ws, "stacks", "wrong.hcl")
	must(t, os.WriteFile(wrongTarget, []byte(stackFile("evaluation", "norm.rmsnorm="+siluLabel)), 0o644))
	_, out, _ := run(t, "", "stack", "digest", "--json", wrongTarget)
	var doc struct {
		Diagnostics []struct {
			Severity, Summary, Detail, Rule string
			Range                           struct {
				Filename string
				Start    struct{ Line, Column, Byte int }
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Diagnostics) != 1 {
		t.Fatalf("diagnostics %+v, want one", doc.Diagnostics)
	}
	d := doc.Diagnostics[0]
	if d.Severity != "error" || d.Rule != "target-binding" || d.Range.Filename != wrongTarget || d.Range.Start.Line != 12 {
		t.Errorf("diagnostic %+v, want an error of rule target-binding at %s:12", d, wrongTarget)
	}
}

func TestJSONRefusalsWrapEveryJSONCommand(t *testing.T) {
	var out bytes.Buffer
	s := Streams{In: strings.NewReader(""), Out: &out, Err: io.Discard}
	root := &cobra.Command{Use: "x"}
	var jsonOut bool
	leaf := &cobra.Command{Use: "leaf", RunE: func(*cobra.Command, []string) error { return reject.Errorf("refused") }}
	leaf.Flags().BoolVar(&jsonOut, "json", false, "")
	plain := &cobra.Command{Use: "plain", RunE: func(*cobra.Command, []string) error { return errors.New("io") }}
	plain.Flags().Bool("json", false, "")
	root.AddCommand(leaf, plain)
	enginecli.WithJSONRefusals(root, s)
	tests := []struct {
		args    []string
		wantDoc bool
	}{
		{[]string{"leaf", "--json"}, true},
		{[]string{"leaf"}, false},
		{[]string{"plain", "--json"}, false}, // not a refusal: exit 1, nothing on stdout
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out.Reset()
			for _, c := range []*cobra.Command{leaf, plain} {
				must(t, c.Flags().Set("json", "false")) // cobra keeps flag values between runs
			}
			root.SetArgs(tc.args)
			root.SilenceErrors, root.SilenceUsage = true, true
			if err := root.Execute(); err == nil {
				t.Fatalf("no error")
			}
			if got := out.Len() > 0; got != tc.wantDoc {
				t.Fatalf("wrote a document: %v, want %v (%q)", got, tc.wantDoc, out.String())
			}
			if tc.wantDoc {
				doc := oneJSONDocument(t, out.String())
				if doc["ok"] != false || doc["error"] != "refused" {
					t.Errorf("document %v", doc)
				}
			}
		})
	}
}

// TestStackJSONKeys pins the keys of the stack commands' success
// documents, as gh's TestJSONFields does: a renamed or dropped key breaks
// every consumer that binds by name.
func TestStackJSONKeys(t *testing.T) {
	ws := incumbentWorkspace(t, t.TempDir())
	stackPath := filepath.Join(ws, "stacks", "incumbent.hcl")
	tree := filepath.Join(t.TempDir(), "engine")
	treeKeys := []string{"bytes", "contributions", "file_count", "files", "format_version", "kind", "out", "stack_digest", "tree_digest"}
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"stack digest", []string{"stack", "digest", "--json", stackPath},
			[]string{"catalog_digest", "entries", "format_version", "kind", "name", "stack", "stack_digest"}},
		{"stack materialize", []string{"stack", "materialize", "--json", "--out", tree, stackPath}, treeKeys},
		{"stack verify", []string{"stack", "verify", "--json", tree}, treeKeys},
		{"stack plan", []string{"stack", "plan", "--json", "--incumbent", stackPath, "--candidate", filepath.Join(ws, "kernels", "contributions", "silu_and_mul_torch")},
			[]string{"attribution", "candidate_stack_file", "format_version", "local_attribution", "plan", "plan_digest", "rejected"}},
	}
	for _, tc := range tests { // in order: verify reads what materialize wrote
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := run(t, "", tc.args...)
			if code != enginecli.ExitOK {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			doc := oneJSONDocument(t, out)
			if got := sortedKeys(doc); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("keys %v, want %v", got, tc.want)
			}
			for _, k := range []string{"entries", "contributions", "files"} {
				if v, ok := doc[k]; ok && v == nil {
					t.Errorf("%s is null, want a list", k)
				}
			}
		})
	}
}
