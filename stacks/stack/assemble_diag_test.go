package stack

import (
	"testing"

	"github.com/hashicorp/hcl/v2"

	"github.com/cacheon/engine/internal/hclload"
)

func TestAssemblyProblemsAreDiagnosticsWithRanges(t *testing.T) {
	rng := hcl.Range{Filename: "s.hcl", Start: hcl.Pos{Line: 12, Column: 3, Byte: 200}, End: hcl.Pos{Line: 12, Column: 40, Byte: 237}}
	e := &AssemblyError{Problems: []Problem{
		{Range: rng, Target: "activation.silu_and_mul", Rule: "target-binding", Message: "resolves elsewhere"},
		{Rule: "stack-identity", Message: "no range"},
	}}
	diags := e.Diagnostics()
	if len(diags) != 2 || !diags.HasErrors() {
		t.Fatalf("got %d diagnostics, want 2 errors", len(diags))
	}
	tests := []struct {
		name        string
		d           *hcl.Diagnostic
		wantSummary string
		wantRule    string
		wantSubject *hcl.Range
	}{
		{"entry problem", diags[0], `Contribution "activation.silu_and_mul" refused`, "target-binding", &rng},
		{"stack problem", diags[1], "Stack does not assemble", "stack-identity", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.d.Summary != tc.wantSummary {
				t.Errorf("summary %q, want %q", tc.d.Summary, tc.wantSummary)
			}
			if rule, _ := hclload.RuleOf(tc.d); rule != tc.wantRule {
				t.Errorf("rule %q, want %q", rule, tc.wantRule)
			}
			if (tc.d.Subject == nil) != (tc.wantSubject == nil) || (tc.d.Subject != nil && *tc.d.Subject != *tc.wantSubject) {
				t.Errorf("subject %v, want %v", tc.d.Subject, tc.wantSubject)
			}
		})
	}
}
