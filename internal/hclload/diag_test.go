package hclload

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/hashicorp/hcl/v2"
)

type testRule string

func (r testRule) DiagnosticRule() string { return string(r) }

func TestDiagnosticRendering(t *testing.T) {
	src := []byte("a = 1\nbad = [1, 2]\n")
	subject := &hcl.Range{Filename: "f.hcl", Start: hcl.Pos{Line: 2, Column: 7, Byte: 12}, End: hcl.Pos{Line: 2, Column: 13, Byte: 18}}
	tests := []struct {
		name     string
		files    map[string][]byte
		diag     *hcl.Diagnostic
		wantText string
		wantJSON string
	}{
		{
			name:  "rule, snippet and wrapped detail",
			files: map[string][]byte{"f.hcl": src},
			diag:  &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Bad list", Detail: "The list is bad (catalog rule r1)", Subject: subject, Extra: testRule("r1")},
			wantText: "f.hcl:2:7: error: Bad list [r1]\n" +
				"    2 | bad = [1, 2]\n" +
				"      |       ^^^^^^\n" +
				"      The list is bad\n\n",
			wantJSON: `[{"severity":"error","summary":"Bad list","detail":"The list is bad (catalog rule r1)","rule":"r1","range":{"filename":"f.hcl","start":{"line":2,"column":7,"byte":12},"end":{"line":2,"column":13,"byte":18}}}]`,
		},
		{
			name:     "a file never parsed gets no snippet",
			files:    map[string][]byte{},
			diag:     &hcl.Diagnostic{Severity: hcl.DiagWarning, Summary: "Too deep", Subject: subject},
			wantText: "f.hcl:2:7: warning: Too deep\n\n",
			wantJSON: `[{"severity":"warning","summary":"Too deep","detail":"","range":{"filename":"f.hcl","start":{"line":2,"column":7,"byte":12},"end":{"line":2,"column":13,"byte":18}}}]`,
		},
		{
			name:     "no subject names the one file",
			files:    map[string][]byte{"f.hcl": src},
			diag:     &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Empty"},
			wantText: "f.hcl: error: Empty\n\n",
			wantJSON: `[{"severity":"error","summary":"Empty","detail":""}]`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteText(&b, tc.files, hcl.Diagnostics{tc.diag}); err != nil {
				t.Fatal(err)
			}
			if b.String() != tc.wantText {
				t.Errorf("text:\n%q\nwant\n%q", b.String(), tc.wantText)
			}
			j, err := json.Marshal(JSON(hcl.Diagnostics{tc.diag}))
			if err != nil {
				t.Fatal(err)
			}
			if string(j) != tc.wantJSON {
				t.Errorf("JSON:\n%s\nwant\n%s", j, tc.wantJSON)
			}
		})
	}
	if j, _ := json.Marshal(JSON(nil)); string(j) != "[]" {
		t.Errorf("JSON(nil) = %s, want []", j)
	}
}
