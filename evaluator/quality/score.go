package quality

import (
	"fmt"
	"strings"
)

// Decision is T's outcome.
type Decision string

// Decisions, spelled as the qualification spells them.
const (
	Pass       Decision = "PASS"
	Fail       Decision = "FAIL"
	NoDecision Decision = "NO_DECISION"
)

// Triplet is one selected prompt's metrics under each role.
type Triplet struct {
	Prompt string           `json:"prompt"` // its digest
	Roles  map[Role]Metrics `json:"-"`
}

// MetricDecision is one metric's familywise test over the selected prompts.
type MetricDecision struct {
	Metric   string   `json:"metric"`
	Decision Decision `json:"decision"`
	Reason   string   `json:"reason"`
	// Drift is mean + z·stderr of |B − B′|; Low and High bound the mean
	// regression (C − B, or B − C for argmax_rate) by ∓ z·stderr. Decimal
	// strings.
	Drift          string `json:"stock_drift"`
	StockEnvelope  string `json:"stock_envelope"`
	Low            string `json:"regression_low"`
	High           string `json:"regression_high"`
	CandidateDelta string `json:"candidate_delta"`
}

// Verdict is the familywise decision.
type Verdict struct {
	Decision Decision         `json:"decision"`
	Reason   string           `json:"reason"`
	Metrics  []MetricDecision `json:"metrics"`
}

// Score is the familywise decision of spec 5.4 over the selected prompts'
// triplets under cal: per metric, stock drift over its envelope is
// NO_DECISION <metric>.stock_drift; a regression whose lower bound clears
// the candidate delta is FAIL; one whose upper bound does is NO_DECISION
// (overlap); otherwise PASS. Any FAIL is FAIL, else any NO_DECISION is
// NO_DECISION. A provisional calibration decides nothing.
func Score(cal *Calibration, ts []Triplet) Verdict {
	v := Verdict{Metrics: []MetricDecision{}}
	if len(ts) == 0 {
		return Verdict{Decision: NoDecision, Reason: "no selected prompt to score", Metrics: []MetricDecision{}}
	}
	th, err := cal.thresholds()
	if err != nil {
		return Verdict{Decision: NoDecision, Reason: "quality calibration: " + err.Error(), Metrics: []MetricDecision{}}
	}
	var fails, undecided []string
	for _, m := range MetricNames {
		d, low, high := stats(ts, m, th.z)
		t := th.metrics[m]
		md := MetricDecision{Metric: m, Drift: format(d), StockEnvelope: format(t.envelope), Low: format(low), High: format(high), CandidateDelta: format(t.delta)}
		switch {
		case d > t.envelope:
			md.Decision, md.Reason = NoDecision, fmt.Sprintf("%s.stock_drift: |B − B′| bound %s over the stock envelope %s", m, format(d), format(t.envelope))
			undecided = append(undecided, md.Reason)
		case low > t.delta:
			md.Decision, md.Reason = Fail, fmt.Sprintf("%s.regression: [%s, %s] clears the candidate delta %s", m, format(low), format(high), format(t.delta))
			fails = append(fails, md.Reason)
		case high > t.delta:
			md.Decision, md.Reason = NoDecision, fmt.Sprintf("%s.overlap: [%s, %s] straddles the candidate delta %s", m, format(low), format(high), format(t.delta))
			undecided = append(undecided, md.Reason)
		default:
			md.Decision, md.Reason = Pass, fmt.Sprintf("%s: regression at most %s, within %s", m, format(high), format(t.delta))
		}
		v.Metrics = append(v.Metrics, md)
	}
	switch {
	case len(fails) > 0:
		v.Decision, v.Reason = Fail, strings.Join(fails, "; ")
	case len(undecided) > 0:
		v.Decision, v.Reason = NoDecision, strings.Join(undecided, "; ")
	default:
		v.Decision, v.Reason = Pass, fmt.Sprintf("%d prompts: every metric within its calibrated delta", len(ts))
	}
	return v
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
