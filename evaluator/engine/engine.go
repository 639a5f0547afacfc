// Package engine runs one arm of a qualification: a substrate engine
// process serving prompt batches, contained as every worker is, that the
// controller talks to over the engine-session pipes and never imports.
//
// Every batch is timed twice: by the controller around the request (the
// window's time: a verdict comes only from the controller's own clock)
// and by the engine (device-synchronized). The engine's time cannot make
// an arm look faster; it is a tamper check: a frame whose time disagrees
// with the controller's beyond the timer tolerance is refused as forged,
// so a kernel that patches the engine's clock, or writes frames of its
// own, is caught doing it.
// Every way an engine can misbehave is a *Fault naming what happened, for
// the qualification to turn into FAIL (the candidate's engine) or
// NO_DECISION (the incumbent's).
package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/cacheon/engine/evaluator/worker"
	ksubstrate "github.com/cacheon/engine/kernels/substrate"
)

// Protocol is the engine-session protocol this controller speaks.
const Protocol = "cacheon-engine-session-v3"

// Spec is one engine to start.
type Spec struct {
	Python string // absolute interpreter path
	Root   string // from worker.EngineRoot
	Tree   string // the materialized engine tree (read-only)
	Model  string // the sealed model directory (read-only)
	// Native is the sealed prebuild artifact directory (evaluator/prebuild,
	// reopened and verified by the caller) the tree's cuda_sources rows
	// load their libraries from, bound read-only; "" = none, and the
	// engine refuses such rows. Engines never compile.
	Native string
	Device string // "cpu" or "cuda"
	Graph  bool   // replay CUDA graphs for decode
	// SwapTrees are the other trees a resident engine may swap to (bound
	// read-only like Tree); a swap to any other path is refused by the
	// engine itself.
	SwapTrees []string
	WorkDir   string
	Env       []string
	// Preamble is a line sent on the request pipe before anything else,
	// which the session reads before it imports the engine tree: how the
	// audit's sample secret reaches the recorder without being in the
	// environment the candidate's code can read. nil sends none.
	Preamble []byte
	// StartTimeout bounds loading (to the ready frame), BatchTimeout each
	// batch; zero takes the defaults.
	StartTimeout, BatchTimeout time.Duration
	// StallWindow ends an engine whose serving thread makes no progress
	// for that long while a batch's frame is due (worker.ErrStalled), well
	// before BatchTimeout; 0 takes the default, negative watches nothing.
	StallWindow time.Duration
	Tolerance   Tolerance
}

// Defaults.
const (
	DefaultStartTimeout = 10 * time.Minute
	DefaultBatchTimeout = 5 * time.Minute
	// DefaultStallWindow is ten seconds: an honest engine's serving thread
	// runs (or spins on the device) all through a batch, and the longest
	// honest pause seen, a Triton kernel's first compilation, takes about
	// a second on an H200.
	DefaultStallWindow = 10 * time.Second
)

// Tolerance is how far an engine's own time for a batch may fall short of
// the controller's: the controller's span also holds the request's and
// the frame's trip through the pipes, their JSON coding and any wait for
// a CPU on a loaded host, so the engine time is shorter by up to Absolute
// plus Relative of the span. An engine time longer than the span is
// impossible and always refused. The tolerance is wide on purpose: the
// score never uses the engine's time, so a forger inside it gains
// nothing, and a loaded host must not make an honest engine look forged.
type Tolerance struct {
	Absolute time.Duration
	Relative float64
}

// DefaultTolerance is the sealed timer tolerance: 2 s plus 25 % of the
// span. Two seconds because a loaded 2-core host was seen to wake the
// controller 170 ms after a 17 ms prefill (and a CI host over a second
// late); the engine's time is never scored, so a wide tolerance costs
// nothing but the size of the forgery it can still see.
var DefaultTolerance = Tolerance{Absolute: 2 * time.Second, Relative: 0.25}

// Ready is the engine's first frame.
type Ready struct {
	Protocol  string            `json:"protocol"`
	Substrate string            `json:"substrate"`
	Device    string            `json:"device"`
	Slots     map[string]string `json:"slots"`
}

// Window is one served batch, timed in its two phases: the prefill
// (eager work, and a first batch's graph capture) and the decode (the
// graph-replayed steps). Only the decode is a window's time: measured on
// an H200, whole generations of identical engines differ by up to 30 %
// from process to process while their graph-replayed decode agrees within
// 0.2 % (docs/results/engine-sessions-h200.md), so the prefill is kept as
// evidence and never scored.
type Window struct {
	Tokens [][]int // per prompt, max_new_tokens each
	// HostSeconds is the controller's time around the decode phase: the
	// window's time. EngineSeconds is the engine's own: a tamper check only.
	HostSeconds   float64
	EngineSeconds float64
	// The same two times of the prefill phase.
	PrefillHostSeconds   float64
	PrefillEngineSeconds float64
	// LeftRunning are the engine's threads that ran between its previous
	// frame and this batch's request, while it had nothing to do
	// (threads.go).
	LeftRunning []LeftRunning
	// Calls is the engine's own count of the slot calls its decode steps
	// made, by slot and then by the row that served them ("stock" for the
	// stock kernel); with CUDA graphs, the captured step's calls times the
	// replays. The engine's word, not a measurement: it can only tell the
	// controller that a candidate's rows did not run (Dispatch).
	Calls map[string]map[string]int
}

// Fault kinds.
const (
	FaultStart    = "start"         // the process could not be started or never got ready
	FaultTimeout  = "timeout"       // no frame within the time limit
	FaultExited   = "exited"        // the process ended while a frame was due
	FaultGarbage  = "garbage"       // a frame that is not the protocol's
	FaultRefused  = "refused_batch" // the engine answered a batch with an error
	FaultTokens   = "wrong_tokens"  // a frame with the wrong number of tokens
	FaultTiming   = "forged_timing" // engine time outside the controller's bracket
	FaultProtocol = "protocol"      // a ready frame of another protocol or substrate
	// FaultStalled is an engine that stopped making progress while a frame
	// was due: idle and silent, or its serving thread starved by its own
	// threads (worker.ErrStalled). An engine the host starved is no fault
	// of its own: that error is not a *Fault (NO_DECISION).
	FaultStalled = "stalled"
)

// Fault is an engine that did not do what the protocol says.
type Fault struct {
	Kind   string
	Detail string
}

func (f *Fault) Error() string { return fmt.Sprintf("engine %s: %s", f.Kind, f.Detail) }

// Engine is a started, ready engine.
type Engine struct {
	spec    Spec
	session *worker.Session
	frames  *worker.Frames
	Ready   Ready
	next    int
	idle    idleThreads // what ran since the last frame (threads.go)
}

// Start starts the engine and waits for its ready frame.
func Start(ctx context.Context, iso worker.Isolation, s Spec) (*Engine, error) {
	if s.StartTimeout == 0 {
		s.StartTimeout = DefaultStartTimeout
	}
	if s.BatchTimeout == 0 {
		s.BatchTimeout = DefaultBatchTimeout
	}
	if s.StallWindow == 0 {
		s.StallWindow = DefaultStallWindow
	}
	if s.Tolerance == (Tolerance{}) {
		s.Tolerance = DefaultTolerance
	}
	args := []string{"--engine-tree", s.Tree, "--model", s.Model, "--device", s.Device}
	if s.Graph {
		args = append(args, "--graph")
	}
	readOnly := []string{s.Tree, s.Model}
	for _, t := range s.SwapTrees {
		args = append(args, "--swap-tree", t)
		if t != s.Tree {
			readOnly = append(readOnly, t)
		}
	}
	if s.Native != "" {
		args = append(args, "--native-artifact", s.Native)
		readOnly = append(readOnly, s.Native)
	}
	sess, err := worker.StartSession(ctx, iso, worker.SessionSpec{
		Python: s.Python, Root: s.Root, Module: ksubstrate.Package + ".session", Args: args,
		WorkDir: s.WorkDir, Env: s.Env, ReadOnly: readOnly,
	})
	if err != nil {
		return nil, err
	}
	e := &Engine{spec: s, session: sess, frames: worker.ReadFrames(sess)}
	// An engine that does not get ready is stopped and reaped here: the
	// caller never holds it.
	fail := func(err error) (*Engine, error) {
		e.Kill()
		_, _ = e.session.Close(time.Second)
		return nil, err
	}
	if s.Preamble != nil {
		if err := sess.Send(s.Preamble); err != nil {
			return fail(&Fault{Kind: FaultStart, Detail: err.Error()})
		}
	}
	line, err := e.await(ctx, s.StartTimeout, 0, "the ready frame")
	if err != nil {
		var f *Fault
		if !errors.As(err, &f) || f.Kind == FaultStart {
			return fail(err)
		}
		exited := f.Kind == FaultExited
		f.Kind, f.Detail = FaultStart, f.Kind+": "+f.Detail
		_, err = fail(err)
		// An engine that ended while loading said why on stderr (a seam
		// refusal, say): the last line, now that the log is complete.
		if last := worker.Tail(s.WorkDir, worker.StderrFile, 2000); exited && last != "" {
			if i := strings.LastIndexByte(last, '\n'); i >= 0 {
				last = last[i+1:]
			}
			if len(last) > 500 {
				last = last[:500]
			}
			f.Detail += fmt.Sprintf(": %q", last)
		}
		return nil, err
	}
	var r struct {
		Ready     bool              `json:"ready"`
		Protocol  string            `json:"protocol"`
		Substrate string            `json:"substrate"`
		Device    string            `json:"device"`
		Slots     map[string]string `json:"slots"`
	}
	if err := worker.DecodeFrame(line, &r); err != nil || !r.Ready {
		return fail(&Fault{Kind: FaultStart, Detail: fmt.Sprintf("the first frame is not a ready frame: %s", worker.Clip(line))})
	}
	if r.Protocol != Protocol {
		return fail(&Fault{Kind: FaultProtocol, Detail: fmt.Sprintf("protocol %q, want %q", r.Protocol, Protocol)})
	}
	e.Ready = Ready{Protocol: r.Protocol, Substrate: r.Substrate, Device: r.Device, Slots: r.Slots}
	return e, nil
}

// Batch serves one batch and times each of its two phases.
func (e *Engine) Batch(ctx context.Context, prompts [][]int, maxNewTokens int) (Window, error) {
	id := e.next
	e.next++
	if maxNewTokens < 2 {
		return Window{}, fmt.Errorf("batch %d: max_new_tokens %d: a batch needs at least 2 (the prefill's token and one decode step)", id, maxNewTokens)
	}
	w := Window{LeftRunning: e.idle.check()}
	// Phase one: the prefill.
	pre, host, err := e.exchange(ctx, map[string]any{"op": "batch", "id": id, "prompts": prompts, "max_new_tokens": maxNewTokens}, id, "prefill")
	if err != nil {
		return Window{}, err
	}
	var p struct {
		ID      *int     `json:"id"`
		Phase   string   `json:"phase"`
		Seconds *float64 `json:"seconds"`
	}
	if err := worker.DecodeFrame(pre, &p); err != nil || p.ID == nil || *p.ID != id || p.Phase != "prefill" || p.Seconds == nil {
		return Window{}, &Fault{Kind: FaultGarbage, Detail: fmt.Sprintf("batch %d prefill: %s", id, worker.Clip(pre))}
	}
	w.PrefillHostSeconds, w.PrefillEngineSeconds = host, *p.Seconds
	if err := e.spec.Tolerance.check(host, *p.Seconds); err != nil {
		return Window{}, &Fault{Kind: FaultTiming, Detail: fmt.Sprintf("batch %d prefill: %v", id, err)}
	}
	// Phase two: the decode, the window's time.
	line, host, err := e.exchange(ctx, map[string]any{"op": "decode", "id": id}, id, "decode")
	if err != nil {
		return Window{}, err
	}
	var f struct {
		ID      *int                      `json:"id"`
		Tokens  [][]int                   `json:"tokens"`
		Seconds *float64                  `json:"seconds"`
		Calls   map[string]map[string]int `json:"calls"`
	}
	if err := worker.DecodeFrame(line, &f); err != nil || f.ID == nil || *f.ID != id || f.Calls == nil {
		return Window{}, &Fault{Kind: FaultGarbage, Detail: fmt.Sprintf("batch %d: %s", id, worker.Clip(line))}
	}
	if f.Seconds == nil || len(f.Tokens) != len(prompts) {
		return Window{}, &Fault{Kind: FaultTokens, Detail: fmt.Sprintf("batch %d: %d token lists for %d prompts", id, len(f.Tokens), len(prompts))}
	}
	for i, t := range f.Tokens {
		if len(t) != maxNewTokens {
			return Window{}, &Fault{Kind: FaultTokens, Detail: fmt.Sprintf("batch %d prompt %d: %d tokens, want %d", id, i, len(t), maxNewTokens)}
		}
	}
	w.Tokens, w.HostSeconds, w.EngineSeconds, w.Calls = f.Tokens, host, *f.Seconds, f.Calls
	if err := e.spec.Tolerance.check(host, *f.Seconds); err != nil {
		return Window{}, &Fault{Kind: FaultTiming, Detail: fmt.Sprintf("batch %d decode: %v", id, err)}
	}
	return w, nil
}

// Swap binds another of the engine's swap trees (a hot swap): the old
// tree's kernels are dropped and the next batch captures its graphs
// again. It returns the controller's time for the swap and the slots'
// statuses the engine reports after it.
func (e *Engine) Swap(ctx context.Context, tree string) (float64, map[string]string, error) {
	id := e.next
	e.next++
	line, host, err := e.exchange(ctx, map[string]any{"op": "swap", "id": id, "tree": tree}, id, "swap")
	if err != nil {
		return 0, nil, err
	}
	var f struct {
		ID      *int              `json:"id"`
		Swapped string            `json:"swapped"`
		Slots   map[string]string `json:"slots"`
		Seconds *float64          `json:"seconds"`
	}
	if err := worker.DecodeFrame(line, &f); err != nil || f.ID == nil || *f.ID != id || f.Swapped != tree || f.Seconds == nil {
		return 0, nil, &Fault{Kind: FaultGarbage, Detail: fmt.Sprintf("swap %d: %s", id, worker.Clip(line))}
	}
	if err := e.spec.Tolerance.check(host, *f.Seconds); err != nil {
		return 0, nil, &Fault{Kind: FaultTiming, Detail: fmt.Sprintf("swap %d: %v", id, err)}
	}
	return host, f.Slots, nil
}

// exchange sends one request and waits for its frame, timing the two on
// the controller's clock. An error frame is the engine refusing the batch.
func (e *Engine) exchange(ctx context.Context, req map[string]any, id int, phase string) ([]byte, float64, error) {
	data, err := json.Marshal(req)
	if err != nil {
		return nil, 0, err
	}
	t0 := time.Now()
	if err := e.session.Send(data); err != nil {
		return nil, 0, &Fault{Kind: FaultExited, Detail: err.Error()}
	}
	line, err := e.await(ctx, e.spec.BatchTimeout, e.spec.StallWindow, fmt.Sprintf("the %s frame of batch %d", phase, id))
	host := time.Since(t0).Seconds()
	if err != nil {
		return nil, 0, err
	}
	// Outside the timed span: what runs from here to the next request
	// runs while the engine has nothing to do.
	e.idle.mark(e.session, id)
	var refusal struct {
		ID    *int   `json:"id"`
		Error string `json:"error"`
	}
	if json.Unmarshal(line, &refusal) == nil && refusal.Error != "" {
		if refusal.ID == nil || *refusal.ID != id {
			return nil, 0, &Fault{Kind: FaultGarbage, Detail: fmt.Sprintf("batch %d %s: %s", id, phase, worker.Clip(line))}
		}
		if worker.DecodeFrame(line, &refusal) != nil {
			return nil, 0, &Fault{Kind: FaultGarbage, Detail: fmt.Sprintf("batch %d %s: %s", id, phase, worker.Clip(line))}
		}
		return nil, 0, &Fault{Kind: FaultRefused, Detail: fmt.Sprintf("batch %d %s: %s", id, phase, refusal.Error)}
	}
	return line, host, nil
}

// check compares an engine's time for a phase with the controller's span
// around it.
func (t Tolerance) check(host, engine float64) error {
	switch {
	case math.IsNaN(engine) || engine <= 0:
		return fmt.Errorf("engine time %v is not a positive time", engine)
	case engine > host:
		return fmt.Errorf("engine time %.6f s is longer than the controller's %.6f s around it", engine, host)
	case host-engine > t.Absolute.Seconds()+t.Relative*host:
		return fmt.Errorf("engine time %.6f s is %.6f s short of the controller's %.6f s (tolerance %s + %g of the span)",
			engine, host-engine, host, t.Absolute, t.Relative)
	}
	return nil
}

// await waits for the next frame, as a Fault when it does not come.
func (e *Engine) await(ctx context.Context, limit, stall time.Duration, what string) ([]byte, error) {
	if stall < 0 {
		stall = 0
	}
	line, err := e.frames.NextWatched(ctx, limit, stall, what)
	switch {
	case err == nil:
		return line, nil
	case errors.Is(err, worker.ErrStalled):
		return nil, &Fault{Kind: FaultStalled, Detail: err.Error()}
	case errors.Is(err, worker.ErrStarved):
		return nil, fmt.Errorf("engine starved (infrastructure): %w", err)
	case errors.Is(err, worker.ErrSessionEnded):
		return nil, &Fault{Kind: FaultExited, Detail: "the engine ended before " + what}
	case errors.Is(err, worker.ErrFrameTimeout):
		return nil, &Fault{Kind: FaultTimeout, Detail: fmt.Sprintf("no %s within %s", what, limit)}
	case ctx.Err() != nil:
		return nil, err
	}
	return nil, &Fault{Kind: FaultGarbage, Detail: err.Error()}
}

// CPUSeconds is the CPU time the engine's whole process tree has consumed
// so far (worker.TreeCPUSeconds): the controller's own reading, which
// tells an engine that works while it should be idle.
func (e *Engine) CPUSeconds() (float64, error) { return e.session.CPUSeconds() }

// Kill stops the engine now.
func (e *Engine) Kill() { e.session.Kill() }

// Close ends the session and reports how the engine process ended.
func (e *Engine) Close() (worker.Outcome, error) {
	return e.session.Close(10 * time.Second)
}
