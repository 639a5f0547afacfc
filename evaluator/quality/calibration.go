package quality

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"math"
	"sort"

	"github.com/cacheon/engine/internal/identity"
	"github.com/cacheon/engine/internal/reject"
)

// CalibrationSchema names the quality calibration's format.
const CalibrationSchema = "cacheon.quality-calibration.v1"

// Calibration statuses: only a calibrated file decides anything.
const (
	Calibrated  = "calibrated"
	Provisional = "provisional"
)

// Calibration is what stock-versus-stock rounds (B, C and B′ all the
// incumbent) measured under the reference, and the familywise thresholds
// it supports. Numbers are decimal strings.
type Calibration struct {
	Schema string `json:"schema"`
	Status string `json:"status"`
	// What the rounds ran on: free text for the lanes, digests for the rest.
	Lanes         string `json:"lanes"`
	Model         string `json:"model"`
	Workload      string `json:"workload"`
	ReferenceTree string `json:"reference_tree"`
	// Z is the familywise z (one-sided, Bonferroni over the four metrics).
	Z string `json:"z"`
	// Headroom multiplies every measured stock statistic into its threshold.
	Headroom string `json:"headroom"`
	// NLLTailThreshold is the largest token NLL the stock rounds produced:
	// a stock engine's tail rate is 0 by construction.
	NLLTailThreshold string `json:"nll_tail_threshold"`
	// Metrics are each metric's thresholds, with what they came from.
	Metrics map[string]MetricThreshold `json:"metrics"`
	Rounds  []CalibrationRound         `json:"rounds"`
	Note    string                     `json:"note"`
}

// MetricThreshold is one metric's calibrated thresholds: the measured
// stock statistic times the headroom, or the floor where that is larger.
type MetricThreshold struct {
	MeasuredDrift      string `json:"measured_drift"`      // max over rounds of mean + z·stderr of |B − B′|
	MeasuredRegression string `json:"measured_regression"` // max over rounds of |C − B| bounds
	EnvelopeFloor      string `json:"envelope_floor"`
	DeltaFloor         string `json:"delta_floor"`
	StockEnvelope      string `json:"stock_envelope"`
	CandidateDelta     string `json:"candidate_delta"`
}

// CalibrationRound is one stock-versus-stock round's statistics per metric.
type CalibrationRound struct {
	Prompts int                          `json:"prompts"`
	Metrics map[string]map[string]string `json:"metrics"` // metric → {drift, regression_low, regression_high}
}

type metricTh struct{ envelope, delta float64 }

type thresholds struct {
	z, tail float64
	metrics map[string]metricTh
}

// thresholds are the calibration's numbers, or why it decides nothing.
func (c *Calibration) thresholds() (*thresholds, error) {
	if c == nil {
		return nil, fmt.Errorf("none")
	}
	if c.Schema != CalibrationSchema {
		return nil, fmt.Errorf("schema %q, want %q", c.Schema, CalibrationSchema)
	}
	if c.Status != Calibrated {
		return nil, fmt.Errorf("status %q: a %s calibration decides nothing", c.Status, c.Status)
	}
	th := &thresholds{metrics: map[string]metricTh{}}
	var err error
	if th.z, err = parse("z", c.Z); err != nil {
		return nil, err
	}
	if th.tail, err = parse("nll_tail_threshold", c.NLLTailThreshold); err != nil {
		return nil, err
	}
	if th.z <= 0 {
		return nil, fmt.Errorf("z %s is not positive", c.Z)
	}
	for _, m := range MetricNames {
		t, ok := c.Metrics[m]
		if !ok {
			return nil, fmt.Errorf("no thresholds for metric %s", m)
		}
		var mt metricTh
		if mt.envelope, err = parse(m+".stock_envelope", t.StockEnvelope); err != nil {
			return nil, err
		}
		if mt.delta, err = parse(m+".candidate_delta", t.CandidateDelta); err != nil {
			return nil, err
		}
		if mt.envelope < 0 || mt.delta < 0 {
			return nil, fmt.Errorf("metric %s: negative threshold", m)
		}
		th.metrics[m] = mt
	}
	for m := range c.Metrics {
		if _, ok := th.metrics[m]; !ok {
			return nil, fmt.Errorf("thresholds for unknown metric %q", m)
		}
	}
	return th, nil
}

// TailThreshold is the calibration's NLL tail threshold (an error when
// it decides nothing).
func (c *Calibration) TailThreshold() (float64, error) {
	th, err := c.thresholds()
	if err != nil {
		return 0, err
	}
	return th.tail, nil
}

// Fits says whether the calibration was measured for these inputs: the
// model every engine serves, the workload whose prompts T scores and the
// reference tree that scores them. Thresholds measured on one model's
// stock drift say nothing about another's (a larger model's token NLLs
// spread differently), so a calibration applies only where it was made.
// The error names the field, what the calibration holds and what the
// qualification runs.
func (c *Calibration) Fits(model, workload, referenceTree string) error {
	for _, f := range []struct{ field, have, want string }{
		{"model", c.Model, model},
		{"workload", c.Workload, workload},
		{"reference_tree", c.ReferenceTree, referenceTree},
	} {
		if f.have != f.want {
			return reject.Errorf("field %s: the calibration was measured with %s %s, this qualification runs %s %s: calibrate T for these inputs (cacheon qualify calibrate --quality)",
				f.field, f.field, short(f.have), f.field, short(f.want))
		}
	}
	return nil
}

// Digest is H(cacheon.qualification.quality-calibration, c).
func (c *Calibration) Digest() (string, error) {
	data, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return "", err
	}
	d, err := identity.H(identity.DomainQualityCalibration, v)
	return d.String(), err
}

// ParseCalibration reads a calibration file strictly. A file that does
// not parse is refused; a provisional one parses and decides nothing.
func ParseCalibration(name string, data []byte) (*Calibration, error) {
	var c Calibration
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return nil, reject.Errorf("%s: quality calibration: %v", name, err)
	}
	if c.Schema != CalibrationSchema {
		return nil, reject.Errorf("%s: schema %q, want %q", name, c.Schema, CalibrationSchema)
	}
	if c.Status != Calibrated && c.Status != Provisional {
		return nil, reject.Errorf("%s: status %q, want %q or %q", name, c.Status, Calibrated, Provisional)
	}
	if c.Status == Calibrated {
		if _, err := c.thresholds(); err != nil {
			return nil, reject.Errorf("%s: %v", name, err)
		}
	}
	return &c, nil
}

//go:embed defaults/cpu.quality-calibration.json
var defaultCalibration []byte

// DefaultCalibration is the embedded CPU calibration, measured on the
// test model by the run docs/reference/quality.md names.
func DefaultCalibration() (*Calibration, error) {
	return ParseCalibration("defaults/cpu.quality-calibration.json", defaultCalibration)
}

// CalibrateOptions are the inputs of Calibrate that are choices, not
// measurements; every one is recorded in the file.
type CalibrateOptions struct {
	Lanes, Model, Workload, ReferenceTree string
	// Z is the familywise z; Headroom (≥ 1) multiplies every measured
	// statistic.
	Z, Headroom float64
	// Floors are each metric's smallest envelope and delta: the finest
	// difference the gate claims to resolve. A deterministic lane measures
	// zero stock drift, and a threshold of zero would fail a correct kernel
	// for one reordered floating-point sum; the floor is where the gate's
	// claim starts.
	EnvelopeFloor, DeltaFloor map[string]float64
	Note                      string
}

// Calibrate derives the thresholds from stock-versus-stock rounds: each
// round is the teacher's evidence of B, C and B′ all running the
// incumbent, per selected prompt. The tail threshold is the largest
// token NLL of any stock rollout; per metric the stock envelope is the
// headroom times the largest drift bound of any round, and the candidate
// delta the headroom times the largest |C − B| bound of any round (stock
// C against stock B is what a correct candidate looks like), each at
// least its floor.
func Calibrate(rounds [][]map[Role]Scored, o CalibrateOptions) (*Calibration, error) {
	if len(rounds) < 2 {
		return nil, fmt.Errorf("quality calibration needs at least 2 rounds, got %d", len(rounds))
	}
	if o.Z <= 0 || o.Headroom < 1 {
		return nil, fmt.Errorf("quality calibration: z %v must be positive and headroom %v at least 1", o.Z, o.Headroom)
	}
	tail := 0.0
	for i, r := range rounds {
		if len(r) == 0 {
			return nil, fmt.Errorf("calibration round %d: no prompt", i)
		}
		for j, p := range r {
			for _, role := range Roles {
				s, ok := p[role]
				if !ok || len(s.NLL) == 0 {
					return nil, fmt.Errorf("calibration round %d prompt %d: no %s rollout", i, j, role)
				}
				for _, x := range s.NLL {
					tail = math.Max(tail, x)
				}
			}
		}
	}
	c := &Calibration{Schema: CalibrationSchema, Status: Calibrated, Lanes: o.Lanes, Model: o.Model, Workload: o.Workload,
		ReferenceTree: o.ReferenceTree, Z: format(o.Z), Headroom: format(o.Headroom), NLLTailThreshold: format(tail),
		Metrics: map[string]MetricThreshold{}, Rounds: []CalibrationRound{}, Note: o.Note}
	drift, regr := map[string]float64{}, map[string]float64{}
	for i, r := range rounds {
		ts := make([]Triplet, len(r))
		for j, p := range r {
			ts[j] = Triplet{Roles: map[Role]Metrics{}}
			for _, role := range Roles {
				m, err := RolloutMetrics(p[role], tail)
				if err != nil {
					return nil, fmt.Errorf("calibration round %d prompt %d %s: %w", i, j, role, err)
				}
				ts[j].Roles[role] = m
			}
		}
		cr := CalibrationRound{Prompts: len(r), Metrics: map[string]map[string]string{}}
		for _, m := range MetricNames {
			d, low, high := stats(ts, m, o.Z)
			drift[m] = math.Max(drift[m], d)
			regr[m] = math.Max(regr[m], math.Max(math.Abs(low), math.Abs(high)))
			cr.Metrics[m] = map[string]string{"drift": format(d), "regression_low": format(low), "regression_high": format(high)}
		}
		c.Rounds = append(c.Rounds, cr)
	}
	names := append([]string(nil), MetricNames...)
	sort.Strings(names)
	for _, m := range names {
		ef, df := o.EnvelopeFloor[m], o.DeltaFloor[m]
		if ef <= 0 || df <= 0 {
			return nil, fmt.Errorf("quality calibration: metric %s needs positive envelope and delta floors", m)
		}
		c.Metrics[m] = MetricThreshold{MeasuredDrift: format(drift[m]), MeasuredRegression: format(regr[m]),
			EnvelopeFloor: format(ef), DeltaFloor: format(df),
			StockEnvelope: format(math.Max(o.Headroom*drift[m], ef)), CandidateDelta: format(math.Max(o.Headroom*regr[m], df))}
	}
	return c, nil
}

// stats is a metric's drift bound and regression interval over triplets.
func stats(ts []Triplet, m string, z float64) (drift, low, high float64) {
	d, r := make([]float64, len(ts)), make([]float64, len(ts))
	for i, t := range ts {
		b, c, bp := t.Roles[RoleB][m], t.Roles[RoleC][m], t.Roles[RoleBPrime][m]
		d[i] = math.Abs(b - bp)
		if higherIsBetter[m] {
			r[i] = b - c
		} else {
			r[i] = c - b
		}
	}
	dm, ds := meanStderr(d)
	rm, rs := meanStderr(r)
	return dm + z*ds, rm - z*rs, rm + z*rs
}

// DefaultCalibrateOptions are the documented choices of a calibration run
// (docs/reference/quality.md, "Calibration"):
//
//   - z 2.2414027276049446: one-sided 5 %, Bonferroni-corrected over the
//     four metrics (Φ⁻¹(1 − 0.05/4));
//   - headroom 2: twice the largest stock statistic of any round;
//   - floors, the finest regression the gate claims to resolve: one token
//     in ten of a rollout for the two rates (0.1), 0.05 nats of mean NLL
//     and 0.1 nats of worst NLL. The stock envelopes take the same floors.
func DefaultCalibrateOptions(model, workload, referenceTree string) CalibrateOptions {
	floors := map[string]float64{MeanNLL: 0.05, WorstNLL: 0.1, TailRate: 0.1, ArgmaxRate: 0.1}
	return CalibrateOptions{Lanes: "cpu", Model: model, Workload: workload, ReferenceTree: referenceTree,
		Z: 2.2414027276049446, Headroom: 2, EnvelopeFloor: floors, DeltaFloor: floors,
		Note: "stock-versus-stock rounds on the CPU lane and the test model; thresholds = max(headroom × measured, floor)"}
}

// MarshalCalibration writes a calibration file: indented JSON, keys in
// order, one trailing newline.
func MarshalCalibration(c *Calibration) ([]byte, error) {
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}
