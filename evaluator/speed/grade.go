package speed

import (
	"fmt"
	"math"
)

// Decision is the outcome of grading.
type Decision string

// Decisions. BPrimeRequired is only ever returned to a live controller
// (Options.Live) holding a v7 B and C whose two-leg limits are
// inconclusive: it must read B′ and grade again.
const (
	Pass           Decision = "PASS"
	Fail           Decision = "FAIL"
	BPrimeRequired Decision = "B_PRIME_REQUIRED"
)

// Reasons say which rule decided.
const (
	ReasonConditioningRegression = "conditioning_regression" // C's conditioning is too much slower than B's
	ReasonBelowFailLimit         = "below_fail_limit"        // v7: C/B under 1+min_margin, no B′ can save it
	ReasonAbovePassLimit         = "above_pass_limit"        // v7: C/B over the pass limit, no B′ can spoil it
	ReasonInconclusive           = "inconclusive"            // v7 live: read B′
	ReasonProvenFaster           = "proven_faster"           // min(C)/max(B) clears the requirement
	ReasonProvenSlower           = "proven_slower"           // max(C)/min(B) falls short of it
	ReasonNotProvenFaster        = "valid_not_faster"        // between the two: not proven faster
	ReasonMeanFaster             = "mean_faster"             // v9: the mean of the sets' speedups clears 1+min_margin
	ReasonMeanNotFaster          = "mean_not_faster"         // v9: it falls short
)

// Options change how a read set is taken.
type Options struct {
	// Live grades a v7 read set still being taken: a B and C whose limits
	// are inconclusive yield BPrimeRequired instead of a rejection.
	Live bool
}

// Grade is a decision with every number it came from.
type Grade struct {
	Decision Decision
	Reason   string
	// Speedup is the candidate's scored rate over the mean of the kept
	// baselines.
	Speedup float64
	Rates   []Rate
	// The v7 two-leg limits (zero under v8).
	FailBelow, PassAt float64
	// The concluding grade, when there was one.
	Concluded    bool
	Drift        float64 // relative spread of B and B′
	BPrimeKept   bool    // false when the drift was over max_noise
	Required     float64 // the speedup a PASS had to be proven above
	ProvenLow    float64 // min(C)/max(kept baselines)
	ProvenHigh   float64 // max(C)/min(kept baselines)
	Conditioning float64 // C's conditioning seconds over B's
	// Version 9's read sets, in read order (none under 7 and 8): each
	// set's C over the mean of its B and B′, the relative spread of its B
	// and B′, and whether it was graded (a set whose B and B′ differ by
	// more than max_noise is not). Under v9, Drift is the largest set's
	// spread, BPrimeKept is false when more sets were dropped than
	// SetsKeptAtLeast allows, and ProvenLow and ProvenHigh are the
	// smallest and largest kept set's speedup.
	SetSpeedups []float64
	SetDrifts   []float64
	SetsKept    []bool
}

// SetsKeptAtLeast is how many of a version 9 policy's sets must be graded
// for the mean to decide: all but one, and at least two. One set whose
// stock reads drifted apart is dropped (it says nothing about the
// candidate, and the rule looks at its B and B′ only, never at C); two
// are the lanes not being steady.
func SetsKeptAtLeast(sets int) int { return max(2, sets-1) }

// TwoLegLimits are v7's limits on C/B before any B′: below failBelow no B′
// can make it pass, at or above passAt none can make it fail.
func TwoLegLimits(p Policy) (failBelow, passAt float64) {
	failBelow = 1 + p.MinMargin
	highBookend := (2 + p.MaxNoise) / (2 - p.MaxNoise)
	passAt = highBookend * (1 + math.Max(p.MinMargin, p.NoiseMultiplier*p.MaxNoise))
	return failBelow, passAt
}

// GradeReads grades reads, in read order, under p.
func GradeReads(p Policy, reads []Read, o Options) (*Grade, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if err := checkSchedule(p, reads, o); err != nil {
		return nil, err
	}
	for i, r := range reads {
		if err := checkRead(p, i, r); err != nil {
			return nil, err
		}
	}
	for i, r := range reads[1:] {
		if r.ConditioningTokens != reads[0].ConditioningTokens {
			return nil, &EvidenceError{Where: fmt.Sprintf("reads[%d].conditioning_tokens", i+1), Reason: fmt.Sprintf("%d differs from B's %d: conditioning is compared at equal warmth only", r.ConditioningTokens, reads[0].ConditioningTokens)}
		}
	}
	g := &Grade{}
	for _, r := range reads {
		g.Rates = append(g.Rates, rateOf(r))
	}
	// C's conditioning against B's: the one set's under 7 and 8, every
	// set's together under 9.
	sets := ReadSets(p.Sets)
	var bCond, cCond float64
	for s := 0; s < sets; s++ {
		bCond += reads[3*s].ConditioningSeconds
		cCond += reads[3*s+1].ConditioningSeconds
	}
	g.Conditioning = cCond / bCond
	regressed := cCond > p.MaxConditioningSlowdown*bCond
	b, c := g.Rates[0].Scored, g.Rates[1].Scored

	if p.Version == V9 {
		concludeSets(p, g)
		if regressed && g.Decision == Pass {
			g.Decision, g.Reason = Fail, ReasonConditioningRegression
		}
		return g, nil
	}
	if p.Version == V8 {
		conclude(p, g, []float64{b, g.Rates[2].Scored}, []float64{c})
		if regressed && g.Decision == Pass {
			g.Decision, g.Reason = Fail, ReasonConditioningRegression
		}
		return g, nil
	}

	g.FailBelow, g.PassAt = TwoLegLimits(p)
	g.Speedup = c / b
	clear := ""
	switch {
	case regressed:
		g.Decision, clear = Fail, ReasonConditioningRegression
	case g.Speedup < g.FailBelow:
		g.Decision, clear = Fail, ReasonBelowFailLimit
	case g.Speedup >= g.PassAt:
		g.Decision, clear = Pass, ReasonAbovePassLimit
	}
	if clear != "" {
		if len(reads) == 3 {
			return nil, &EvidenceError{Where: "reads[2]", Reason: fmt.Sprintf("version 7 reads no B′ after a clear two-leg decision (%s at C/B %s)", clear, Format(g.Speedup))}
		}
		g.Reason = clear
		return g, nil
	}
	if len(reads) == 2 {
		if o.Live {
			g.Decision, g.Reason = BPrimeRequired, ReasonInconclusive
			return g, nil
		}
		return nil, &EvidenceError{Where: "reads", Reason: fmt.Sprintf("C/B %s is between the two-leg limits %s and %s: version 7 evidence must then carry B′", Format(g.Speedup), Format(g.FailBelow), Format(g.PassAt))}
	}
	conclude(p, g, []float64{b, g.Rates[2].Scored}, []float64{c})
	return g, nil
}

// checkSchedule refuses a read set whose roles are not the version's.
func checkSchedule(p Policy, reads []Read, o Options) error {
	want := []Role{B, C, BPrime}
	switch {
	case p.Version == V9 && len(reads) != 3*p.Sets:
		return &EvidenceError{Where: "reads", Reason: fmt.Sprintf("version 9 reads %d sets of B, C and B′ (%d reads); got %d reads", p.Sets, 3*p.Sets, len(reads))}
	case p.Version == V8 && len(reads) != 3:
		return &EvidenceError{Where: "reads", Reason: fmt.Sprintf("version 8 reads B, C and B′ always; got %d reads", len(reads))}
	case p.Version == V7 && (len(reads) < 2 || len(reads) > 3):
		return &EvidenceError{Where: "reads", Reason: fmt.Sprintf("version 7 reads B, C and B′ only if inconclusive; got %d reads", len(reads))}
	}
	for i, r := range reads {
		if r.Role != want[i%3] {
			return &EvidenceError{Where: fmt.Sprintf("reads[%d].role", i), Reason: fmt.Sprintf("%q where the schedule reads %q", r.Role, want[i%3])}
		}
	}
	return nil
}

// conclude is the concluding grade over baselines [B, B′] and candidates:
// B′ is dropped when it drifted from B by more than max_noise; then the
// decision is invariant: FAIL when even the most favourable pairing falls
// short, PASS when even the least favourable one clears, otherwise FAIL as
// not proven faster.
func conclude(p Policy, g *Grade, baselines, candidates []float64) {
	g.Concluded = true
	g.Drift = relativeSpread(baselines)
	kept := baselines
	g.BPrimeKept = true
	if g.Drift > p.MaxNoise {
		kept, g.BPrimeKept = baselines[:1], false
	}
	noise := 0.0
	if len(kept) >= 2 {
		noise = relativeSpread(kept)
	}
	if len(candidates) >= 2 {
		noise = math.Max(noise, relativeSpread(candidates))
	}
	if math.IsInf(noise, 0) {
		noise = 0
	}
	g.Required = 1 + math.Max(p.MinMargin, p.NoiseMultiplier*noise)
	g.ProvenHigh = maxOf(candidates) / minOf(kept)
	g.ProvenLow = minOf(candidates) / maxOf(kept)
	g.Speedup = mean(candidates) / mean(kept)
	switch {
	case g.ProvenHigh < g.Required:
		g.Decision, g.Reason = Fail, ReasonProvenSlower
	case g.ProvenLow >= g.Required:
		g.Decision, g.Reason = Pass, ReasonProvenFaster
	default:
		g.Decision, g.Reason = Fail, ReasonNotProvenFaster
	}
}

// concludeSets is version 9's grade over g.Rates, Sets sets of B, C and
// B′ in read order. Each set's speedup is its C over the mean of its B and
// B′; a set whose B and B′ differ by more than max_noise is dropped. The
// candidate passes when the mean of the kept sets' speedups is at least
// 1+min_margin. Engine processes differ from one another by about 0.2 %
// in speed, so one set's ratio scatters by about that much; the mean of k
// sets scatters √k times less, and a calibration (qualify calibrate under
// a v9 policy) sets min_margin to noise_multiplier standard errors of
// that mean. Unlike v8's invariant grade, no single pairing decides: the
// candidate's speed in every set counts, the slow ones with the fast.
func concludeSets(p Policy, g *Grade) {
	g.Concluded, g.BPrimeKept = true, true
	var kept []float64
	for s := 0; s+2 < len(g.Rates); s += 3 {
		b, c, bp := g.Rates[s].Scored, g.Rates[s+1].Scored, g.Rates[s+2].Scored
		speedup, drift := c/mean([]float64{b, bp}), relativeSpread([]float64{b, bp})
		keep := drift <= p.MaxNoise
		g.SetSpeedups = append(g.SetSpeedups, speedup)
		g.SetDrifts = append(g.SetDrifts, drift)
		g.SetsKept = append(g.SetsKept, keep)
		g.Drift = math.Max(g.Drift, drift)
		if keep {
			kept = append(kept, speedup)
		}
	}
	if len(kept) < SetsKeptAtLeast(p.Sets) {
		g.BPrimeKept = false
	}
	if len(kept) == 0 {
		kept = g.SetSpeedups // every set drifted: the mean of all, for the record
	}
	g.Required = 1 + p.MinMargin
	g.Speedup = mean(kept)
	g.ProvenLow, g.ProvenHigh = minOf(kept), maxOf(kept)
	if g.Speedup >= g.Required {
		g.Decision, g.Reason = Pass, ReasonMeanFaster
	} else {
		g.Decision, g.Reason = Fail, ReasonMeanNotFaster
	}
}
