package qualify

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/cacheon/engine/evaluator/lanes"
	"github.com/cacheon/engine/evaluator/speed"
)

// Sampler reads every GPU's clocks, power, temperature and throttle
// reasons once (lanes.Runner.Read). Nil on the CPU lane.
type Sampler func(ctx context.Context) ([]lanes.Sample, error)

// ReadSamples are the lane samples taken just before and just after one
// timed read: the evidence that the machine did not drift under it.
type ReadSamples struct {
	Role   speed.Role     `json:"role"`
	Before []lanes.Sample `json:"before"`
	After  []lanes.Sample `json:"after"`
}

// Throttle reasons that mean the device slowed itself down (the driver's
// clocks-event bit mask): hardware slowdown 0x8, software thermal 0x20,
// hardware thermal 0x40, power brake 0x80. A read under any of them was
// not measured at the machine's normal clocks, so it decides nothing. The
// software power cap (0x4) is a GPU at its power limit, the normal state of
// a busy H200, and idle (0x1) is the state between reads: neither is drift.
const driftReasons = 0x8 | 0x20 | 0x40 | 0x80

// Drift is the first sample that shows a device slowing itself down, as
// the NO_DECISION reason; "" when there is none. Regrade recomputes it.
func Drift(samples []ReadSamples) string {
	for _, rs := range samples {
		for _, set := range [][]lanes.Sample{rs.Before, rs.After} {
			for _, s := range set {
				mask, err := strconv.ParseUint(strings.TrimPrefix(strings.ToLower(s.ThrottleActive), "0x"), 16, 64)
				if err != nil {
					return fmt.Sprintf("lane drift: device %s around read %s reports throttle reasons %q, which are not a bit mask", s.UUID, rs.Role, s.ThrottleActive)
				}
				if mask&driftReasons != 0 {
					return fmt.Sprintf("lane drift: device %s slowed itself down around read %s (throttle reasons %s)", s.UUID, rs.Role, s.ThrottleActive)
				}
			}
		}
	}
	return ""
}

// sampleAround runs read between two samples. A sampler that fails is a
// lane that cannot be observed (a device gone, a driver fault): the
// caller's NO_DECISION.
func sampleAround(ctx context.Context, sample Sampler, role speed.Role, read func() error) (*ReadSamples, error) {
	if sample == nil {
		return nil, read()
	}
	rs := &ReadSamples{Role: role}
	var err error
	if rs.Before, err = sample(ctx); err != nil {
		return nil, fmt.Errorf("lane samples before read %s: %w", role, err)
	}
	if err := read(); err != nil {
		return rs, err
	}
	if rs.After, err = sample(ctx); err != nil {
		return rs, fmt.Errorf("lane samples after read %s: %w", role, err)
	}
	return rs, nil
}
