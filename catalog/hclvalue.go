package catalog

import (
	"fmt"
	"math/big"
	"regexp"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/cacheon/engine/internal/hclload"
)

// This file turns HCL attribute expressions into Go values. It is strict
// where gohcl would convert silently: a string attribute given a number,
// or a decimal written as an HCL number, is an error, because a value that
// feeds an identity must be spelled the way the identity carries it.

// item is a string value with the source range it came from, so that a
// rule broken by one list element can point at that element.
type item struct {
	Value string
	Range hcl.Range
}

func itemValues(items []item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.Value
	}
	return out
}

func sortedValues(items []item) []string {
	out := itemValues(items)
	slices.Sort(out)
	return out
}

var idPattern = regexp.MustCompile(`^[0-9A-Za-z._-]+$`)

// attrDecoder evaluates attributes of one block and collects diagnostics.
type attrDecoder struct {
	attrs hcl.Attributes
	diags *hcl.Diagnostics
}

func (d attrDecoder) add(diags hcl.Diagnostics) { *d.diags = append(*d.diags, diags...) }

func (d attrDecoder) has(name string) bool { return d.attrs[name] != nil }

// rangeOf returns the range of the named attribute's value, or def when
// the attribute is absent.
func (d attrDecoder) rangeOf(name string, def hcl.Range) hcl.Range {
	if a := d.attrs[name]; a != nil {
		return a.Expr.Range()
	}
	return def
}

func (d attrDecoder) value(name string, ctx *hcl.EvalContext) (cty.Value, hcl.Range, bool) {
	a := d.attrs[name]
	if a == nil {
		return cty.NilVal, hcl.Range{}, false
	}
	v, diags := a.Expr.Value(ctx)
	d.add(diags)
	if diags.HasErrors() {
		return cty.NilVal, a.Expr.Range(), false
	}
	if v.IsNull() || !v.IsWhollyKnown() {
		d.add(hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Missing value",
			Detail:   fmt.Sprintf("The argument %q must have a value; null is not allowed.", name),
			Subject:  a.Expr.Range().Ptr(),
		}})
		return cty.NilVal, a.Expr.Range(), false
	}
	return v, a.Expr.Range(), true
}

func typeError(name, want string, got cty.Type, rng hcl.Range) *hcl.Diagnostic {
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  "Incorrect attribute value type",
		Detail:   fmt.Sprintf("The argument %q must be %s, not %s.", name, want, got.FriendlyName()),
		Subject:  rng.Ptr(),
	}
}

// str returns a string attribute; ok is false when it is absent or bad.
func (d attrDecoder) str(name string) (item, bool) {
	v, rng, ok := d.value(name, nil)
	if !ok {
		return item{}, false
	}
	if v.Type() != cty.String {
		d.add(hcl.Diagnostics{typeError(name, "a string", v.Type(), rng)})
		return item{}, false
	}
	return item{v.AsString(), rng}, true
}

// boolean returns a bool attribute.
func (d attrDecoder) boolean(name string) (bool, bool) {
	v, rng, ok := d.value(name, nil)
	if !ok {
		return false, false
	}
	if v.Type() != cty.Bool {
		d.add(hcl.Diagnostics{typeError(name, "true or false", v.Type(), rng)})
		return false, false
	}
	return v.True(), true
}

// integer returns a whole-number attribute.
func (d attrDecoder) integer(name string) (int64, hcl.Range, bool) {
	v, rng, ok := d.value(name, nil)
	if !ok {
		return 0, rng, false
	}
	n, ok := wholeNumber(v)
	if !ok {
		d.add(hcl.Diagnostics{typeError(name, "a whole number", v.Type(), rng)})
		return 0, rng, false
	}
	return n, rng, true
}

func wholeNumber(v cty.Value) (int64, bool) {
	if v.Type() != cty.Number {
		return 0, false
	}
	bf := v.AsBigFloat()
	if !bf.IsInt() {
		return 0, false
	}
	n, acc := bf.Int64()
	return n, acc == big.Exact
}

// decimal returns a decimal attribute written as a string.
func (d attrDecoder) decimal(name string) (Decimal, hcl.Range, bool) {
	v, rng, ok := d.value(name, nil)
	if !ok {
		return Decimal{}, rng, false
	}
	return decimalValue(name, v, rng, d.diags)
}

func decimalValue(name string, v cty.Value, rng hcl.Range, diags *hcl.Diagnostics) (Decimal, hcl.Range, bool) {
	if v.Type() == cty.Number {
		*diags = append(*diags, violation(RuleDecimal, rng, "Decimal written as a number",
			fmt.Sprintf("The argument %q is a threshold that identities carry as a canonical decimal string; write it as a string, for example %s = \"%s\".",
				name, name, v.AsBigFloat().Text('f', -1))))
		return Decimal{}, rng, false
	}
	if v.Type() != cty.String {
		*diags = append(*diags, typeError(name, "a decimal string", v.Type(), rng))
		return Decimal{}, rng, false
	}
	dec, err := ParseDecimal(v.AsString())
	if err != nil {
		*diags = append(*diags, violation(RuleDecimal, rng, "Invalid decimal",
			fmt.Sprintf("The argument %q: %v.", name, err)))
		return Decimal{}, rng, false
	}
	return dec, rng, true
}

// strList returns a list of strings. When the expression is written as a
// literal list each element keeps its own range; otherwise (a variable or
// a function call) every element gets the range of the whole expression.
func (d attrDecoder) strList(name string, ctx *hcl.EvalContext) ([]item, bool) {
	a := d.attrs[name]
	if a == nil {
		return nil, false
	}
	if elems, diags := hcl.ExprList(a.Expr); !diags.HasErrors() {
		out := make([]item, 0, len(elems))
		good := true
		for i, e := range elems {
			v, diags := e.Value(ctx)
			d.add(diags)
			if diags.HasErrors() {
				good = false
				continue
			}
			if v.Type() != cty.String || v.IsNull() {
				d.add(hcl.Diagnostics{typeError(fmt.Sprintf("%s[%d]", name, i), "a string", v.Type(), e.Range())})
				good = false
				continue
			}
			out = append(out, item{v.AsString(), e.Range()})
		}
		return out, good
	}
	v, rng, ok := d.value(name, ctx)
	if !ok {
		return nil, false
	}
	if !(v.Type().IsListType() || v.Type().IsTupleType()) {
		d.add(hcl.Diagnostics{typeError(name, "a list of strings", v.Type(), rng)})
		return nil, false
	}
	out := make([]item, 0, v.LengthInt())
	for it := v.ElementIterator(); it.Next(); {
		_, e := it.Element()
		if e.IsNull() || e.Type() != cty.String {
			d.add(hcl.Diagnostics{typeError(name, "a list of strings", v.Type(), rng)})
			return nil, false
		}
		out = append(out, item{e.AsString(), rng})
	}
	return out, true
}

// checkIDs reports list entries that do not match the id pattern.
func checkIDs(what string, items []item, diags *hcl.Diagnostics) bool {
	good := true
	for _, it := range items {
		if !checkID(what, it, diags) {
			good = false
		}
	}
	return good
}

func checkID(what string, it item, diags *hcl.Diagnostics) bool {
	if idPattern.MatchString(it.Value) {
		return true
	}
	*diags = append(*diags, violation(RuleIDPattern, it.Range, "Invalid id",
		fmt.Sprintf("The %s %q must match [0-9A-Za-z._-]+.", what, it.Value)))
	return false
}

// checkUnique reports every repeated entry of a list.
func checkUnique(what string, items []item, diags *hcl.Diagnostics) bool {
	first := make(map[string]hcl.Range, len(items))
	good := true
	for _, it := range items {
		if prev, dup := first[it.Value]; dup {
			*diags = append(*diags, violation(RuleDuplicateItem, it.Range, "Duplicate entry",
				fmt.Sprintf("%s lists %q twice; it first appears at %s.", what, it.Value, prev)))
			good = false
			continue
		}
		first[it.Value] = it.Range
	}
	return good
}

func isPythonIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return !pythonKeywords[s]
}

var pythonKeywords = map[string]bool{
	"False": true, "None": true, "True": true, "and": true, "as": true, "assert": true,
	"async": true, "await": true, "break": true, "class": true, "continue": true, "def": true,
	"del": true, "elif": true, "else": true, "except": true, "finally": true, "for": true,
	"from": true, "global": true, "if": true, "import": true, "in": true, "is": true,
	"lambda": true, "nonlocal": true, "not": true, "or": true, "pass": true, "raise": true,
	"return": true, "try": true, "while": true, "with": true, "yield": true,
}

// suggest returns " Did you mean "x"?" for the closest candidate within a
// small edit distance, or "".
func suggest(given string, candidates []string) string {
	best, ok := hclload.Closest(given, candidates, 4)
	if !ok {
		return ""
	}
	return fmt.Sprintf(" Did you mean %q?", best)
}

// quoteList renders ids for a diagnostic detail.
func quoteList(ids []string) string {
	q := make([]string, len(ids))
	for i, id := range ids {
		q[i] = fmt.Sprintf("%q", id)
	}
	return strings.Join(q, ", ")
}
