package speed

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/cacheon/engine/internal/hclload"
)

// A policy file is reviewed HCL:
//
//	speed_policy "h200-single-gpu" {
//	  version                   = 8
//	  min_margin                = 0.005
//	  noise_multiplier          = 2
//	  max_noise                 = 0.02
//	  min_windows               = 5
//	  max_window_scatter        = 0.05
//	  max_conditioning_slowdown = 1.25
//	  max_stage_seconds         = 600
//	  max_qualification_seconds = 1800
//	  calibration_digest         = "…64 hex…"
//	  calibration_context_digest = "…64 hex…"
//	}
//
// A version 9 policy also says how many read sets it averages:
// sets = 4.
var policyBlockSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
	{Name: "version", Required: true},
	{Name: "min_margin", Required: true},
	{Name: "noise_multiplier", Required: true},
	{Name: "max_noise", Required: true},
	{Name: "min_windows", Required: true},
	{Name: "max_window_scatter", Required: true},
	{Name: "max_conditioning_slowdown", Required: true},
	{Name: "max_stage_seconds", Required: true},
	{Name: "max_qualification_seconds", Required: true},
	{Name: "calibration_digest", Required: true},
	{Name: "calibration_context_digest", Required: true},
	{Name: "sets"},
}}

// LoadPolicyFile reads the policy file at path.
func LoadPolicyFile(path string) (Policy, hcl.Diagnostics) {
	src, err := hclload.ReadPath(path)
	if err != nil {
		return Policy{}, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Cannot read policy file", Detail: fmt.Sprintf("Reading %s failed: %v.", path, err)}}
	}
	return ParsePolicyFile(path, src)
}

// ParsePolicyFile decodes a policy file; filename names it in diagnostics,
// and a constraint the policy breaks is reported on its attribute.
func ParsePolicyFile(filename string, src []byte) (Policy, hcl.Diagnostics) {
	block, diags := hclload.OneBlock(filename, src, "speed_policy")
	if diags.HasErrors() {
		return Policy{}, diags
	}
	body, d := block.Body.Content(policyBlockSchema)
	diags = append(diags, d...)
	if diags.HasErrors() {
		return Policy{}, diags
	}
	a := body.Attributes
	p := Policy{
		Version:                  hclload.Int(a["version"], &diags),
		MinMargin:                hclload.Number(a["min_margin"], &diags),
		NoiseMultiplier:          hclload.Number(a["noise_multiplier"], &diags),
		MaxNoise:                 hclload.Number(a["max_noise"], &diags),
		MinWindows:               hclload.Int(a["min_windows"], &diags),
		MaxWindowScatter:         hclload.Number(a["max_window_scatter"], &diags),
		MaxConditioningSlowdown:  hclload.Number(a["max_conditioning_slowdown"], &diags),
		MaxStageSeconds:          hclload.Int(a["max_stage_seconds"], &diags),
		MaxQualificationSeconds:  hclload.Int(a["max_qualification_seconds"], &diags),
		CalibrationDigest:        hclload.String(a["calibration_digest"], &diags),
		CalibrationContextDigest: hclload.String(a["calibration_context_digest"], &diags),
	}
	if a["sets"] != nil {
		p.Sets = hclload.Int(a["sets"], &diags)
	}
	if diags.HasErrors() {
		return Policy{}, diags
	}
	if err := p.Validate(); err != nil {
		rng := block.DefRange
		if pe, ok := err.(*PolicyError); ok {
			if attr, found := a[pe.Field]; found {
				rng = attr.Expr.Range()
			}
		}
		return Policy{}, append(diags, hclload.ErrorAt(rng, "Invalid speed policy", err.Error()+"."))
	}
	return p, diags
}

// FormatPolicyFile prints p as a policy file that ParsePolicyFile reads
// back to p: one speed_policy block named name, numbers as the shortest
// decimals that round-trip, and comment (if any) as leading # lines, so a
// generated policy says where its thresholds came from.
func FormatPolicyFile(name string, p Policy, comment string) []byte {
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimRight(comment, "\n"), "\n") {
		if comment == "" {
			break
		}
		b.WriteString(strings.TrimRight("# "+line, " ") + "\n")
	}
	num := func(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
	fmt.Fprintf(&b, "speed_policy %s {\n", strconv.Quote(name))
	for _, kv := range [][2]string{
		{"version", strconv.Itoa(p.Version)},
		{"min_margin", num(p.MinMargin)},
		{"noise_multiplier", num(p.NoiseMultiplier)},
		{"max_noise", num(p.MaxNoise)},
		{"min_windows", strconv.Itoa(p.MinWindows)},
		{"max_window_scatter", num(p.MaxWindowScatter)},
		{"max_conditioning_slowdown", num(p.MaxConditioningSlowdown)},
		{"max_stage_seconds", strconv.Itoa(p.MaxStageSeconds)},
		{"max_qualification_seconds", strconv.Itoa(p.MaxQualificationSeconds)},
		{"calibration_digest", strconv.Quote(p.CalibrationDigest)},
		{"calibration_context_digest", strconv.Quote(p.CalibrationContextDigest)},
		{"sets", strconv.Itoa(p.Sets)},
	} {
		if kv[0] == "sets" && p.Sets == 0 {
			continue // versions 7 and 8 read one set and name none
		}
		fmt.Fprintf(&b, "  %-26s = %s\n", kv[0], kv[1])
	}
	b.WriteString("}\n")
	return []byte(b.String())
}
