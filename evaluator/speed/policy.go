package speed

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/cacheon/engine/internal/identity"
	"github.com/cacheon/engine/internal/reject"
)

// Policy versions this package grades.
const (
	V7 = 7 // hot-swappable candidates: B, C, B′ only if inconclusive
	V8 = 8 // non-swappable candidates: B, C, B′ always
	// V9 is this project's own, outside upstream's range: Sets read sets
	// of B, C and B′, each in three fresh engine processes, graded on the
	// mean of their speedups (GradeReads). Engine processes differ in
	// speed from one another by about 0.2 %, so the invariant grade of one
	// set cannot resolve a 0.5 % speedup; averaging k sets divides that
	// by √k (docs/reference/speed-policy.md, "Version 9").
	V9 = 9
)

// The number of read sets a version 9 policy may take.
const (
	MinSets = 2
	MaxSets = 8
)

// Timing names how reads are timed: one read at a time across lanes, on
// the controller's host clock.
const Timing = "serialized_resident_host_time"

// Policy is a sealed resident speed policy. The thresholds MinMargin,
// NoiseMultiplier and MaxNoise come from a calibration; the window,
// conditioning and budget values from the deployment.
type Policy struct {
	Version                 int
	MinMargin               float64 // smallest speedup over 1 that can pass
	NoiseMultiplier         float64 // how many noise widths a pass must clear
	MaxNoise                float64 // the largest baseline drift still graded as one population
	MinWindows              int     // timed windows each read must have (at least 3)
	MaxWindowScatter        float64 // advisory bound on a read's window scatter
	MaxConditioningSlowdown float64 // C's conditioning may take at most this many times B's
	MaxStageSeconds         int
	MaxQualificationSeconds int
	// Sets is how many B, C, B′ read sets a version 9 policy reads and
	// averages; zero under versions 7 and 8, which read one.
	Sets int
	// CalibrationDigest and CalibrationContextDigest bind the policy to
	// the calibration its thresholds were taken from.
	CalibrationDigest        string
	CalibrationContextDigest string
}

// ErrPolicy is the class of every policy rejection; it matches the
// rejection root (reject.ErrRejected).
var ErrPolicy = reject.New("invalid speed policy")

// PolicyError names the policy field and why it was refused.
type PolicyError struct {
	Field  string
	Reason string
}

func (e *PolicyError) Error() string { return fmt.Sprintf("speed policy: %s: %s", e.Field, e.Reason) }
func (e *PolicyError) Unwrap() error { return ErrPolicy }

// ReadSets is how many B, C, B′ sets a schedule reads for a policy's (or
// a calibration's) Sets: that many under version 9, one otherwise, where
// Validate holds Sets at 0.
func ReadSets(sets int) int { return max(1, sets) }

// Validate applies the upstream constraints of spec §5.2 for v7 and v8.
func (p Policy) Validate() error {
	bad := func(field, format string, args ...any) error {
		return &PolicyError{Field: field, Reason: fmt.Sprintf(format, args...)}
	}
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	switch {
	case p.Version != V7 && p.Version != V8 && p.Version != V9:
		return bad("version", "%d is not a graded version (7, 8 or 9)", p.Version)
	case p.Version == V9 && (p.Sets < MinSets || p.Sets > MaxSets):
		return bad("sets", "%d is outside [%d, %d]: version 9 averages that many read sets", p.Sets, MinSets, MaxSets)
	case p.Version != V9 && p.Sets != 0:
		return bad("sets", "version %d reads one set; only version 9 takes sets", p.Version)
	case p.MaxStageSeconds < 60 || p.MaxStageSeconds > 7200:
		return bad("max_stage_seconds", "%d is outside [60, 7200]", p.MaxStageSeconds)
	case p.MaxQualificationSeconds < p.MaxStageSeconds || p.MaxQualificationSeconds > 14400:
		return bad("max_qualification_seconds", "%d is outside [max_stage_seconds=%d, 14400]", p.MaxQualificationSeconds, p.MaxStageSeconds)
	case !finite(p.MinMargin) || p.MinMargin <= 0 || p.MinMargin >= 1:
		return bad("min_margin", "%s is outside (0, 1)", Format(p.MinMargin))
	case !finite(p.NoiseMultiplier) || p.NoiseMultiplier <= 0:
		return bad("noise_multiplier", "%s is not positive", Format(p.NoiseMultiplier))
	case !finite(p.MaxNoise) || p.MaxNoise < 0 || p.MaxNoise > 0.02:
		return bad("max_noise", "%s is outside [0, 0.02]", Format(p.MaxNoise))
	case p.MinWindows < 3 || p.MinWindows > 512:
		return bad("min_windows", "%d is outside [3, 512]", p.MinWindows)
	case !finite(p.MaxWindowScatter) || p.MaxWindowScatter <= 0 || p.MaxWindowScatter > 0.25:
		return bad("max_window_scatter", "%s is outside (0, 0.25]", Format(p.MaxWindowScatter))
	case !finite(p.MaxConditioningSlowdown) || p.MaxConditioningSlowdown <= 1 || p.MaxConditioningSlowdown > 2:
		return bad("max_conditioning_slowdown", "%s is outside (1, 2]", Format(p.MaxConditioningSlowdown))
	}
	if err := identity.CheckDigest("calibration_digest", p.CalibrationDigest, false); err != nil {
		return &PolicyError{Field: "calibration_digest", Reason: err.Error()}
	}
	if err := identity.CheckDigest("calibration_context_digest", p.CalibrationContextDigest, false); err != nil {
		return &PolicyError{Field: "calibration_context_digest", Reason: err.Error()}
	}
	return nil
}

// ReadOrder is the schedule of reads the version runs, as recorded in the
// policy's identity.
func (p Policy) ReadOrder() []string {
	if p.Version == V8 || p.Version == V9 {
		return []string{string(B), string(C), string(BPrime)}
	}
	return []string{string(B), string(C), "B_prime_if_inconclusive"}
}

// BorderlineBand names how a speedup between the limits is resolved:
// v7 reads B′ and grades invariantly over the bookends; v8 grades once,
// invariantly, over every read taken. The labels are upstream's own, so
// the policy digest equals upstream's for the same policy
// (docs/reference/compatibility.md). v9's label is this project's.
func (p Policy) BorderlineBand() string {
	switch p.Version {
	case V8:
		return "invariant_over_reads_taken"
	case V9:
		return "mean_over_sets"
	}
	return "pod_bookend_invariant"
}

// Projection is the policy as its identity and its JSON file carry it:
// decimals as 17-significant-digit strings, integers as integers. Only a
// version 9 policy carries "sets", so versions 7 and 8 keep upstream's
// identity.
func (p Policy) Projection() map[string]any {
	order := []any{}
	for _, r := range p.ReadOrder() {
		order = append(order, r)
	}
	m := map[string]any{
		"version":                    p.Version,
		"min_margin":                 Format(p.MinMargin),
		"noise_multiplier":           Format(p.NoiseMultiplier),
		"max_noise":                  Format(p.MaxNoise),
		"min_windows":                p.MinWindows,
		"max_window_scatter":         Format(p.MaxWindowScatter),
		"max_conditioning_slowdown":  Format(p.MaxConditioningSlowdown),
		"max_stage_seconds":          p.MaxStageSeconds,
		"max_qualification_seconds":  p.MaxQualificationSeconds,
		"calibration_digest":         p.CalibrationDigest,
		"calibration_context_digest": p.CalibrationContextDigest,
		"borderline_band":            p.BorderlineBand(),
		"read_order":                 order,
		"timing":                     Timing,
	}
	if p.Version == V9 {
		m["sets"] = p.Sets
	}
	return m
}

// Digest is the policy's identity.
func (p Policy) Digest() (string, error) {
	if err := p.Validate(); err != nil {
		return "", err
	}
	d, err := identity.H(identity.DomainResidentSpeedPolicy, p.Projection())
	return d.String(), err
}

// policyFile is the JSON shape of a policy projection. Decimals are
// strings so that no float is ever re-rounded on its way in.
type policyFile struct {
	Version                  *int     `json:"version"`
	MinMargin                *string  `json:"min_margin"`
	NoiseMultiplier          *string  `json:"noise_multiplier"`
	MaxNoise                 *string  `json:"max_noise"`
	MinWindows               *int     `json:"min_windows"`
	MaxWindowScatter         *string  `json:"max_window_scatter"`
	MaxConditioningSlowdown  *string  `json:"max_conditioning_slowdown"`
	MaxStageSeconds          *int     `json:"max_stage_seconds"`
	MaxQualificationSeconds  *int     `json:"max_qualification_seconds"`
	Sets                     *int     `json:"sets"`
	CalibrationDigest        *string  `json:"calibration_digest"`
	CalibrationContextDigest *string  `json:"calibration_context_digest"`
	BorderlineBand           *string  `json:"borderline_band"`
	ReadOrder                []string `json:"read_order"`
	Timing                   *string  `json:"timing"`
}

// ParsePolicy reads a policy projection (the JSON Projection writes). Every
// field is required, unknown fields are refused, and the derived labels
// (borderline_band, read_order, timing), when present, must agree with the
// version.
func ParsePolicy(data []byte) (Policy, error) {
	var f policyFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return Policy{}, &PolicyError{Field: "(document)", Reason: err.Error()}
	}
	if dec.More() {
		return Policy{}, &PolicyError{Field: "(document)", Reason: "trailing data after the policy object"}
	}
	var p Policy
	var err error
	ints := []struct {
		name string
		src  *int
		dst  *int
	}{
		{"version", f.Version, &p.Version},
		{"min_windows", f.MinWindows, &p.MinWindows},
		{"max_stage_seconds", f.MaxStageSeconds, &p.MaxStageSeconds},
		{"max_qualification_seconds", f.MaxQualificationSeconds, &p.MaxQualificationSeconds},
	}
	for _, i := range ints {
		if i.src == nil {
			return Policy{}, &PolicyError{Field: i.name, Reason: "missing"}
		}
		*i.dst = *i.src
	}
	if f.Sets != nil {
		p.Sets = *f.Sets
	} else if p.Version == V9 {
		return Policy{}, &PolicyError{Field: "sets", Reason: "missing"}
	}
	decimals := []struct {
		name string
		src  *string
		dst  *float64
	}{
		{"min_margin", f.MinMargin, &p.MinMargin},
		{"noise_multiplier", f.NoiseMultiplier, &p.NoiseMultiplier},
		{"max_noise", f.MaxNoise, &p.MaxNoise},
		{"max_window_scatter", f.MaxWindowScatter, &p.MaxWindowScatter},
		{"max_conditioning_slowdown", f.MaxConditioningSlowdown, &p.MaxConditioningSlowdown},
	}
	for _, d := range decimals {
		if d.src == nil {
			return Policy{}, &PolicyError{Field: d.name, Reason: "missing"}
		}
		if *d.dst, err = ParseDecimal(*d.src); err != nil {
			return Policy{}, &PolicyError{Field: d.name, Reason: err.Error()}
		}
	}
	for _, s := range []struct {
		name string
		src  *string
		dst  *string
	}{
		{"calibration_digest", f.CalibrationDigest, &p.CalibrationDigest},
		{"calibration_context_digest", f.CalibrationContextDigest, &p.CalibrationContextDigest},
	} {
		if s.src == nil {
			return Policy{}, &PolicyError{Field: s.name, Reason: "missing"}
		}
		*s.dst = *s.src
	}
	if err := p.Validate(); err != nil {
		return Policy{}, err
	}
	if f.BorderlineBand != nil && *f.BorderlineBand != p.BorderlineBand() {
		return Policy{}, &PolicyError{Field: "borderline_band", Reason: fmt.Sprintf("%q is not version %d's %q", *f.BorderlineBand, p.Version, p.BorderlineBand())}
	}
	if f.ReadOrder != nil && fmt.Sprint(f.ReadOrder) != fmt.Sprint(p.ReadOrder()) {
		return Policy{}, &PolicyError{Field: "read_order", Reason: fmt.Sprintf("%q is not version %d's %q", f.ReadOrder, p.Version, p.ReadOrder())}
	}
	if f.Timing != nil && *f.Timing != Timing {
		return Policy{}, &PolicyError{Field: "timing", Reason: fmt.Sprintf("%q is not %q", *f.Timing, Timing)}
	}
	return p, nil
}

// Format writes x with 17 significant digits, as Python's format(x,
// ".17g") does: enough to round-trip every float64.
func Format(x float64) string {
	s := strconv.FormatFloat(x, 'g', 17, 64)
	return s
}

// ParseDecimal reads a decimal string into the nearest float64, refusing
// anything that is not a finite decimal number.
func ParseDecimal(s string) (float64, error) {
	if s == "" {
		return 0, errors.New("empty decimal")
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9') && c != '.' && c != '-' && c != '+' && c != 'e' && c != 'E' {
			return 0, fmt.Errorf("%q is not a decimal number", s)
		}
	}
	x, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(x, 0) || math.IsNaN(x) {
		return 0, fmt.Errorf("%q is not a finite decimal number", s)
	}
	return x, nil
}
