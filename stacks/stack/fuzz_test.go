package stack

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse feeds arbitrary source to the stack file decoder: it must
// never panic, and whatever decodes must satisfy the invariants Assemble
// relies on.
func FuzzParse(f *testing.F) {
	for _, pattern := range []string{"testdata/valid/*.hcl", "testdata/error-files/*.hcl"} {
		paths, _ := filepath.Glob(pattern)
		for _, p := range paths {
			src, err := os.ReadFile(p)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(src)
		}
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		if len(src) > 1<<14 {
			return
		}
		file, diags := Parse("fuzz.hcl", src)
		if diags.HasErrors() {
			if file != nil {
				t.Fatal("file returned together with errors")
			}
			return
		}
		switch file.Kind {
		case Evaluation, Reference:
			if file.Arena == nil {
				t.Fatalf("%s stack without an arena", file.Kind)
			}
		case Release:
			if file.Arena != nil {
				t.Fatal("release stack with an arena")
			}
		default:
			t.Fatalf("kind %q", file.Kind)
		}
		seen := map[string]bool{}
		for _, c := range file.Contributions {
			if seen[c.TargetID] {
				t.Fatalf("target %q twice", c.TargetID)
			}
			seen[c.TargetID] = true
			if c.Kind != ProposalKind && c.Kind != IntegratedKind {
				t.Fatalf("contribution kind %q", c.Kind)
			}
			if file.Kind == Release && c.Kind != IntegratedKind {
				t.Fatal("proposal in a release stack")
			}
		}
		if file.Kind == Reference && len(file.Contributions) > 0 {
			t.Fatal("contribution in a reference stack")
		}
	})
}
