package worker

import (
	"strings"
	"testing"
	"time"
)

// TestJudgeStall: who is to blame for a serving thread that made no
// progress over a window: the session (its own threads took the CPU or
// the interpreter's lock, or nothing runs at all) or the host (it waited
// for a CPU its own threads did not take).
func TestJudgeStall(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	w := 10 * time.Second
	cases := []struct {
		name                  string
		serving, wait, others time.Duration
		throttled             bool
		stalled, starved      bool
		says                  string
	}{
		{"a serving thread that works", 2 * time.Second, 0, 8 * time.Second, false, false, false, ""},
		{"a serving thread spinning on the device", 9 * time.Second, 500 * ms, 0, false, false, false, ""},
		{"just above the progress line", 500 * ms, 9 * time.Second, 9 * time.Second, true, false, false, ""},
		{"asleep, nothing else runs", 0, 10 * ms, 100 * ms, false, true, false, "nothing in it runs"},
		{"its own threads hold the lock", 80 * ms, 200 * ms, 9 * time.Second, false, true, false, "its own threads starve"},
		{"its own threads take a loaded host's CPU", 90 * ms, 5 * time.Second, 2 * time.Second, false, true, false, "its own threads starve"},
		{"its quota used up while it waits for a CPU", 10 * ms, 6 * time.Second, 300 * ms, true, true, false, "its own threads starve"},
		{"the host gives it no CPU", 100 * ms, 9 * time.Second, 50 * ms, false, false, true, "the host gave"},
		{"the host starves it and its pool alike", 200 * ms, 8 * time.Second, 600 * ms, false, false, true, "the host gave"},
		{"neither asleep nor starved: wait on", 100 * ms, 1 * time.Second, 700 * ms, false, false, false, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			j := judgeStall(w, c.serving, c.wait, c.others, c.throttled)
			if j.stalled != c.stalled || j.starved != c.starved {
				t.Fatalf("judgeStall = %+v, want stalled %v starved %v", j, c.stalled, c.starved)
			}
			if !strings.Contains(j.why, c.says) {
				t.Errorf("%q does not say %q", j.why, c.says)
			}
		})
	}
}
