package workload

import "testing"

// FuzzParse: any file either decodes into a workload whose read structure
// validates, or is refused with diagnostics; never a panic.
func FuzzParse(f *testing.F) {
	f.Add([]byte(generated))
	f.Add([]byte(`workload "x" { batch { prompts = [[1e400]] } }`))
	f.Fuzz(func(t *testing.T, src []byte) {
		w, diags := Parse("f.hcl", src)
		if diags.HasErrors() {
			return
		}
		if errs := w.validate(); len(errs) != 0 {
			t.Fatalf("accepted a workload that does not validate: %v", errs)
		}
		if _, err := w.Digest(); err != nil {
			t.Fatalf("accepted workload has no digest: %v", err)
		}
	})
}
