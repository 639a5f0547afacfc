package catalog

import (
	"strings"
	"testing"
	"testing/fstest"
)

// Schema errors are not catalog rules: they say the file does not have
// the shape of a catalog at all. They still point at file, line and column.
func TestSchemaErrorsPointAtSource(t *testing.T) {
	tests := []struct {
		name    string
		edit    [2]string // applied to ruleBase
		summary string
		line    int // 0: the line of the edit
		column  int
	}{
		{"unknown attribute in a target", [2]string{`members          = ["a.four"]`, `members          = ["a.four"]` + "\n  member_count = 1"}, "Unsupported argument", 0, 3},
		{"unknown block", [2]string{`tolerance_set "standard" {`, "widget \"x\" {}\ntolerance_set \"standard\" {"}, "Unsupported block type", 0, 1},
		{"missing required attribute", [2]string{`  allowed_features = ["entry"]` + "\n}\n", "}\n"}, "Missing required argument", -1, 0},
		{"string attribute given a number", [2]string{`kind             = "slot"`, `kind             = 7`}, "Incorrect attribute value type", 0, 22},
		{"syntax error", [2]string{`kind             = "slot"`, `kind             = "slot`}, "", 0, 0},
		{"second catalog block", [2]string{"features {", "catalog {\n  policy_version = \"target-catalog.v1\"\n}\nfeatures {"}, "Duplicate catalog block", 0, 1},
		{"unknown tolerance set", [2]string{`tolerances = tolerance_set.standard`, `tolerances = tolerance_set.standrad`}, "Unknown tolerance set", 0, 16},
		{"unknown feature set", [2]string{`allowed_features = ["entry"]` + "\n}\n", `allowed_features = feature_set.basic` + "\n}\n"}, "Unknown feature set", 0, 22},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !strings.Contains(ruleBase, tt.edit[0]) {
				t.Fatalf("edit anchor %q not in base", tt.edit[0])
			}
			idx := strings.LastIndex(ruleBase, tt.edit[0])
			src := ruleBase[:idx] + tt.edit[1] + ruleBase[idx+len(tt.edit[0]):]
			wantLine := strings.Count(src[:idx], "\n") + 1
			if strings.HasPrefix(tt.edit[1], tt.edit[0]) {
				wantLine += strings.Count(tt.edit[0], "\n") + 1
			}
			_, diags := Parse([]byte(src), "schema.hcl")
			if !diags.HasErrors() {
				t.Fatal("no error")
			}
			d := diags.Errs()[0]
			if tt.summary != "" && !strings.Contains(diags.Error(), tt.summary) {
				t.Errorf("error %q does not mention %q", diags.Error(), tt.summary)
			}
			if !strings.HasPrefix(diags.Error(), "schema.hcl:") {
				t.Errorf("error %q does not name the file", d)
			}
			sub := diags[0].Subject
			if tt.line >= 0 && sub.Start.Line != wantLine {
				t.Errorf("line = %d, want %d (%v)", sub.Start.Line, wantLine, diags)
			}
			if tt.column > 0 && sub.Start.Column != tt.column {
				t.Errorf("column = %d, want %d (%v)", sub.Start.Column, tt.column, diags)
			}
		})
	}
}

func TestLoadReadsFromFS(t *testing.T) {
	fsys := fstest.MapFS{"cat/targets.hcl": {Data: []byte(ruleBase)}}
	c, diags := Load(fsys, "cat/targets.hcl")
	if diags.HasErrors() {
		t.Fatalf("Load: %v", diags)
	}
	if ids := c.TargetIDs(); len(ids) != 1 || ids[0] != "a.four" {
		t.Errorf("targets = %v, want [a.four]", ids)
	}
	if _, diags := Load(fsys, "cat/missing.hcl"); !diags.HasErrors() {
		t.Error("Load of a missing file succeeded")
	}
}
