package qualify

import (
	"context"
	"fmt"

	"github.com/cacheon/engine/evaluator/engine"
	"github.com/cacheon/engine/evaluator/speed"
	"github.com/cacheon/engine/evaluator/workload"
)

// Batch is one served batch of a read, as the evidence keeps it.
type Batch struct {
	Index int    `json:"index"`
	Phase string `json:"phase"` // "warmup", "conditioning", "timed", or "control" (v7's untimed stock control)
	// Tokens is what the decode phase generated (max_new_tokens − 1 per
	// prompt), the window's tokens.
	Tokens int `json:"tokens"`
	// Seconds is the controller's time for the decode phase, the one
	// graded; EngineSeconds the engine's own, kept as the tamper check saw
	// it. The prefill's two times are kept and never graded: its eager
	// speed is a property of the process (engine.Window says why).
	Seconds              float64 `json:"seconds"`
	EngineSeconds        float64 `json:"engine_seconds"`
	PrefillSeconds       float64 `json:"prefill_seconds"`
	PrefillEngineSeconds float64 `json:"prefill_engine_seconds"`
	// Output is every prompt's generated tokens: the trajectories the
	// pristine reference later scores.
	Output [][]int `json:"output"`
	// LeftRunning names the engine's threads that ran while it waited for
	// this batch's request (engine.LeftRunning); absent when none did.
	LeftRunning []engine.LeftRunning `json:"left_running,omitempty"`
}

// warm runs a workload's warmup batches that come before its conditioning
// (the untimed part an engine may do while others are timed).
func warm(ctx context.Context, e *engine.Engine, w *workload.Workload) ([]Batch, error) {
	first, _ := w.ConditioningBatches()
	return serve(ctx, e, w, 0, first, "warmup")
}

// timedRead runs the conditioning batches and then every timed batch, one
// after another, and returns the read with the batches it came from.
func timedRead(ctx context.Context, e *engine.Engine, w *workload.Workload, role speed.Role) (speed.Read, []Batch, error) {
	first, end := w.ConditioningBatches()
	cond, err := serve(ctx, e, w, first, end, "conditioning")
	if err != nil {
		return speed.Read{}, nil, err
	}
	timed, err := serve(ctx, e, w, end, len(w.PromptBatches), "timed")
	if err != nil {
		return speed.Read{}, nil, err
	}
	r := speed.Read{Role: role}
	for _, b := range cond {
		r.ConditioningTokens += int64(b.Tokens)
		r.ConditioningSeconds += b.Seconds
	}
	for _, b := range timed {
		r.Windows = append(r.Windows, speed.Window{Tokens: int64(b.Tokens), Seconds: b.Seconds})
	}
	return r, append(cond, timed...), nil
}

func serve(ctx context.Context, e *engine.Engine, w *workload.Workload, from, to int, phase string) ([]Batch, error) {
	var out []Batch
	for i := from; i < to; i++ {
		win, err := e.Batch(ctx, w.PromptBatches[i], w.MaxNewTokens)
		if err != nil {
			return out, fmt.Errorf("%s batch %d: %w", phase, i, err)
		}
		out = append(out, Batch{Index: i, Phase: phase, Tokens: w.DecodeTokens(i), Seconds: win.HostSeconds, EngineSeconds: win.EngineSeconds,
			PrefillSeconds: win.PrefillHostSeconds, PrefillEngineSeconds: win.PrefillEngineSeconds, Output: win.Tokens,
			LeftRunning: win.LeftRunning})
	}
	return out, nil
}
