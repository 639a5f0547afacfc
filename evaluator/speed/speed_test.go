package speed

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"
)

func testPolicy(version int) Policy {
	p := Policy{
		Version: version, MinMargin: 0.005, NoiseMultiplier: 2.0, MaxNoise: 0.02,
		MinWindows: 3, MaxWindowScatter: 0.05, MaxConditioningSlowdown: 1.25,
		MaxStageSeconds: 1800, MaxQualificationSeconds: 7200,
		CalibrationDigest:        strings.Repeat("a", 64),
		CalibrationContextDigest: strings.Repeat("b", 64),
	}
	if version == V9 {
		p.Sets = 3
	}
	return p
}

// gradeCase grades reads under p and checks either the refusal (wantErr,
// an ErrEvidence containing it) or the decision and reason. It returns the
// grade, or nil after the refusal expected.
func gradeCase(t *testing.T, p Policy, reads []Read, o Options, wantErr string, decision Decision, reason string) *Grade {
	t.Helper()
	g, err := GradeReads(p, reads, o)
	if wantErr != "" {
		if err == nil || !errors.Is(err, ErrEvidence) || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("err = %v, want an ErrEvidence containing %q", err, wantErr)
		}
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	if g.Decision != decision || g.Reason != reason {
		t.Errorf("got %s/%s, want %s/%s", g.Decision, g.Reason, decision, reason)
	}
	return g
}

// steady is a read whose every window runs at rate tokens per second:
// 1000 tokens in 1000/rate seconds.
func steady(role Role, rate float64, windows int) Read {
	r := Read{Role: role, ConditioningTokens: 256, ConditioningSeconds: 0.5}
	for i := 0; i < windows; i++ {
		r.Windows = append(r.Windows, Window{Tokens: 1000, Seconds: 1000 / rate})
	}
	return r
}

func TestTwoLegLimitsWithTheTestPolicy(t *testing.T) {
	// Spec §5.2: with min_margin 0.005, noise_multiplier 2 and max_noise
	// 0.02 the limits are 1.005 and 1.0610101 (to 8 digits).
	fail, pass := TwoLegLimits(testPolicy(V7))
	if fail != 1.005 {
		t.Errorf("fail_below = %v, want 1.005", fail)
	}
	if math.Abs(pass-1.0610101) > 5e-8 {
		t.Errorf("pass_at = %v, want 1.0610101", pass)
	}
}

func TestGradeV7(t *testing.T) {
	p := testPolicy(V7)
	slowCond := func(r Read) Read { r.ConditioningSeconds = 0.5 * 1.3; return r }
	cases := []struct {
		name     string
		reads    []Read
		live     bool
		decision Decision
		reason   string
		speedup  float64
		err      string
	}{
		{name: "clear pass", reads: []Read{steady(B, 100, 5), steady(C, 110, 5)}, decision: Pass, reason: ReasonAbovePassLimit, speedup: 1.1},
		{name: "clear fail", reads: []Read{steady(B, 100, 5), steady(C, 100.4, 5)}, decision: Fail, reason: ReasonBelowFailLimit, speedup: 1.004},
		{name: "conditioning regression beats speed", reads: []Read{steady(B, 100, 5), slowCond(steady(C, 120, 5))}, decision: Fail, reason: ReasonConditioningRegression, speedup: 1.2},
		{name: "inconclusive live asks for B′", reads: []Read{steady(B, 100, 5), steady(C, 103, 5)}, live: true, decision: BPrimeRequired, reason: ReasonInconclusive, speedup: 1.03},
		{name: "inconclusive without B′ is refused", reads: []Read{steady(B, 100, 5), steady(C, 103, 5)}, err: "must then carry B′"},
		{name: "clear with B′ is refused", reads: []Read{steady(B, 100, 5), steady(C, 110, 5), steady(BPrime, 100, 5)}, err: "no B′ after a clear"},
		// B=100, B′=101: drift 1/100.5 ≈ 0.00995 ≤ 0.02, kept; noise = drift,
		// required = 1+2·0.00995 = 1.0199; C=103: low 103/101 = 1.0198 < required,
		// high 103/100 = 1.03 ≥ required → not proven faster.
		{name: "B′ kept, not proven faster", reads: []Read{steady(B, 100, 5), steady(C, 103, 5), steady(BPrime, 101, 5)}, decision: Fail, reason: ReasonNotProvenFaster, speedup: 103 / 100.5},
		// B′=100: no drift, required 1.005, 103/100 ≥ 1.005.
		{name: "B′ agrees, proven faster", reads: []Read{steady(B, 100, 5), steady(C, 103, 5), steady(BPrime, 100, 5)}, decision: Pass, reason: ReasonProvenFaster, speedup: 1.03},
		// B′=104 drifted (0.039 > 0.02): dropped, B alone, required 1.005.
		{name: "B′ drifted and dropped", reads: []Read{steady(B, 100, 5), steady(C, 103, 5), steady(BPrime, 104, 5)}, decision: Pass, reason: ReasonProvenFaster, speedup: 1.03},
		{name: "too few windows", reads: []Read{steady(B, 100, 2), steady(C, 110, 5)}, err: "2 windows, the policy needs at least 3"},
		{name: "wrong order", reads: []Read{steady(C, 100, 5), steady(B, 110, 5)}, err: `"C" where the schedule reads "B"`},
		{name: "one read", reads: []Read{steady(B, 100, 5)}, err: "got 1 reads"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := gradeCase(t, p, c.reads, Options{Live: c.live}, c.err, c.decision, c.reason)
			if g != nil && math.Abs(g.Speedup-c.speedup) > 1e-12 {
				t.Errorf("speedup = %v, want %v", g.Speedup, c.speedup)
			}
		})
	}
}

func TestGradeV8(t *testing.T) {
	p := testPolicy(V8)
	slowCond := func(r Read) Read { r.ConditioningSeconds = 0.5 * 1.3; return r }
	cases := []struct {
		name     string
		reads    []Read
		decision Decision
		reason   string
		err      string
	}{
		// Even a large speedup is graded over all three reads.
		{name: "faster", reads: []Read{steady(B, 100, 4), steady(C, 110, 4), steady(BPrime, 100.5, 4)}, decision: Pass, reason: ReasonProvenFaster},
		{name: "slower", reads: []Read{steady(B, 100, 4), steady(C, 99, 4), steady(BPrime, 100, 4)}, decision: Fail, reason: ReasonProvenSlower},
		{name: "not proven", reads: []Read{steady(B, 100, 4), steady(C, 103, 4), steady(BPrime, 101, 4)}, decision: Fail, reason: ReasonNotProvenFaster},
		{name: "faster but conditioning regressed", reads: []Read{steady(B, 100, 4), slowCond(steady(C, 110, 4)), steady(BPrime, 100, 4)}, decision: Fail, reason: ReasonConditioningRegression},
		{name: "two reads refused", reads: []Read{steady(B, 100, 4), steady(C, 110, 4)}, err: "version 8 reads B, C and B′ always"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			gradeCase(t, p, c.reads, Options{Live: true}, c.err, c.decision, c.reason)
		})
	}
}

// sets is version 9 evidence: one B, C, B′ set for each triple of rates.
func sets(rates ...[3]float64) []Read {
	var reads []Read
	for _, r := range rates {
		reads = append(reads, steady(B, r[0], 4), steady(C, r[1], 4), steady(BPrime, r[2], 4))
	}
	return reads
}

func TestGradeV9(t *testing.T) {
	p := testPolicy(V9) // three sets, min_margin 0.005, max_noise 0.02
	slowCond := func(reads []Read) []Read {
		for i := 1; i < len(reads); i += 3 {
			reads[i].ConditioningSeconds = 0.5 * 1.3
		}
		return reads
	}
	cases := []struct {
		name     string
		reads    []Read
		decision Decision
		reason   string
		speedup  float64
		kept     []bool
		spoiled  bool // fewer sets kept than the grade needs
		err      string
	}{
		{name: "every set faster", reads: sets([3]float64{100, 101, 100}, [3]float64{100, 101, 100}, [3]float64{100, 101, 100}),
			decision: Pass, reason: ReasonMeanFaster, speedup: 1.01, kept: []bool{true, true, true}},
		// v8 would fail the second set alone (C slower than both stock
		// reads); the mean of the three still clears 1.005.
		{name: "one set slower, the mean faster", reads: sets([3]float64{100, 101, 100}, [3]float64{100, 99.8, 100}, [3]float64{100, 101, 100}),
			decision: Pass, reason: ReasonMeanFaster, speedup: (1.01 + 0.998 + 1.01) / 3, kept: []bool{true, true, true}},
		{name: "the mean short of the margin", reads: sets([3]float64{100, 100.4, 100}, [3]float64{100, 100.4, 100}, [3]float64{100, 100.6, 100}),
			decision: Fail, reason: ReasonMeanNotFaster, speedup: (1.004 + 1.004 + 1.006) / 3, kept: []bool{true, true, true}},
		// The drifted set's C (×1.3) would have carried the mean; its
		// stock reads disagree, so it is not graded.
		{name: "a drifted set dropped", reads: sets([3]float64{100, 100.2, 100}, [3]float64{100, 130, 103}, [3]float64{100, 100.2, 100}),
			decision: Fail, reason: ReasonMeanNotFaster, speedup: 1.002, kept: []bool{true, false, true}},
		{name: "two drifted sets spoil the grade", reads: sets([3]float64{100, 101, 103}, [3]float64{100, 101, 100}, [3]float64{103, 101, 100}),
			decision: Pass, reason: ReasonMeanFaster, speedup: 1.01, kept: []bool{false, true, false}, spoiled: true},
		{name: "faster but conditioning regressed", reads: slowCond(sets([3]float64{100, 110, 100}, [3]float64{100, 110, 100}, [3]float64{100, 110, 100})),
			decision: Fail, reason: ReasonConditioningRegression, speedup: 1.1, kept: []bool{true, true, true}},
		{name: "too few sets refused", reads: sets([3]float64{100, 101, 100}, [3]float64{100, 101, 100}), err: "version 9 reads 3 sets"},
		{name: "roles out of order refused", reads: append(sets([3]float64{100, 101, 100}, [3]float64{100, 101, 100})[:5], steady(C, 100, 4), steady(B, 100, 4), steady(C, 100, 4), steady(BPrime, 100, 4)),
			err: `reads[5].role: "C" where the schedule reads "B_prime"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := gradeCase(t, p, c.reads, Options{}, c.err, c.decision, c.reason)
			if g == nil {
				return
			}
			if math.Abs(g.Speedup-c.speedup) > 1e-12 {
				t.Errorf("speedup %v, want %v", g.Speedup, c.speedup)
			}
			if fmt.Sprint(g.SetsKept) != fmt.Sprint(c.kept) || g.BPrimeKept == c.spoiled || !g.Concluded {
				t.Errorf("kept %v, BPrimeKept %v, concluded %v; want kept %v, spoiled %v", g.SetsKept, g.BPrimeKept, g.Concluded, c.kept, c.spoiled)
			}
			if g.Required != 1.005 || len(g.SetSpeedups) != 3 || len(g.SetDrifts) != 3 {
				t.Errorf("required %v, %d set speedups, %d drifts", g.Required, len(g.SetSpeedups), len(g.SetDrifts))
			}
		})
	}
}

func TestSetsKeptAtLeast(t *testing.T) {
	for sets, want := range map[int]int{2: 2, 3: 2, 4: 3, 8: 7} {
		if got := SetsKeptAtLeast(sets); got != want {
			t.Errorf("SetsKeptAtLeast(%d) = %d, want %d", sets, got, want)
		}
	}
}

// TestV7DecisionIsInvariantToEveryLegalBPrime is the property behind
// reading B′ only when inconclusive: whenever B and C decide clearly, the
// concluding grade over [B, B′] vs [C] decides the same for every B′ a
// read could produce, so skipping B′ can never change a verdict.
func TestV7DecisionIsInvariantToEveryLegalBPrime(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	policies := []Policy{testPolicy(V7)}
	for i := 0; i < 20; i++ {
		p := testPolicy(V7)
		p.MinMargin = 0.0005 + rng.Float64()*0.05
		p.NoiseMultiplier = 0.5 + rng.Float64()*4
		p.MaxNoise = rng.Float64() * 0.02
		policies = append(policies, p)
	}
	checked := 0
	for _, p := range policies {
		fail, pass := TwoLegLimits(p)
		hb := (2 + p.MaxNoise) / (2 - p.MaxNoise)
		for i := 0; i < 2000; i++ {
			b := 10 + rng.Float64()*1000
			var ratio float64
			switch i % 4 {
			case 0: // just under the fail limit
				ratio = fail * (1 - rng.Float64()*1e-3)
			case 1: // just over the pass limit
				ratio = pass * (1 + rng.Float64()*1e-3)
			default:
				ratio = 0.5 + rng.Float64()*1.0
			}
			c := b * ratio
			speedup := c / b
			var want Decision
			switch {
			case speedup < fail:
				want = Fail
			case speedup >= pass:
				want = Pass
			default:
				continue
			}
			// B′ candidates: the drift edges (kept and dropped), and far ones.
			bps := []float64{b, b * hb, b / hb, b * hb * (1 + 1e-12), b / hb * (1 - 1e-12), b * (0.1 + rng.Float64()*10)}
			for _, bp := range bps {
				g := &Grade{}
				conclude(p, g, []float64{b, bp}, []float64{c})
				checked++
				if g.Decision != want {
					t.Fatalf("policy %+v: B=%v C=%v decide %s by the two legs, but B′=%v concludes %s (%s, required %v)", p, b, c, want, bp, g.Decision, g.Reason, g.Required)
				}
			}
		}
	}
	if checked < 10000 {
		t.Fatalf("only %d B′ checked", checked)
	}
}

func TestStatisticsMatchPython(t *testing.T) {
	// Values from Python 3.11's statistics module.
	if got := mean([]float64{0.1, 0.2, 0.3}); got != 0.2 {
		t.Errorf("mean = %v, want 0.2 (statistics.mean rounds once)", got)
	}
	if got := pstdev([]float64{1, 2, 3, 4}); got != 1.118033988749895 {
		t.Errorf("pstdev = %v, want 1.118033988749895", got)
	}
	if got := Median([]float64{3, 1, 2, 10}); got != 2.5 {
		t.Errorf("median = %v", got)
	}
	if got := relativeSpread([]float64{100}); !math.IsInf(got, 1) {
		t.Errorf("spread of one = %v", got)
	}
	if got := relativeSpread([]float64{99, 101}); got != 0.02 {
		t.Errorf("spread of two = %v, want 0.02", got)
	}
}

func TestFormatIs17SignificantDigits(t *testing.T) {
	// Python: format(x, ".17g").
	cases := map[float64]string{
		0.005:   "0.0050000000000000001",
		2:       "2",
		0.02:    "0.02",
		1.25:    "1.25",
		1e-05:   "1.0000000000000001e-05",
		1e20:    "1e+20",
		1.0 / 3: "0.33333333333333331",
	}
	for x, want := range cases {
		if got := Format(x); got != want {
			t.Errorf("Format(%v) = %q, want %q", x, got, want)
		}
	}
}
