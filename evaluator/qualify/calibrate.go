package qualify

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/cacheon/engine/evaluator/lanes"
	"github.com/cacheon/engine/evaluator/speed"
	"github.com/cacheon/engine/evaluator/worker"
	"github.com/cacheon/engine/evaluator/workload"
	"github.com/cacheon/engine/internal/identity"
)

// Calibration is what stock-versus-stock rounds measured on a machine's
// lanes, and the thresholds that noise supports. A speed policy names the
// calibration it took its thresholds from by digest.
type Calibration struct {
	Workload string             `json:"workload"` // digest
	Lanes    string             `json:"lanes"`    // e.g. "cpu", "cuda shared", "cuda disjoint"
	Rounds   []CalibrationRound `json:"rounds"`
	// Schedule is "one_engine" when every round read B, C and B′ in one
	// resident engine (RoundsOptions.OneEngine); empty for the three
	// processes of the v8 schedule, which qualifications use.
	Schedule string `json:"schedule,omitempty"`
	// Sets is how many B, C, B′ read sets every round read: the v9
	// policy's Sets the rounds ran under (0 for one set, v8). A v9 policy
	// takes its thresholds only from a calibration of as many sets.
	Sets int `json:"sets,omitempty"`
	// NoiseFloor is the largest disagreement of a stock engine with
	// itself: max over rounds of |C/B − 1| and the B/B′ drift.
	NoiseFloor string `json:"noise_floor"`
	// The thresholds it supports: max_noise covers every round's drift
	// with half again as much room (at most 0.02); min_margin is twice the
	// noise floor, at least 0.005 and at most maxCalibratedMargin; for
	// rounds of v9 sets it is setMargin's instead. Both as
	// 17-significant-digit decimals.
	MaxNoise  string `json:"max_noise"`
	MinMargin string `json:"min_margin"`
	// Supported is false when the stock engines drift more than any
	// policy's max_noise may allow (0.02) between B and B′: a concluding
	// (three-read) grade on these lanes drops B′ and is NO_DECISION, so
	// only clear two-leg decisions (v7) conclude on them.
	Supported bool `json:"supported"`
}

// CalibrationRound is one round's scored rates, tokens per second, and
// what the policy the rounds ran under decides of them: on stock-versus-
// stock rounds, a PASS is a false crown the thresholds let through.
type CalibrationRound struct {
	B        string   `json:"b"`
	C        string   `json:"c"`
	BPrime   string   `json:"b_prime"`
	Speedup  string   `json:"speedup"`
	Decision Decision `json:"decision"`
	Reason   string   `json:"reason"`
	// SetSpeedups are each read set's C over the mean of its B and B′,
	// under a v9 policy (absent for one set; then the round's digest is as
	// before sets). B, C and B′ are then each role's mean over the sets.
	SetSpeedups []string `json:"set_speedups,omitempty"`
	// SetsKept says, set by set, which sets the grade kept: a set whose B
	// and B′ differ by more than max_noise is dropped, and the round's
	// speedup is the mean of the kept sets' speedups alone. Written for
	// every round of sets; a file written before it was recorded lacks it
	// (its round digests are as they were then).
	SetsKept []bool `json:"sets_kept,omitempty"`
	// Reread says why a resolution round's first read set was set aside
	// and read again, as a qualification does ("" when it was not; then
	// the key is absent and the round's digest is as before rereads).
	// The rates above are the second set's.
	Reread string `json:"reread,omitempty"`
	// Scatter is each read's window scatter (B, C, B′: the median absolute
	// deviation of its window rates over their median), for the operator's
	// progress: it says how steady one engine was across its own windows,
	// against which the spread between the engines (B against B′) is read.
	// Advisory, so neither in the file nor in the digest.
	Scatter [3]float64 `json:"-"`
	// Around are what the lanes did around each read (B, C, B′), for the
	// same progress: when one read of a round is slow, they say whether
	// its device clocked lower or its waiting neighbours were busy. Also
	// advisory, in neither the file nor the digest.
	Around [3]AroundRead `json:"-"`
}

// AroundRead is what a read's lanes did around it: the lowest SM clock
// and highest board power sampled just before and after it (zero on the
// CPU lane, which has no samples), and the CPU time the engines that
// waited meanwhile burned.
type AroundRead struct {
	SMClockMHz   int
	PowerW       float64
	NeighbourCPU float64
}

// around summarizes ev's samples and idle records for each read.
func around(ev *SpeedEvidence) [3]AroundRead {
	var a [3]AroundRead
	roles := []speed.Role{speed.B, speed.C, speed.BPrime}
	for k, role := range roles {
		for _, rs := range ev.Samples {
			if rs.Role != role {
				continue
			}
			for _, set := range [][]lanes.Sample{rs.Before, rs.After} {
				for _, smp := range set {
					if a[k].SMClockMHz == 0 || smp.SMClockMHz < a[k].SMClockMHz {
						a[k].SMClockMHz = smp.SMClockMHz
					}
					a[k].PowerW = math.Max(a[k].PowerW, smp.PowerW)
				}
			}
		}
		var idle []IdleCPU
		for _, r := range ev.Idle {
			if r.Window == string(role) {
				idle = append(idle, r)
			}
		}
		// A set read again: the idle records of both sets are kept, the
		// samples of the second only; so are these.
		if ev.SetAside != nil {
			idle = idle[len(idle)/2:]
		}
		for _, r := range idle {
			a[k].NeighbourCPU += r.CPUSeconds
		}
	}
	return a
}

// ScheduleOneEngine is Calibration.Schedule for rounds read in one
// resident engine.
const ScheduleOneEngine = "one_engine"

// Digest identifies the calibration.
func (c *Calibration) Digest() (string, error) {
	rounds := []any{}
	for _, r := range c.Rounds {
		round := map[string]any{"b": r.B, "c": r.C, "b_prime": r.BPrime, "speedup": r.Speedup, "decision": string(r.Decision), "reason": r.Reason}
		if r.Reread != "" {
			round["reread"] = r.Reread
		}
		if len(r.SetSpeedups) > 0 {
			speedups := []any{}
			for _, x := range r.SetSpeedups {
				speedups = append(speedups, x)
			}
			round["set_speedups"] = speedups
		}
		if len(r.SetsKept) > 0 {
			kept := []any{}
			for _, k := range r.SetsKept {
				kept = append(kept, k)
			}
			round["sets_kept"] = kept
		}
		rounds = append(rounds, round)
	}
	fields := map[string]any{
		"workload": c.Workload, "lanes": c.Lanes, "rounds": rounds,
		"noise_floor": c.NoiseFloor, "max_noise": c.MaxNoise, "min_margin": c.MinMargin, "supported": c.Supported,
	}
	if c.Schedule != "" {
		fields["schedule"] = c.Schedule
	}
	if c.Sets != 0 {
		fields["sets"] = c.Sets
	}
	d, err := identity.H(identity.DomainCalibration, fields)
	return d.String(), err
}

// summarize derives the noise floor and thresholds from scored rates.
func summarize(rates [][3]float64) (noise, maxNoise, minMargin float64, supported bool) {
	drift := 0.0
	for _, r := range rates {
		d := relativeSpread2(r[0], r[2])
		drift = math.Max(drift, d)
		noise = math.Max(noise, math.Max(math.Abs(r[1]/r[0]-1), d))
	}
	maxNoise = math.Min(0.02, drift*1.5)
	minMargin = math.Max(0.005, 2*noise)
	return noise, maxNoise, math.Min(minMargin, maxCalibratedMargin), drift <= 0.02
}

func relativeSpread2(a, b float64) float64 { return math.Abs(a-b) / ((a + b) / 2) }

// minSetMargin is the smallest min_margin a v9 calibration sets: 0.1 %,
// a fifth of the smallest speedup the grade is meant to resolve.
const minSetMargin = 0.001

// setMargin is a v9 calibration's min_margin: p.NoiseMultiplier standard
// errors of the mean of p.Sets set speedups, where one set's error is the
// root mean square of every stock-versus-stock set's speedup about 1 (a
// C that reads slow or fast on the same tree counts as noise, not only
// the scatter about the sets' own mean). Between minSetMargin and
// maxCalibratedMargin.
func setMargin(p speed.Policy, speedups []float64) float64 {
	ss := 0.0
	for _, x := range speedups {
		ss += (x - 1) * (x - 1)
	}
	rms := math.Sqrt(ss / float64(len(speedups)))
	return math.Min(maxCalibratedMargin, math.Max(minSetMargin, p.NoiseMultiplier*rms/math.Sqrt(float64(p.Sets))))
}

// RoundsOptions are repeated rounds of the v8 speed schedule, fresh
// engine processes each round.
type RoundsOptions struct {
	Isolation worker.Isolation
	// Arms are B, C and B′; for a calibration every arm runs the
	// incumbent's tree, for a resolution run C runs a candidate's.
	Arms     []Arm
	Workload *workload.Workload
	Policy   speed.Policy
	Sample   Sampler
	Rounds   int
	Lanes    string // e.g. "cpu", "cuda shared", "cuda disjoint"
	// OneEngine reads B, C and B′ of a round in one resident engine that
	// swaps trees (B's spec, C's tree) instead of three processes: the
	// noise of one process against itself (runSpeedOneEngine).
	OneEngine bool
	Progress  func(round int, r CalibrationRound)
	// Checkpoint, when set, receives after every round from the second
	// on the calibration of the rounds read so far, summarized as a run
	// of that many rounds would be, so that a run cut short (a deadline,
	// an interrupt, a round that could not be read) keeps what it
	// measured. Its error ends the run.
	Checkpoint func(*Calibration) error
}

// Calibrate runs rounds of the v8 schedule with the incumbent on every
// arm and summarizes them. The policy supplies the window counts a read
// needs, and each round is graded under it (a PASS is a false crown); its
// thresholds are what is being calibrated.
func Calibrate(ctx context.Context, o RoundsOptions) (*Calibration, error) {
	for i := range o.Arms {
		o.Arms[i].Candidate = false
	}
	// A calibration measures the lanes as they are, drift included: it
	// never sets a read set aside.
	return rounds(ctx, o, 0, func(c *Calibration, rates [][3]float64) error { return thresholds(c, rates, o.Policy) })
}

// thresholds sets the noise floor and the thresholds c's rounds (whose
// read sets' rates are rates) support under the policy they ran under.
func thresholds(c *Calibration, rates [][3]float64, p speed.Policy) error {
	noise, maxNoise, minMargin, ok := summarize(rates)
	if p.Version == speed.V9 {
		// From the set speedups as the file records them, so that anyone
		// can derive the margin again from the file alone.
		var speedups []float64
		for _, r := range c.Rounds {
			for _, x := range r.SetSpeedups {
				f, err := strconv.ParseFloat(x, 64)
				if err != nil {
					return fmt.Errorf("set speedup %q: %w", x, err)
				}
				speedups = append(speedups, f)
			}
		}
		minMargin = setMargin(p, speedups)
	}
	c.NoiseFloor, c.MaxNoise, c.MinMargin, c.Supported = speed.Format(noise), speed.Format(maxNoise), speed.Format(minMargin), ok
	return nil
}

// Resolution runs the same rounds with a candidate on the C arm: how often
// a candidate of a known speed difference passes (a resolution curve is a
// few of these). It returns the rounds only; no thresholds follow from them.
// Each round decides as a qualification would: a read set the lanes
// spoiled is read again once (runSpeedSets).
func Resolution(ctx context.Context, o RoundsOptions) (*Calibration, error) {
	return rounds(ctx, o, 1, nil)
}

// rounds reads o.Rounds rounds. After each, summary (when set) brings the
// calibration's summary up to date with the rounds read so far, from the
// rates of every read set, and o.Checkpoint receives it from the second
// round on.
func rounds(ctx context.Context, o RoundsOptions, rereads int, summary func(*Calibration, [][3]float64) error) (*Calibration, error) {
	if o.Rounds < 2 {
		return nil, fmt.Errorf("calibration needs at least 2 rounds, got %d", o.Rounds)
	}
	wd, err := o.Workload.Digest()
	if err != nil {
		return nil, err
	}
	c := &Calibration{Workload: wd, Lanes: o.Lanes, Rounds: []CalibrationRound{}}
	if o.OneEngine {
		if o.Policy.Version == speed.V9 {
			return nil, fmt.Errorf("a version 9 policy reads %d sets of three engine processes; the one-engine schedule reads one set in one engine", o.Policy.Sets)
		}
		c.Schedule = ScheduleOneEngine
	}
	if o.Policy.Version == speed.V9 {
		c.Sets = o.Policy.Sets
	}
	// rates are every read set's scored B, C and B′ rates.
	var rates [][3]float64
	for i := 0; i < o.Rounds; i++ {
		round := make([]Arm, len(o.Arms))
		for j, a := range o.Arms {
			a.Spec.WorkDir = fmt.Sprintf("%s-round%d", a.Spec.WorkDir, i)
			round[j] = a
		}
		round = setArms(round, speed.ReadSets(o.Policy.Sets))
		var ev *SpeedEvidence
		if o.OneEngine {
			ev = runSpeedOneEngine(ctx, o.Isolation, round, o.Workload, o.Policy, o.Sample)
		} else {
			ev = runSpeedSets(ctx, o.Isolation, round, o.Workload, o.Policy, o.Sample, rereads)
		}
		if ev.Grade == nil {
			return nil, fmt.Errorf("calibration round %d: %s", i, ev.Reason)
		}
		// r and scatter are each role's mean over the round's sets.
		var r, scatter [3]float64
		sets := len(ev.Grade.Rates) / 3
		for k, rate := range ev.Grade.Rates {
			r[k%3] += rate.Scored / float64(sets)
			scatter[k%3] += rate.Scatter / float64(sets)
			if k%3 == 2 {
				rates = append(rates, [3]float64{ev.Grade.Rates[k-2].Scored, ev.Grade.Rates[k-1].Scored, rate.Scored})
			}
		}
		cr := CalibrationRound{B: speed.Format(r[0]), C: speed.Format(r[1]), BPrime: speed.Format(r[2]),
			Speedup: speed.Format(ev.Grade.Speedup), Decision: ev.Decision, Reason: ev.Reason, Scatter: scatter, Around: around(ev)}
		for _, x := range ev.Grade.SetSpeedups {
			cr.SetSpeedups = append(cr.SetSpeedups, speed.Format(x))
		}
		cr.SetsKept = append(cr.SetsKept, ev.Grade.SetsKept...)
		if ev.SetAside != nil {
			cr.Reread = ev.SetAside.Reason
		}
		c.Rounds = append(c.Rounds, cr)
		if o.Progress != nil {
			o.Progress(i, cr)
		}
		if summary != nil {
			if err := summary(c, rates); err != nil {
				return nil, err
			}
		}
		if o.Checkpoint != nil && len(c.Rounds) >= 2 {
			if err := o.Checkpoint(c); err != nil {
				return nil, fmt.Errorf("calibration round %d: %w", i, err)
			}
		}
	}
	return c, nil
}

// ReadNoise says where fresh rounds' read noise lies: within is the
// median window scatter of every read (each engine against itself, across
// its own windows), between the median relative spread of B and B′ (the
// same tree in two engine processes of one round). A between far over
// within is noise that more windows per read would not reduce: each
// engine process runs at a speed of its own. The scatters are not kept in
// a calibration file, so only rounds just run have them; ok is false for
// rounds without any.
func ReadNoise(rounds []CalibrationRound) (within, between float64, ok bool) {
	var scatters, spreads []float64
	for _, r := range rounds {
		b, err1 := strconv.ParseFloat(r.B, 64)
		bp, err2 := strconv.ParseFloat(r.BPrime, 64)
		if err1 != nil || err2 != nil || r.Scatter == [3]float64{} {
			continue
		}
		scatters = append(scatters, r.Scatter[:]...)
		spreads = append(spreads, relativeSpread2(b, bp))
	}
	if len(spreads) == 0 {
		return 0, 0, false
	}
	return speed.Median(scatters), speed.Median(spreads), true
}

// Passes counts the rounds the policy passed.
func (c *Calibration) Passes() int {
	n := 0
	for _, r := range c.Rounds {
		if r.Decision == Pass {
			n++
		}
	}
	return n
}

// ErrUnsupportedLanes is returned by Policy when the stock engines
// disagreed too much for any margin a policy may require to cover: no
// policy follows from the rounds.
var ErrUnsupportedLanes = errors.New("the lanes are too noisy for any speed policy")

// maxCalibratedMargin is the largest min_margin a calibration sets (C must
// then be 1.9 times B; a policy's min_margin is below 1): lanes whose stock
// engines disagree by more than half of it support no policy. Real lanes
// calibrate far below it (the H200's graph-replayed decode disagrees by
// about 0.2 %); a shared CPU, whose processes differ by tens of percent,
// supports only margins this wide.
const maxCalibratedMargin = 0.9

// Policy is base with the thresholds this calibration supports (min_margin
// and max_noise) and bound to it by digest (calibration_digest and
// calibration_context_digest both name this calibration). The window,
// conditioning and budget values stay the deployment's, base's.
//
// min_margin is twice the noise floor, so that no stock disagreement the
// rounds saw could pass; a noise floor over half of maxCalibratedMargin
// gives ErrUnsupportedLanes and no policy. Lanes that drift more than
// max_noise allows (Supported false) still get one: their B′ reads are
// dropped as drift, so only a clear two-leg decision concludes on them, and
// every three-read grade is NO_DECISION.
func (c *Calibration) Policy(base speed.Policy) (speed.Policy, error) {
	if c.Schedule != "" {
		return speed.Policy{}, fmt.Errorf("%w: the calibration's rounds read one engine (schedule %q), and a qualification reads three engine processes, whose noise it did not measure", ErrUnsupportedLanes, c.Schedule)
	}
	if c.Sets != base.Sets {
		return speed.Policy{}, fmt.Errorf("%w: the calibration's rounds read %d set(s) each, and a version %d policy of %d set(s) needs a margin for as many", ErrUnsupportedLanes, speed.ReadSets(c.Sets), base.Version, speed.ReadSets(base.Sets))
	}
	noise, err := strconv.ParseFloat(c.NoiseFloor, 64)
	if err != nil {
		return speed.Policy{}, fmt.Errorf("calibration noise_floor %q: %w", c.NoiseFloor, err)
	}
	if 2*noise > maxCalibratedMargin {
		return speed.Policy{}, fmt.Errorf("%w: the stock engines disagreed by %s, which needs a min_margin of %s, over the %g a calibrated policy may require",
			ErrUnsupportedLanes, c.NoiseFloor, speed.Format(2*noise), maxCalibratedMargin)
	}
	p := base
	if p.MinMargin, err = strconv.ParseFloat(c.MinMargin, 64); err != nil {
		return speed.Policy{}, fmt.Errorf("calibration min_margin %q: %w", c.MinMargin, err)
	}
	if p.MaxNoise, err = strconv.ParseFloat(c.MaxNoise, 64); err != nil {
		return speed.Policy{}, fmt.Errorf("calibration max_noise %q: %w", c.MaxNoise, err)
	}
	d, err := c.Digest()
	if err != nil {
		return speed.Policy{}, err
	}
	p.CalibrationDigest, p.CalibrationContextDigest = d, d
	if err := p.Validate(); err != nil {
		return speed.Policy{}, fmt.Errorf("the calibrated policy: %w", err)
	}
	return p, nil
}
