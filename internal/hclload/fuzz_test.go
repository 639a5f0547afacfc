package hclload

import (
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// FuzzCheck: Check never panics, and whatever it accepts hclsyntax parses
// without exhausting the stack (a stack overflow would kill the fuzzer).
func FuzzCheck(f *testing.F) {
	for _, seed := range []string{
		"x = [[1, 2], {a = \"${b[0]}\"}]\n",
		"b \"l\" {\n  x = <<-EOF\n  ${c}%{if d}e%{endif}\n  EOF\n}\n",
		"# [[[\n/* {{{ */ x = \"$${[[\" // ((\n",
		"x = !a ? -1 : [for v in w : v if !v]\n",
		"x = \"${\"${\"${1}\"}\"}\"\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		if len(src) > 1<<16 {
			return
		}
		if Check(src, "fuzz.hcl").HasErrors() {
			return
		}
		file, diags := hclsyntax.ParseConfig(src, "fuzz.hcl", hcl.InitialPos)
		if !diags.HasErrors() {
			CheckExpressions(file.Body, "concat")
		}
	})
}
