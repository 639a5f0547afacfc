package qualify

import (
	"context"
	"testing"
	"time"
)

// TestBesideRun: a stage run beside others keeps the outcome it reached
// by itself, even when it is abandoned afterwards; one abandoned while it
// runs is cancelled, waited for, and marked so that it runs again alone.
func TestBesideRun(t *testing.T) {
	cases := []struct {
		name          string
		endsByItself  bool
		wantAbandoned bool
		want          Decision
	}{
		{"ended by itself, then abandoned", true, false, Pass},
		{"abandoned while it runs", false, true, NoDecision},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			release := make(chan struct{})
			b := startBeside(context.Background(), "stage", func(ctx context.Context) Outcome {
				select {
				case <-release:
					return Outcome{Pass, "served"}
				case <-ctx.Done():
					return Outcome{NoDecision, "interrupted"}
				}
			})
			if c.endsByItself {
				close(release)
				b.wait()
			}
			b.abandon()
			if b.abandoned != c.wantAbandoned || b.out.Decision != c.want {
				t.Fatalf("abandoned %v, outcome %+v; want %v and %s", b.abandoned, b.out, c.wantAbandoned, c.want)
			}
			if b.end.Before(b.start) || b.start.IsZero() {
				t.Fatalf("start %v, end %v", b.start, b.end)
			}
			// abandon and wait may be called again: they return at once.
			done := make(chan struct{})
			go func() { b.abandon(); b.wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("a second abandon or wait blocked")
			}
		})
	}
}
