package hclload

import (
	"fmt"
	"math/big"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/zclconf/go-cty/cty"
)

// The attribute readers below evaluate one attribute with no variables
// and check its type, appending a diagnostic on the attribute's range
// when it is not what the schema says. They return the zero value then,
// so a decoder collects every problem of a file in one pass.

// ErrorAt is an error diagnostic on rng.
func ErrorAt(rng hcl.Range, summary, detail string) *hcl.Diagnostic {
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: detail, Subject: &rng}
}

func known(a *hcl.Attribute, diags *hcl.Diagnostics) (cty.Value, bool) {
	v, d := a.Expr.Value(nil)
	*diags = append(*diags, d...)
	if d.HasErrors() || v.IsNull() || !v.IsWhollyKnown() {
		return cty.NilVal, false
	}
	return v, true
}

// Int reads a whole number within ±2^53 (what every JSON reader keeps exact).
func Int(a *hcl.Attribute, diags *hcl.Diagnostics) int {
	v, ok := known(a, diags)
	if !ok {
		return 0
	}
	if v.Type() != cty.Number {
		*diags = append(*diags, ErrorAt(a.Expr.Range(), "Integer required", fmt.Sprintf("%s must be a whole number; found %s.", a.Name, v.Type().FriendlyName())))
		return 0
	}
	return IntOf(v, a.Name, a.Expr.Range(), diags)
}

// IntOf is Int for a value already evaluated (a list element).
func IntOf(v cty.Value, name string, rng hcl.Range, diags *hcl.Diagnostics) int {
	bf := v.AsBigFloat()
	i, acc := bf.Int64()
	if acc != big.Exact || i < -(1<<53) || i > 1<<53 {
		*diags = append(*diags, ErrorAt(rng, "Integer required", fmt.Sprintf("%s must be a whole number within ±2^53; found %s.", name, bf.Text('g', 17))))
		return 0
	}
	return int(i)
}

// Number reads a number, rounded once from its decimal text to the
// nearest float64.
func Number(a *hcl.Attribute, diags *hcl.Diagnostics) float64 {
	v, ok := known(a, diags)
	if !ok {
		return 0
	}
	if v.Type() != cty.Number {
		*diags = append(*diags, ErrorAt(a.Expr.Range(), "Number required", fmt.Sprintf("%s must be a number; found %s.", a.Name, v.Type().FriendlyName())))
		return 0
	}
	f, _ := v.AsBigFloat().Float64()
	return f
}

// Bool reads true or false.
func Bool(a *hcl.Attribute, diags *hcl.Diagnostics) bool {
	v, ok := known(a, diags)
	if !ok {
		return false
	}
	if v.Type() != cty.Bool {
		*diags = append(*diags, ErrorAt(a.Expr.Range(), "Boolean required", fmt.Sprintf("%s must be true or false; found %s.", a.Name, v.Type().FriendlyName())))
		return false
	}
	return v.True()
}

// String reads a quoted string.
func String(a *hcl.Attribute, diags *hcl.Diagnostics) string {
	v, ok := known(a, diags)
	if !ok {
		return ""
	}
	if v.Type() != cty.String {
		*diags = append(*diags, ErrorAt(a.Expr.Range(), "String required", fmt.Sprintf("%s must be a quoted string; found %s.", a.Name, v.Type().FriendlyName())))
		return ""
	}
	return v.AsString()
}

// Value evaluates an attribute whose type the caller checks itself.
func Value(a *hcl.Attribute, diags *hcl.Diagnostics) (cty.Value, bool) { return known(a, diags) }

// OneBlock parses src as an HCL file holding exactly one top-level block
// of blockType with one label (`workload "name" { ... }`), after the size,
// depth and expression checks every file passes, and returns that block.
// Anything else at the top level, or another count of blocks, is a
// diagnostic; filename names the file in them.
func OneBlock(filename string, src []byte, blockType string) (*hcl.Block, hcl.Diagnostics) {
	if diags := Check(src, filename); diags.HasErrors() {
		return nil, diags
	}
	hf, diags := hclparse.NewParser().ParseHCL(src, filename)
	if diags.HasErrors() {
		return nil, diags
	}
	if d := CheckExpressions(hf.Body); d.HasErrors() {
		return nil, append(diags, d...)
	}
	schema := &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: blockType, LabelNames: []string{"name"}}}}
	content, d := hf.Body.Content(schema)
	diags = append(diags, d...)
	blocks := content.Blocks.OfType(blockType)
	if len(blocks) != 1 {
		rng := hf.Body.MissingItemRange()
		if len(blocks) > 1 {
			rng = blocks[1].DefRange
		}
		return nil, append(diags, ErrorAt(rng, fmt.Sprintf("One %s block required", blockType),
			fmt.Sprintf("The file declares exactly one `%s \"<name>\" { ... }` block; found %d.", blockType, len(blocks))))
	}
	if diags.HasErrors() {
		return nil, diags
	}
	return blocks[0], diags
}

// Closest is the candidate nearest to given by edit distance, if one is
// closer than maxDist: what a "did you mean" in a diagnostic offers.
func Closest(given string, candidates []string, maxDist int) (string, bool) {
	best, bestDist := "", maxDist
	for _, c := range candidates {
		if d := editDistance(given, c); d < bestDist {
			best, bestDist = c, d
		}
	}
	return best, best != ""
}

// editDistance is the Levenshtein distance of a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
