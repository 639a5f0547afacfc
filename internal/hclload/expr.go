package hclload

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// CheckExpressions refuses, before anything is evaluated, the expressions
// whose cost is not bounded by the size of the file: for expressions
// (and %{for} template directives, which hclsyntax parses into one),
// whose nesting multiplies the sizes of their collections, and calls of
// any function not in functions. The files this package guards are
// data; none needs a for expression.
func CheckExpressions(body hcl.Body, functions ...string) hcl.Diagnostics {
	b, ok := body.(*hclsyntax.Body)
	if !ok {
		return nil
	}
	// Only the outermost of nested refused expressions is reported.
	var refused hcl.Range
	return hclsyntax.VisitAll(b, func(n hclsyntax.Node) hcl.Diagnostics {
		if r := n.Range(); refused.Filename != "" && r.Start.Byte >= refused.Start.Byte && r.End.Byte <= refused.End.Byte {
			return nil
		}
		switch e := n.(type) {
		case *hclsyntax.ForExpr:
			refused = e.SrcRange
			return hcl.Diagnostics{refusal(LimitExpression, e.SrcRange, "For expression not allowed",
				"This file is data: write the list or object out instead of computing it with a for expression.")}
		case *hclsyntax.FunctionCallExpr:
			if !slices.Contains(functions, e.Name) {
				refused = e.Range()
				allowed := "no function is available here"
				if len(functions) > 0 {
					allowed = "the only functions are " + strings.Join(functions, ", ")
				}
				return hcl.Diagnostics{refusal(LimitExpression, hcl.RangeBetween(e.NameRange, e.OpenParenRange), "Function call not allowed",
					fmt.Sprintf("%s() cannot be called: %s.", e.Name, allowed))}
			}
		}
		return nil
	})
}
