package qualify

import (
	"context"
	"time"
)

// besideRun is an untimed stage that runs in a goroutine beside the
// screens, so that a qualification does not wait for its engine's start
// (the model's load, the graphs' capture) on top of theirs. Its outcome is
// recorded later, in the stage order a reader expects, with its own start
// and length (Run's take).
//
// A stage run beside others shares the GPU with them, and no control
// group bounds device memory: a kernel could crowd the device so that
// another stage, or its own, cannot start. So a NO_DECISION read beside
// others is never taken: the stage runs again alone.
type besideRun struct {
	name   string
	cancel context.CancelFunc
	done   chan struct{}
	// out, start and end are the run's, set before done is closed.
	out        Outcome
	start, end time.Time
	// abandoned: the run was ended before its outcome was taken; the
	// stage must run again alone to have one.
	abandoned bool
}

// startBeside starts run under a context of its own, derived from ctx.
func startBeside(ctx context.Context, name string, run func(context.Context) Outcome) *besideRun {
	c, cancel := context.WithCancel(ctx)
	b := &besideRun{name: name, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(b.done)
		b.start = time.Now()
		b.out = run(c)
		b.end = time.Now()
	}()
	return b
}

// abandon ends the run, if it is still going, and waits for it (its
// engine closed and reaped); its outcome is not taken.
func (b *besideRun) abandon() {
	select {
	case <-b.done:
		// It ended by itself: its outcome stands (take runs a NO_DECISION
		// again alone).
		return
	default:
	}
	b.cancel()
	<-b.done
	b.abandoned = true
}

// wait waits for the run to end by itself.
func (b *besideRun) wait() {
	<-b.done
	b.cancel()
}
