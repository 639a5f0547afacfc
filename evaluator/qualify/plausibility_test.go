package qualify

import (
	"strings"
	"testing"

	"github.com/cacheon/engine/evaluator/roofline"
	"github.com/cacheon/engine/evaluator/speed"
)

// TestPlausibleHoldsEveryWindowToTheRoofline: on an H200 with the 8-layer
// model (852 MB of weights read per decode step), 63 decode steps cannot
// take less than about 10 ms. A candidate window under that is a FAIL, a
// stock one a NO_DECISION; where no ceiling is known nothing is refused.
func TestPlausibleHoldsEveryWindowToTheRoofline(t *testing.T) {
	h200 := roofline.Bound{WeightBytes: 852_000_000, PeakBytesPerSecond: 4.8e12, Source: "NVIDIA H200"}
	rf := newRoofline(h200, 63)
	if !rf.Applied || rf.FloorSeconds != speed.Format(h200.FloorSeconds(63)) {
		t.Fatalf("roofline %+v", rf)
	}
	reads := func(b, c, bp float64) []speed.Read {
		w := func(s float64) []speed.Window {
			return []speed.Window{{Tokens: 504, Seconds: 0.2}, {Tokens: 504, Seconds: s}}
		}
		return []speed.Read{{Role: speed.B, Windows: w(b)}, {Role: speed.C, Windows: w(c)}, {Role: speed.BPrime, Windows: w(bp)}}
	}
	tampered := *rf
	tampered.FloorSeconds = "0.0001"
	for _, c := range []struct {
		name  string
		reads []speed.Read
		rf    *Roofline
		want  Decision // "" when plausible
		why   string
	}{
		{"honest windows", reads(0.2, 0.15, 0.2), rf, "", ""},
		{"a candidate faster than the hardware", reads(0.2, 0.004, 0.2), rf, Fail, "implausible_speed: C window 1 took 0.0040000000000000001 s"},
		{"a stock arm faster than the hardware", reads(0.2, 0.15, 0.001), rf, NoDecision, "implausible stock speed, the measurement cannot be trusted: B_prime window 1"},
		{"no ceiling known", reads(0.2, 0.004, 0.2), newRoofline(roofline.Bound{WeightBytes: 852_000_000, Source: "cpu"}, 63), "", ""},
		{"a model inside the cache", reads(0.2, 0.004, 0.2), newRoofline(roofline.Bound{WeightBytes: 1 << 20, PeakBytesPerSecond: 4.8e12}, 63), "", ""},
		{"no record", reads(0.2, 0.004, 0.2), nil, "", ""},
		{"a record whose floor is not its bound's", reads(0.2, 0.15, 0.2), &tampered, NoDecision, "not what its bound gives"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, ok := plausible(c.reads, c.rf)
			if ok != (c.want == "") || out.Decision != c.want || !strings.Contains(out.Reason, c.why) {
				t.Fatalf("plausible = %+v, %v; want %q with %q", out, ok, c.want, c.why)
			}
		})
	}
}
