package qualify

import (
	"context"
	"strings"
	"testing"

	"github.com/cacheon/engine/evaluator/engine"
)

func TestIdleOutcome(t *testing.T) {
	for _, c := range []struct {
		name    string
		records []IdleCPU
		want    Decision // "" when no engine is over its bound
		reason  string
	}{
		{"quiet", []IdleCPU{{Window: "B", Engine: "C", Candidate: true, WallSeconds: 1, CPUSeconds: 0.1}}, "", ""},
		// The bound is 0.05 + 0.05 × 2 = 0.15 CPU-seconds.
		{"at the bound", []IdleCPU{{Window: "B", Engine: "C", Candidate: true, WallSeconds: 2, CPUSeconds: 0.15}}, "", ""},
		{"the candidate over it", []IdleCPU{{Window: "B", Engine: "B_prime", WallSeconds: 2}, {Window: "B", Engine: "C", Candidate: true, WallSeconds: 2, CPUSeconds: 0.16}},
			Fail, "noisy_neighbour: the candidate's C engine consumed 0.160 CPU-seconds while idle, during the B read (2.000 s; bound 0.150 s)"},
		{"a stock engine over it", []IdleCPU{{Window: "C", Engine: "B", WallSeconds: 1, CPUSeconds: 1}},
			NoDecision, "noisy_neighbour: a stock B engine consumed 1.000 CPU-seconds while idle, during the C read (1.000 s; bound 0.100 s) (infrastructure)"},
		{"the candidate lane through the stock control", []IdleCPU{{Window: "control", Engine: "candidate-lane", Candidate: true, WallSeconds: 0.5, CPUSeconds: 0.6}},
			Fail, "during the stock control"},
		// The first over its bound decides, in read order.
		{"the first decides", []IdleCPU{{Window: "B", Engine: "B_prime", WallSeconds: 1, CPUSeconds: 1}, {Window: "B", Engine: "C", Candidate: true, WallSeconds: 1, CPUSeconds: 1}},
			NoDecision, "a stock B_prime engine"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, over := idleOutcome(c.records)
			if over != (c.want != "") || over && (out.Decision != c.want || !strings.Contains(out.Reason, c.reason)) {
				t.Fatalf("%v %+v, want %q with %q", over, out, c.want, c.reason)
			}
		})
	}
}

// TestIdleAccountingOfAGoneEngine: a waiting engine whose process is gone
// cannot be accounted for; that is its own engine's fault, a FAIL when it
// had run the candidate's code and NO_DECISION when it is stock.
func TestIdleAccountingOfAGoneEngine(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	e, err := engine.Start(context.Background(), f.Iso, arms(f)[1].Spec)
	if err != nil {
		t.Fatal(err)
	}
	if s, err := e.CPUSeconds(); err != nil || s <= 0 {
		t.Fatalf("a started engine's tree: %g CPU-seconds, %v", s, err)
	}
	e.Kill()
	_, _ = e.Close()
	for _, candidate := range []bool{true, false} {
		served := false
		records, out, ok := watchIdle("B", []idleEngine{{name: "C", candidate: candidate, e: e}}, func() { served = true })
		want := map[bool]Decision{true: Fail, false: NoDecision}[candidate]
		if ok || !served || len(records) != 0 || out.Decision != want || !strings.Contains(out.Reason, "engine exited") || !strings.Contains(out.Reason, "before the B read") {
			t.Fatalf("candidate %v: ok %v served %v records %v outcome %+v, want %s for an exited engine", candidate, ok, served, records, out, want)
		}
	}
}
