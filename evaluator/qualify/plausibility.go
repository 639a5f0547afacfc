package qualify

import (
	"fmt"
	"strconv"

	"github.com/cacheon/engine/evaluator/roofline"
	"github.com/cacheon/engine/evaluator/speed"
)

// Roofline is the plausibility floor the speed stage held every timed
// window to, as the report records it: the sealed model's weight bytes,
// the candidate lane's peak memory bandwidth and where it comes from, and
// the decode steps of one window (max_new_tokens − 1). Applied is false
// where no ceiling is known (the CPU lane, an unlisted GPU): nothing was
// refused, and the report says so.
type Roofline struct {
	WeightBytes int64 `json:"weight_bytes"`
	// PeakBandwidth is in bytes per second, a decimal ("0": none known).
	PeakBandwidth string `json:"peak_bytes_per_second"`
	Source        string `json:"source"`
	DecodeSteps   int    `json:"decode_steps"`
	// FloorSeconds is the least time a window can take, 17 significant
	// digits ("0" when the floor is not applied).
	FloorSeconds string `json:"floor_seconds"`
	Applied      bool   `json:"applied"`
}

// newRoofline is the floor of bound b for windows of steps decode steps.
func newRoofline(b roofline.Bound, steps int) *Roofline {
	return &Roofline{WeightBytes: b.WeightBytes, PeakBandwidth: speed.Format(b.PeakBytesPerSecond), Source: b.Source,
		DecodeSteps: steps, FloorSeconds: speed.Format(b.FloorSeconds(steps)), Applied: b.Applied() && steps > 0}
}

// floor re-derives the record from its bound, refusing a record whose
// floor or applied flag is not what the bound gives.
func (rf *Roofline) floor() (float64, error) {
	peak, err := strconv.ParseFloat(rf.PeakBandwidth, 64)
	if err != nil {
		return 0, fmt.Errorf("roofline peak_bytes_per_second %q: %w", rf.PeakBandwidth, err)
	}
	again := newRoofline(roofline.Bound{WeightBytes: rf.WeightBytes, PeakBytesPerSecond: peak, Source: rf.Source}, rf.DecodeSteps)
	if *again != *rf {
		return 0, fmt.Errorf("the roofline floor %s s (applied %v) is not what its bound gives for %d decode steps (%s s, applied %v)",
			rf.FloorSeconds, rf.Applied, rf.DecodeSteps, again.FloorSeconds, again.Applied)
	}
	return strconv.ParseFloat(rf.FloorSeconds, 64)
}

// qualificationRoofline is the floor of o's lanes and model.
func qualificationRoofline(o Options) (*Roofline, error) {
	weights, err := roofline.WeightBytes(o.Model)
	if err != nil {
		return nil, fmt.Errorf("roofline floor: %w", err)
	}
	source := o.LanePeakSource
	if o.LanePeak <= 0 && source == "" {
		source = fmt.Sprintf("the %s lane: no peak memory bandwidth known; the roofline floor is not applied", o.Lanes[1].Device)
	}
	return newRoofline(roofline.Bound{WeightBytes: weights, PeakBytesPerSecond: o.LanePeak, Source: source}, o.Workload.MaxNewTokens-1), nil
}

// plausible holds every timed window of every read to the floor. A
// candidate window faster than the hardware allows is a FAIL (its time was
// not honestly measured: work hidden from the clock, a cache of answers);
// a stock window that fast means the measurement itself cannot be
// trusted, which is NO_DECISION. ok is true when every window is
// plausible and out is then the zero Outcome.
func plausible(reads []speed.Read, rf *Roofline) (out Outcome, ok bool) {
	if rf == nil || !rf.Applied {
		return Outcome{}, true
	}
	floor, err := rf.floor()
	if err != nil {
		return Outcome{NoDecision, err.Error()}, false
	}
	stock := Outcome{}
	for _, r := range reads {
		for i, w := range r.Windows {
			if w.Seconds >= floor {
				continue
			}
			why := fmt.Sprintf("%s window %d took %s s for %d decode steps, under the roofline floor of %s s (%d weight bytes beyond the cache allowance at %s B/s)",
				r.Role, i, speed.Format(w.Seconds), rf.DecodeSteps, rf.FloorSeconds, rf.WeightBytes-roofline.CacheAllowance, rf.PeakBandwidth)
			if r.Role == speed.C {
				return Outcome{Fail, "implausible_speed: " + why}, false
			}
			if stock.Decision == "" {
				stock = Outcome{NoDecision, "implausible stock speed, the measurement cannot be trusted: " + why}
			}
		}
	}
	return stock, stock.Decision == ""
}

// plausibleSets holds every read the speed stage took to the floor, those
// of a set-aside read set included: a C implausibly fast in a set the
// lanes spoiled is still a kernel that faked its timing.
func plausibleSets(setAside, reads []speed.Read, rf *Roofline) (Outcome, bool) {
	return plausible(append(append([]speed.Read(nil), setAside...), reads...), rf)
}
