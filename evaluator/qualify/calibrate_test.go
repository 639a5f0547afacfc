package qualify

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/cacheon/engine/evaluator/lanes"
	"github.com/cacheon/engine/evaluator/speed"
)

func TestSummarize(t *testing.T) {
	cases := []struct {
		name                       string
		rates                      [][3]float64
		noise, maxNoise, minMargin float64
		supported                  bool
	}{
		{"quiet", [][3]float64{{100, 100.1, 100.05}, {100, 99.9, 100}}, 0.001, 1.5 * 0.05 / 100.025, 0.005, true},
		{"noisy C", [][3]float64{{100, 104, 100}, {100, 100, 100}}, 0.04, 0, 0.08, true},
		{"drifting", [][3]float64{{100, 100, 103}}, 0.029556650246305383, 0.02, 0.059113300492610766, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n, mn, mm, ok := summarize(c.rates)
			if math.Abs(n-c.noise) > 1e-9 || math.Abs(mn-c.maxNoise) > 1e-12 || math.Abs(mm-c.minMargin) > 1e-12 || ok != c.supported {
				t.Fatalf("summarize = %v %v %v %v", n, mn, mm, ok)
			}
		})
	}
}

func TestCalibrateOnTheCPU(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var seen []int
	var checkpoints []string // each checkpoint's digest
	c, err := Calibrate(context.Background(), RoundsOptions{Isolation: f.Iso, Arms: arms(f), Workload: smoke(t), Policy: testPolicy(),
		Rounds: 2, Lanes: "cpu", Progress: func(i int, _ CalibrationRound) { seen = append(seen, i) },
		Checkpoint: func(c *Calibration) error {
			d, err := c.Digest()
			checkpoints = append(checkpoints, d)
			return err
		}})
	if err != nil {
		t.Fatal(err)
	}
	// The last round's checkpoint is the calibration itself.
	if d, _ := c.Digest(); len(checkpoints) != 1 || checkpoints[0] != d {
		t.Fatalf("checkpoints %q, want one, of the calibration %s", checkpoints, d)
	}
	if len(c.Rounds) != 2 || len(seen) != 2 || c.NoiseFloor == "" || c.Rounds[0].Decision == "" || c.Rounds[0].Speedup == "" {
		t.Fatalf("calibration %+v", c)
	}
	d1, err := c.Digest()
	if err != nil || len(d1) != 64 {
		t.Fatalf("digest %q, %v", d1, err)
	}
	// Each read's window scatter reaches the progress and ReadNoise, and
	// neither the digest nor the file.
	if _, _, ok := ReadNoise(c.Rounds); !ok {
		t.Fatalf("fresh rounds carry no window scatter: %+v", c.Rounds)
	}
	bare := c.Rounds[1]
	bare.Scatter = [3]float64{}
	without, _ := json.Marshal(bare)
	c.Rounds[1].Scatter = [3]float64{0.5, 0.5, 0.5}
	if d, _ := c.Digest(); d != d1 {
		t.Fatal("the digest covers the advisory window scatter")
	}
	if with, _ := json.Marshal(c.Rounds[1]); string(with) != string(without) {
		t.Fatalf("the window scatter is written to the file: %s, without it %s", with, without)
	}
	c.Rounds[0].B = "1"
	if d2, _ := c.Digest(); d2 == d1 {
		t.Fatal("the digest does not cover the rounds")
	}
}

// TestCalibrateCutShortKeepsItsRounds: a run stopped after its second of
// three rounds has checkpointed those two, summarized from their own
// rates as a two-round run would be, and ends with an error.
func TestCalibrateCutShortKeepsItsRounds(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var kept []Calibration
	_, err := Calibrate(ctx, RoundsOptions{Isolation: f.Iso, Arms: arms(f), Workload: smoke(t), Policy: testPolicy(), Rounds: 3, Lanes: "cpu",
		Checkpoint: func(c *Calibration) error {
			cp := *c
			cp.Rounds = append([]CalibrationRound{}, c.Rounds...)
			kept = append(kept, cp)
			cancel() // stop before the third round
			return nil
		}})
	if err == nil {
		t.Fatal("a run stopped after two of three rounds ended without an error")
	}
	if len(kept) != 1 || len(kept[0].Rounds) != 2 {
		t.Fatalf("checkpoints %+v, want one of two rounds", kept)
	}
	var rates [][3]float64
	for _, r := range kept[0].Rounds {
		var x [3]float64
		for i, v := range []string{r.B, r.C, r.BPrime} {
			if x[i], err = strconv.ParseFloat(v, 64); err != nil {
				t.Fatal(err)
			}
		}
		rates = append(rates, x)
	}
	noise, _, _, _ := summarize(rates)
	got, _ := strconv.ParseFloat(kept[0].NoiseFloor, 64)
	if math.Abs(got-noise) > 1e-9*noise {
		t.Fatalf("the checkpoint's noise floor %s, its rounds' %g", kept[0].NoiseFloor, noise)
	}
}

// TestReadNoise: the median window scatter of every read against the
// median spread of the stock pair, over the rounds that carry scatters.
func TestReadNoise(t *testing.T) {
	round := func(b, bp string, scatter ...float64) CalibrationRound {
		r := CalibrationRound{B: b, C: "100", BPrime: bp}
		copy(r.Scatter[:], scatter)
		return r
	}
	cases := []struct {
		name            string
		rounds          []CalibrationRound
		within, between float64
		ok              bool
	}{
		{"between processes", []CalibrationRound{round("100", "100.4", 0.0005, 0.0004, 0.0006), round("100", "99.8", 0.0005, 0.0005, 0.0005)},
			0.0005, (0.4/100.2 + 0.2/99.9) / 2, true},
		{"within a read", []CalibrationRound{round("100", "100", 0.01, 0.02, 0.03)}, 0.02, 0, true},
		{"a file's rounds carry none", []CalibrationRound{round("100", "101")}, 0, 0, false},
		{"no rounds", nil, 0, 0, false},
		{"unreadable rates are skipped", []CalibrationRound{round("x", "100", 0.1, 0.1, 0.1), round("100", "100", 0.001, 0.001, 0.001)}, 0.001, 0, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			within, between, ok := ReadNoise(c.rounds)
			if ok != c.ok || math.Abs(within-c.within) > 1e-12 || math.Abs(between-c.between) > 1e-12 {
				t.Fatalf("ReadNoise = %g, %g, %v; want %g, %g, %v", within, between, ok, c.within, c.between, c.ok)
			}
		})
	}
}

// TestCalibrationPolicy: a supported calibration turns the base policy
// into one with its thresholds and bound to its digest; unsupported lanes
// give no policy.
func TestCalibrationPolicy(t *testing.T) {
	base := DefaultPolicy()
	cal := func(rates [][3]float64) *Calibration {
		c := &Calibration{Workload: "w", Lanes: "cpu", Rounds: []CalibrationRound{}}
		n, mn, mm, ok := summarize(rates)
		c.NoiseFloor, c.MaxNoise, c.MinMargin, c.Supported = speed.Format(n), speed.Format(mn), speed.Format(mm), ok
		return c
	}
	quiet := cal([][3]float64{{100, 101, 100.5}, {100, 99.5, 100}})
	p, err := quiet.Policy(base)
	if err != nil {
		t.Fatal(err)
	}
	d, _ := quiet.Digest()
	if p.CalibrationDigest != d || p.CalibrationContextDigest != d || p.CalibrationDigest == UncalibratedDigest() {
		t.Fatalf("policy bound to %s/%s, calibration %s", p.CalibrationDigest, p.CalibrationContextDigest, d)
	}
	if math.Abs(p.MinMargin-0.02) > 1e-12 || math.Abs(p.MaxNoise-1.5*0.5/100.25) > 1e-12 {
		t.Fatalf("thresholds min_margin %v max_noise %v", p.MinMargin, p.MaxNoise)
	}
	if p.MinWindows != base.MinWindows || p.MaxStageSeconds != base.MaxStageSeconds || p.NoiseMultiplier != base.NoiseMultiplier {
		t.Fatalf("the deployment's values changed: %+v", p)
	}
	// Lanes that drift past max_noise's cap still resolve a clear two-leg
	// decision: the policy's margin covers twice what the rounds saw.
	drifting := cal([][3]float64{{100, 100, 103}, {100, 110, 100}})
	p, err = drifting.Policy(base)
	if err != nil || drifting.Supported || p.MaxNoise != 0.02 || math.Abs(p.MinMargin-0.2) > 1e-12 {
		t.Fatalf("drifting lanes: policy %+v, %v (supported %v)", p, err, drifting.Supported)
	}
	// A stock disagreement of 50 % would need a margin of 1.
	if _, err := cal([][3]float64{{100, 150, 100}}).Policy(base); !errors.Is(err, ErrUnsupportedLanes) {
		t.Fatalf("noisy lanes gave a policy: %v", err)
	}
	// One engine's noise is not a qualification's: no policy, and the
	// digest tells the two schedules apart.
	one := cal([][3]float64{{100, 101, 100.5}, {100, 99.5, 100}})
	one.Schedule = ScheduleOneEngine
	if _, err := one.Policy(base); !errors.Is(err, ErrUnsupportedLanes) {
		t.Fatalf("a one-engine calibration gave a policy: %v", err)
	}
	if d1, _ := one.Digest(); d1 == d {
		t.Fatal("the digest does not cover the schedule")
	}
	// A version 9 policy takes a margin only from rounds of as many sets.
	v9 := base
	v9.Version, v9.Sets = speed.V9, 4
	if _, err := quiet.Policy(v9); !errors.Is(err, ErrUnsupportedLanes) || !strings.Contains(err.Error(), "read 1 set(s) each") {
		t.Fatalf("a one-set calibration gave a v9 policy: %v", err)
	}
	sets := cal([][3]float64{{100, 101, 100.5}, {100, 99.5, 100}})
	sets.Sets = 4
	if p, err := sets.Policy(v9); err != nil || p.Sets != 4 || p.Version != speed.V9 {
		t.Fatalf("a four-set calibration: %+v, %v", p, err)
	}
	if _, err := sets.Policy(base); !errors.Is(err, ErrUnsupportedLanes) {
		t.Fatalf("a four-set calibration gave a v8 policy: %v", err)
	}
	d1, _ := sets.Digest()
	if d1 == d {
		t.Fatal("the digest does not cover the sets")
	}
	// Which sets a round kept is part of the evidence: the round's speedup
	// is their mean alone.
	sets.Rounds = []CalibrationRound{{B: "100", C: "101", BPrime: "100", Speedup: "1.01", Decision: Pass,
		SetSpeedups: []string{"1.01", "1.01", "1.02", "1.01"}}}
	d1, _ = sets.Digest()
	sets.Rounds[0].SetsKept = []bool{true, true, false, true}
	if d2, _ := sets.Digest(); d2 == d1 {
		t.Fatal("the digest does not cover the kept sets")
	}
}

func TestSetMargin(t *testing.T) {
	p := testPolicy()
	p.Version, p.Sets, p.NoiseMultiplier = speed.V9, 4, 3
	cases := []struct {
		name     string
		speedups []float64
		want     float64
	}{
		// rms 0.0015811: three standard errors of a mean of four sets.
		{"quiet", []float64{1.002, 0.998, 1.001, 0.999}, 3 * math.Sqrt(2.5e-6) / 2},
		// A C that reads slow on the same tree is noise too: the rms is
		// about 1, not about the sets' own mean.
		{"biased", []float64{0.997, 0.997}, 3 * 0.003 / 2},
		{"floor", []float64{1.0001, 0.9999}, minSetMargin},
		{"ceiling", []float64{2, 0}, maxCalibratedMargin},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := setMargin(p, c.speedups); math.Abs(got-c.want) > 1e-12 {
				t.Fatalf("setMargin = %v, want %v", got, c.want)
			}
		})
	}
}

// TestCalibrateSetsOnTheCPU: rounds under a version 9 policy read its
// sets, record each set's speedup, and derive min_margin from them.
func TestCalibrateSetsOnTheCPU(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	p := testPolicy()
	p.Version, p.Sets = speed.V9, 2
	c, err := Calibrate(context.Background(), RoundsOptions{Isolation: f.Iso, Arms: arms(f), Workload: smoke(t), Policy: p, Rounds: 2, Lanes: "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	var speedups []float64
	for _, r := range c.Rounds {
		if len(r.SetSpeedups) != 2 || len(r.SetsKept) != 2 {
			t.Fatalf("round %+v: want two set speedups and two kept flags", r)
		}
		// The round's speedup is the mean of the sets it kept (of every
		// set when it kept none), as the grade took it.
		var kept, all []float64
		for k, x := range r.SetSpeedups {
			f, _ := strconv.ParseFloat(x, 64)
			speedups, all = append(speedups, f), append(all, f)
			if r.SetsKept[k] {
				kept = append(kept, f)
			}
		}
		if len(kept) == 0 {
			kept = all
		}
		want := 0.0
		for _, x := range kept {
			want += x / float64(len(kept))
		}
		if got, _ := strconv.ParseFloat(r.Speedup, 64); math.Abs(got-want) > 1e-12 {
			t.Fatalf("round speedup %s; the mean of its kept sets %v is %v", r.Speedup, kept, want)
		}
	}
	if c.Sets != 2 || c.MinMargin != speed.Format(setMargin(p, speedups)) {
		t.Fatalf("calibration of %d sets, min_margin %s; want 2 sets and %s", c.Sets, c.MinMargin, speed.Format(setMargin(p, speedups)))
	}
	if _, err := Calibrate(context.Background(), RoundsOptions{Isolation: f.Iso, Arms: arms(f), Workload: smoke(t), Policy: p, Rounds: 2, Lanes: "cpu", OneEngine: true}); err == nil || !strings.Contains(err.Error(), "one-engine schedule reads one set") {
		t.Fatalf("v9 rounds in one engine: %v", err)
	}
}

// TestOneEngineRoundsOnTheCPU: rounds read in one resident engine are
// graded and recorded as such.
func TestOneEngineRoundsOnTheCPU(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	c, err := Calibrate(context.Background(), RoundsOptions{Isolation: f.Iso, Arms: arms(f), Workload: smoke(t), Policy: testPolicy(),
		Rounds: 2, Lanes: "cpu", OneEngine: true})
	if err != nil {
		t.Fatal(err)
	}
	if c.Schedule != ScheduleOneEngine || len(c.Rounds) != 2 || c.Rounds[1].Decision == "" || c.NoiseFloor == "" {
		t.Fatalf("calibration %+v", c)
	}
}

// TestAround: per read, the lowest SM clock and highest power sampled
// around it and its neighbours' CPU; of a set read again, the second's.
func TestAround(t *testing.T) {
	smp := func(mhz int, w float64) lanes.Sample { return lanes.Sample{SMClockMHz: mhz, PowerW: w} }
	idle := func(window string, cpu float64) IdleCPU { return IdleCPU{Window: window, CPUSeconds: cpu} }
	cases := []struct {
		name string
		ev   *SpeedEvidence
		want [3]AroundRead
	}{
		{"three processes", &SpeedEvidence{
			Samples: []ReadSamples{
				{Role: speed.B, Before: []lanes.Sample{smp(1980, 120)}, After: []lanes.Sample{smp(1755, 690)}},
				{Role: speed.C, Before: []lanes.Sample{smp(1980, 130)}, After: []lanes.Sample{smp(1980, 650)}},
				{Role: speed.BPrime, Before: []lanes.Sample{smp(1980, 125)}, After: []lanes.Sample{smp(1965, 640)}},
			},
			Idle: []IdleCPU{idle("B", 0.5), idle("B", 0.25), idle("C", 0.01), idle("C", 0.02), idle("B_prime", 0), idle("B_prime", 0.1)},
		}, [3]AroundRead{{1755, 690, 0.75}, {1980, 650, 0.03}, {1965, 640, 0.1}}},
		{"a set read again", &SpeedEvidence{
			Idle:     []IdleCPU{idle("B", 9), idle("B", 9), idle("C", 9), idle("C", 9), idle("B_prime", 9), idle("B_prime", 9), idle("B", 1), idle("B", 2), idle("C", 0), idle("C", 0), idle("B_prime", 0), idle("B_prime", 0.5)},
			SetAside: &SetAside{},
		}, [3]AroundRead{{0, 0, 3}, {0, 0, 0}, {0, 0, 0.5}}},
		{"the CPU lane and one engine", &SpeedEvidence{}, [3]AroundRead{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := around(c.ev)
			for k := range got {
				if got[k].SMClockMHz != c.want[k].SMClockMHz || got[k].PowerW != c.want[k].PowerW || math.Abs(got[k].NeighbourCPU-c.want[k].NeighbourCPU) > 1e-12 {
					t.Fatalf("around = %+v, want %+v", got, c.want)
				}
			}
		})
	}
}
