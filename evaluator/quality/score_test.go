package quality

import (
	"strings"
	"testing"
)

// triplets makes n prompts whose B and B′ have metric values base (with
// drift added to B′) and whose C has base plus reg[i%len(reg)] of
// regression on argmax_rate (it goes down) and mean_nll (it goes up).
func triplets(n int, drift float64, reg []float64) []Triplet {
	var ts []Triplet
	for i := 0; i < n; i++ {
		base := Metrics{MeanNLL: 5, WorstNLL: 5.2, TailRate: 0, ArgmaxRate: 1}
		bp := Metrics{MeanNLL: 5 + drift, WorstNLL: 5.2, TailRate: 0, ArgmaxRate: 1}
		r := reg[i%len(reg)]
		c := Metrics{MeanNLL: 5 + r/2, WorstNLL: 5.2, TailRate: 0, ArgmaxRate: 1 - r}
		ts = append(ts, Triplet{Roles: map[Role]Metrics{RoleB: base, RoleC: c, RoleBPrime: bp}})
	}
	return ts
}

func TestScoreIsFamilywise(t *testing.T) {
	cal, err := DefaultCalibration()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		ts    []Triplet
		want  Decision
		cause string
	}{
		{"identical", triplets(12, 0, []float64{0}), Pass, "every metric within"},
		{"one flip in twelve prompts", triplets(12, 0, []float64{0.0625, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}), Pass, "every metric within"},
		{"broken everywhere", triplets(12, 0, []float64{0.3, 0.4, 0.5}), Fail, "argmax_rate.regression"},
		{"overlapping the delta", triplets(12, 0, []float64{0, 0.3}), NoDecision, "argmax_rate.overlap"},
		{"stock drift", triplets(12, 0.2, []float64{0}), NoDecision, "mean_nll.stock_drift"},
		{"a fail wins over drift", triplets(12, 0.2, []float64{0.6}), Fail, "argmax_rate.regression"},
		{"no prompt", nil, NoDecision, "no selected prompt"},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := Score(cal, c.ts)
			if v.Decision != c.want || !strings.Contains(v.Reason, c.cause) {
				t.Fatalf("%s: %s, want %s with %q", v.Decision, v.Reason, c.want, c.cause)
			}
		})
	}
}

func TestProvisionalOrBrokenCalibrationDecidesNothing(t *testing.T) {
	good, err := DefaultCalibration()
	if err != nil {
		t.Fatal(err)
	}
	prov := *good
	prov.Status = Provisional
	noMetric := *good
	noMetric.Metrics = map[string]MetricThreshold{}
	for _, c := range []struct {
		name string
		cal  *Calibration
		want string
	}{
		{"absent", nil, "none"},
		{"provisional", &prov, "a provisional calibration decides nothing"},
		{"no thresholds", &noMetric, "no thresholds for metric"},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := Score(c.cal, triplets(4, 0, []float64{0.9}))
			if v.Decision != NoDecision || !strings.Contains(v.Reason, c.want) {
				t.Fatalf("%s: %s, want NO_DECISION with %q", v.Decision, v.Reason, c.want)
			}
		})
	}
}

func TestParseCalibrationRefusesBadFiles(t *testing.T) {
	for _, c := range []struct{ name, data, want string }{
		{"not json", "{", "unexpected EOF"},
		{"unknown field", `{"schema":"cacheon.quality-calibration.v1","status":"calibrated","colour":1}`, "unknown field"},
		{"wrong schema", `{"schema":"x","status":"calibrated"}`, `schema "x"`},
		{"wrong status", `{"schema":"cacheon.quality-calibration.v1","status":"maybe"}`, `status "maybe"`},
		{"calibrated without z", `{"schema":"cacheon.quality-calibration.v1","status":"calibrated"}`, "z: \"\" is not a finite decimal"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseCalibration("cal.json", []byte(c.data))
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "cal.json") {
				t.Fatalf("err %v, want one naming cal.json with %q", err, c.want)
			}
		})
	}
	if c, err := ParseCalibration("p.json", []byte(`{"schema":"cacheon.quality-calibration.v1","status":"provisional"}`)); err != nil || c.Status != Provisional {
		t.Fatalf("a provisional file: %v", err)
	}
}

func TestCalibrateTakesTheLargerOfMeasurementAndFloor(t *testing.T) {
	s := func(nll ...float64) Scored {
		tg := make([]int, len(nll))
		return Scored{Target: tg, NLL: nll, Argmax: tg}
	}
	round := func(bp float64) []map[Role]Scored {
		return []map[Role]Scored{
			{RoleB: s(5, 5), RoleC: s(5, 5), RoleBPrime: s(5, bp)},
			{RoleB: s(5, 5), RoleC: s(5, 5), RoleBPrime: s(5, 5)},
		}
	}
	o := DefaultCalibrateOptions("m", "w", "r")
	c, err := Calibrate([][]map[Role]Scored{round(5), round(5.4)}, o)
	if err != nil {
		t.Fatal(err)
	}
	if c.NLLTailThreshold != "5.4" {
		t.Fatalf("tail threshold %s, want the largest stock NLL 5.4", c.NLLTailThreshold)
	}
	// mean_nll drift in round 2: |B − B′| = 0.2 and 0 → mean 0.1, stderr
	// 0.1, bound 0.1 + z·0.1; the envelope doubles it.
	m := c.Metrics[MeanNLL]
	drift, _ := parse("drift", m.MeasuredDrift)
	env, _ := parse("envelope", m.StockEnvelope)
	if want := 0.1 + o.Z*0.1; abs(drift-want) > 1e-12 || env != 2*drift {
		t.Fatalf("mean_nll %+v", m)
	}
	if a := c.Metrics[ArgmaxRate]; a.StockEnvelope != "0.1" || a.CandidateDelta != "0.1" {
		t.Fatalf("argmax_rate %+v: want the floors", a)
	}
	if _, err := Calibrate([][]map[Role]Scored{round(5)}, o); err == nil {
		t.Fatal("one round calibrated")
	}
}
