package hclload

import (
	"fmt"
	"io"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// Ruled is the Extra of a diagnostic that reports a named rule (a catalog
// rule, a stack assembly rule). The renderers show the rule beside the
// summary, so every HCL file of the repository reports rules one way.
type Ruled interface {
	DiagnosticRule() string
}

// RuleOf returns the rule a diagnostic reports, if its Extra names one.
func RuleOf(d *hcl.Diagnostic) (string, bool) {
	r, ok := hcl.DiagnosticExtra[Ruled](d)
	if !ok {
		return "", false
	}
	return r.DiagnosticRule(), true
}

// WriteText renders diags as the command line prints them: for each,
// "file:line:column: error: Summary [rule]", the source line with the
// subject underlined when files holds the source the diagnostic points
// into, and the detail wrapped at 78 columns. files maps a file name to
// its source; a file the parser never read (one refused by Check before
// parsing) is left out, so a hostile line is never echoed.
func WriteText(w io.Writer, files map[string][]byte, diags hcl.Diagnostics) error {
	// A diagnostic without a subject is about the one file read, when
	// there is one.
	only := ""
	if len(files) == 1 {
		for name := range files {
			only = name + ": "
		}
	}
	var b strings.Builder
	for _, d := range diags {
		severity := "error"
		if d.Severity == hcl.DiagWarning {
			severity = "warning"
		}
		summary, detail := d.Summary, d.Detail
		if rule, ok := RuleOf(d); ok {
			summary += " [" + rule + "]"
			detail = strings.TrimSuffix(detail, " (catalog rule "+rule+")")
		}
		r := d.Subject
		if r == nil {
			fmt.Fprintf(&b, "%s%s: %s\n", only, severity, summary)
		} else {
			fmt.Fprintf(&b, "%s:%d:%d: %s: %s\n", r.Filename, r.Start.Line, r.Start.Column, severity, summary)
			if src, ok := files[r.Filename]; ok {
				writeSnippet(&b, src, r)
			}
		}
		if detail != "" {
			b.WriteString(wrapText(detail, "      ", 78))
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeSnippet writes the subject's first line with a gutter and a caret
// line under the subject.
func writeSnippet(b *strings.Builder, src []byte, r *hcl.Range) {
	lines := strings.Split(string(src), "\n")
	if r.Start.Line < 1 || r.Start.Line > len(lines) {
		return
	}
	text := strings.ReplaceAll(lines[r.Start.Line-1], "\t", " ")
	gutter := fmt.Sprintf("%5d | ", r.Start.Line)
	fmt.Fprintf(b, "%s%s\n", gutter, text)
	width := 1
	if r.End.Line == r.Start.Line && r.End.Column > r.Start.Column {
		width = r.End.Column - r.Start.Column
	}
	fmt.Fprintf(b, "%s%s%s\n", strings.Repeat(" ", len(gutter)-2)+"| ", strings.Repeat(" ", max(r.Start.Column-1, 0)), strings.Repeat("^", width))
}

// wrapText wraps s at width columns, each line starting with indent.
func wrapText(s, indent string, width int) string {
	var b strings.Builder
	line := indent
	for _, word := range strings.Fields(s) {
		if len(line) > len(indent) && len(line)+1+len(word) > width {
			b.WriteString(line + "\n")
			line = indent
		}
		if len(line) > len(indent) {
			line += " "
		}
		line += word
	}
	if len(line) > len(indent) {
		b.WriteString(line + "\n")
	}
	return b.String()
}

// Diagnostic is one diagnostic in --json output, shaped as Terraform's
// JSON view: severity, summary, detail, the rule when there is one, and
// the subject's range with line, column and byte offsets.
type Diagnostic struct {
	Severity string `json:"severity"`
	Summary  string `json:"summary"`
	Detail   string `json:"detail"`
	Rule     string `json:"rule,omitempty"`
	Range    *Range `json:"range,omitempty"`
}

// Range is a diagnostic's subject.
type Range struct {
	Filename string `json:"filename"`
	Start    Pos    `json:"start"`
	End      Pos    `json:"end"`
}

// Pos is one end of a Range.
type Pos struct {
	Line   int `json:"line"`
	Column int `json:"column"`
	Byte   int `json:"byte"`
}

// JSON returns diags as --json output renders them; never nil, so an
// empty list encodes as [].
func JSON(diags hcl.Diagnostics) []Diagnostic {
	out := []Diagnostic{}
	for _, d := range diags {
		v := Diagnostic{Severity: "error", Summary: d.Summary, Detail: d.Detail}
		if d.Severity == hcl.DiagWarning {
			v.Severity = "warning"
		}
		if rule, ok := RuleOf(d); ok {
			v.Rule = rule
		}
		if r := d.Subject; r != nil {
			v.Range = &Range{
				Filename: r.Filename,
				Start:    Pos{r.Start.Line, r.Start.Column, r.Start.Byte},
				End:      Pos{r.End.Line, r.End.Column, r.End.Byte},
			}
		}
		out = append(out, v)
	}
	return out
}
