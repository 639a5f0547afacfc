package qualify

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/cacheon/engine/evaluator/engine"
	"github.com/cacheon/engine/evaluator/speed"
	"github.com/cacheon/engine/evaluator/worker"
	"github.com/cacheon/engine/evaluator/workload"
)

// Arm is one engine of the speed stage.
type Arm struct {
	Role      speed.Role
	Candidate bool // the engine runs the candidate's tree
	Spec      engine.Spec
}

// SpeedEvidence is what the speed stage measured and decided.
type SpeedEvidence struct {
	Outcome
	Policy  speed.Policy           `json:"-"`
	Reads   []speed.Read           `json:"-"`
	Batches map[speed.Role][]Batch `json:"-"`
	Ready   map[speed.Role]engine.Ready
	Grade   *speed.Grade `json:"-"`
	// Samples are the lane samples around every read (none on the CPU lane).
	Samples []ReadSamples `json:"-"`
	// Swaps are a v7 schedule's hot swaps (none under v8).
	Swaps []Swap `json:"-"`
	// Idle is the CPU time every waiting engine consumed during each read
	// (idle.go): the evidence of the noisy-neighbour check.
	Idle []IdleCPU `json:"-"`
	// SetAside is the first v8 read set when the lanes spoiled it and it
	// was read again (Reads, Samples and Grade are then the second's).
	SetAside *SetAside `json:"-"`

	mu sync.Mutex // Batches, while engines warm up together
}

// runSpeedSets is the schedule of engines of their own (v8's for a
// candidate that cannot be hot-swapped, v9's for every candidate): every
// arm its own engine process, the arms in read sets of B, C and B′ (one
// set under v8, the policy's Sets under v9). Every engine starts and warms
// up at once (startSpeedEngines); then their reads are timed one after
// another in arm order, so no timed work overlaps, and every engine not
// being read is watched meanwhile.
//
// rereads is how many times a read set the lanes spoiled is read again in
// the same engines (see rereadReason): 1 in a qualification, so that a
// first arm read slow does not end it NO_DECISION; the set aside is kept
// in the evidence (SpeedEvidence.SetAside) and re-graded.
func runSpeedSets(ctx context.Context, iso worker.Isolation, arms []Arm, w *workload.Workload, p speed.Policy, sample Sampler, rereads int) *SpeedEvidence {
	s := startSpeedEngines(ctx, iso, arms, w, p)
	defer s.close()
	return s.read(ctx, w, p, sample, rereads)
}

// speedEngines are the engines of a schedule of engines of their own,
// every arm's started and warmed up at once, in the background, before any
// read is timed. Starting them is most of the stage's time (twelve engine
// processes under a four-set v9 policy) and none of it is timed, so a
// qualification starts them beside the screens and reads them once the
// screens have passed (Run).
type speedEngines struct {
	arms []Arm
	// ev holds what the start recorded: the warm-up's batches, every
	// engine's Ready, and the outcome when an engine failed.
	ev *SpeedEvidence
	// engines are the arms' engines, in arm order (nil for one that did
	// not start); set before done is closed.
	engines []*engine.Engine
	// cancel ends the engines: they run under a context of their own, so
	// that they outlive the goroutine that started them.
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
	closed bool
	// start is when the start began: the speed stage's own start.
	start time.Time
}

// startSpeedEngines starts and warms up every arm's engine at once, in
// the background; read waits for them, close ends them.
func startSpeedEngines(ctx context.Context, iso worker.Isolation, arms []Arm, w *workload.Workload, p speed.Policy) *speedEngines {
	c, cancel := context.WithCancel(ctx)
	s := &speedEngines{
		arms:    arms,
		ev:      newSpeedEvidence(p),
		engines: make([]*engine.Engine, len(arms)),
		cancel:  cancel,
		done:    make(chan struct{}),
		start:   time.Now(),
	}
	go func() {
		defer close(s.done)
		s.startAll(c, iso, w, p)
	}()
	return s
}

// startAll starts and warms up every engine at once; the first failure
// (in arm order) decides the outcome.
func (s *speedEngines) startAll(ctx context.Context, iso worker.Isolation, w *workload.Workload, p speed.Policy) {
	if !armsInSets(s.arms, speed.ReadSets(p.Sets)) {
		s.ev.Outcome = Outcome{NoDecision, fmt.Sprintf("the version %d schedule needs %d set(s) of the arms B, C and B′ in that order", p.Version, speed.ReadSets(p.Sets))}
		return
	}
	errs := make([]error, len(s.arms))
	var wg sync.WaitGroup
	for i := range s.arms {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			e, err := engine.Start(ctx, iso, s.arms[i].Spec)
			if err != nil {
				errs[i] = err
				return
			}
			s.engines[i] = e
			b, err := warm(ctx, e, w)
			errs[i] = err
			s.ev.recordBatches(s.arms[i].Role, b)
		}(i)
	}
	wg.Wait()
	if ctx.Err() != nil {
		// close ended the start (a screen stopped the qualification, or
		// it was interrupted): an engine killed in its start is nobody's
		// fault.
		s.ev.Outcome = Outcome{NoDecision, "the speed stage's engines were ended during their start: " + ctx.Err().Error()}
		return
	}
	for i, err := range errs {
		if err != nil {
			s.ev.Outcome = attribute(string(s.arms[i].Role), s.arms[i].Candidate, fmt.Errorf("start and warm-up: %w", err))
			return
		}
		s.ev.Ready[s.arms[i].Role] = s.engines[i].Ready
	}
}

// ready waits for the start to end: true when every engine is warm, false
// when one failed (the evidence's outcome says how) or close ended them.
func (s *speedEngines) ready() bool {
	<-s.done
	return s.ev.Outcome == (Outcome{}) && !s.closed
}

// close ends every engine: a start still under way is cut short (its
// engines killed), engines that started are closed. A second close does
// nothing.
func (s *speedEngines) close() {
	s.once.Do(func() {
		select {
		case <-s.done:
		default:
			s.cancel()
			<-s.done
		}
		s.closed = true
		for _, e := range s.engines {
			if e != nil {
				_, _ = e.Close()
			}
		}
		s.cancel()
	})
}

// read waits for the engines and times their read sets: the stage's
// evidence, its outcome the failed start's when an engine did not start.
// The engines stay up; close ends them.
func (s *speedEngines) read(ctx context.Context, w *workload.Workload, p speed.Policy, sample Sampler, rereads int) *SpeedEvidence {
	ev := s.ev
	if !s.ready() {
		if ev.Outcome == (Outcome{}) {
			ev.Outcome = Outcome{NoDecision, "the speed stage's engines were ended before their reads"}
		}
		return ev
	}
	for set := 0; ; set++ {
		reads, samples, out, ok := ev.readSet(ctx, s.arms, s.engines, w, sample)
		if !ok {
			ev.Outcome = out
			return ev
		}
		g, err := speed.GradeReads(p, reads, speed.Options{})
		if err != nil {
			// The controller's own reads of the wrong shape: its bug or its
			// policy's, never the candidate's loss.
			ev.Reads, ev.Samples = reads, samples
			ev.Outcome = Outcome{NoDecision, fmt.Sprintf("grading: %v", err)}
			return ev
		}
		if why := rereadReason(g, samples); why != "" && set < rereads {
			ev.SetAside = &SetAside{Reason: why, Reads: reads, Samples: samples}
			continue
		}
		ev.Reads, ev.Samples, ev.Grade = reads, samples, g
		ev.Outcome = speedOutcome(g, samples)
		return ev
	}
}

// armsInSets is whether arms are exactly `sets` read sets of B, C and B′,
// in that order: the read order of the v8 schedule (one set), of v9's and of the
// one-engine schedule (one set).
func armsInSets(arms []Arm, sets int) bool {
	if len(arms) != 3*sets {
		return false
	}
	for i, a := range arms {
		if a.Role != []speed.Role{speed.B, speed.C, speed.BPrime}[i%3] {
			return false
		}
	}
	return true
}

// setArms is arms, one B, C, B′ set, repeated into sets sets: every later
// set's arms start engines of their own, in work directories of their own
// ("B-set2", …).
func setArms(arms []Arm, sets int) []Arm {
	out := append([]Arm(nil), arms...)
	for set := 2; set <= sets; set++ {
		for _, a := range arms {
			a.Spec.WorkDir = fmt.Sprintf("%s-set%d", a.Spec.WorkDir, set)
			out = append(out, a)
		}
	}
	return out
}

// readSet times one read of each engine in arm order, every other engine
// watched for the CPU it burns meanwhile. ok is false when the set ended
// early; out then says how. Idle records and batches go to ev as they are
// taken.
func (ev *SpeedEvidence) readSet(ctx context.Context, arms []Arm, engines []*engine.Engine, w *workload.Workload, sample Sampler) (reads []speed.Read, samples []ReadSamples, out Outcome, ok bool) {
	samples = []ReadSamples{}
	for i, a := range arms {
		// The other engines wait while this one is timed: each is
		// watched for the CPU it burns meanwhile (the noisy neighbour).
		var idle []idleEngine
		for j, o := range arms {
			if j != i {
				idle = append(idle, idleEngine{name: string(o.Role), candidate: o.Candidate, e: engines[j]})
			}
		}
		var r speed.Read
		var readErr, err error
		var rs *ReadSamples
		records, idleOut, accounted := watchIdle(string(a.Role), idle, func() {
			rs, err = sampleAround(ctx, sample, a.Role, func() error {
				var b []Batch
				r, b, readErr = timedRead(ctx, engines[i], w, a.Role)
				ev.recordBatches(a.Role, b)
				return readErr
			})
		})
		ev.Idle = append(ev.Idle, records...)
		if rs != nil {
			samples = append(samples, *rs)
		}
		// The reads taken so far are kept, so a NO_DECISION can be inspected.
		ev.Reads, ev.Samples = reads, samples
		if readErr != nil {
			return nil, nil, attribute(string(a.Role), a.Candidate, fmt.Errorf("read: %w", readErr)), false
		}
		if err != nil {
			return nil, nil, Outcome{NoDecision, err.Error()}, false
		}
		if out, noisy := idleOutcome(records); noisy {
			return nil, nil, out, false
		}
		if !accounted {
			return nil, nil, idleOut, false
		}
		reads = append(reads, r)
	}
	return reads, samples, Outcome{}, true
}

// newSpeedEvidence is the empty evidence of a speed stage under p, every
// collection present (the published records list none rather than null).
func newSpeedEvidence(p speed.Policy) *SpeedEvidence {
	return &SpeedEvidence{Policy: p, Batches: map[speed.Role][]Batch{}, Ready: map[speed.Role]engine.Ready{}, Samples: []ReadSamples{}, Swaps: []Swap{}, Idle: []IdleCPU{}}
}

func (ev *SpeedEvidence) recordBatches(role speed.Role, b []Batch) {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	ev.Batches[role] = append(ev.Batches[role], b...)
}

// armDir is an arm's work directory under the run directory.
func armDir(run string, role speed.Role) string { return filepath.Join(run, "arms", string(role)) }

// SetAside is a v8 read set the lanes spoiled, read again in the same
// engines: its reads, the lane samples around them, and why it was set
// aside (the NO_DECISION it would have been).
type SetAside struct {
	Reason  string
	Reads   []speed.Read
	Samples []ReadSamples
}

// rereadReason says why a graded read set tells nothing about the
// candidate and is worth reading again: a device that slowed itself down
// under a read, or B and B′ disagreeing by more than max_noise (stock
// drift). Both are the lanes, not the candidate: on an H200 the first arm
// timed sometimes read about 10 % slow (docs/results/qualify-h200.md), and
// such a round ended NO_DECISION. "" when the set decides. The rule looks
// at the stock arms and the lane samples only, never at C's read, so
// reading again cannot be steered by how the candidate did.
func rereadReason(g *speed.Grade, samples []ReadSamples) string {
	if d := Drift(samples); d != "" {
		return d
	}
	if g.Concluded && !g.BPrimeKept {
		return stockDrift(g)
	}
	return ""
}

// stockDrift says how a concluded grade's stock reads disagreed: B and B′
// of the one set (v7, v8), or of more sets than a v9 grade may drop.
func stockDrift(g *speed.Grade) string {
	if len(g.SetDrifts) == 0 {
		return fmt.Sprintf("stock drift: B and B′ differ by %s, over max_noise", speed.Format(g.Drift))
	}
	dropped := 0
	for _, kept := range g.SetsKept {
		if !kept {
			dropped++
		}
	}
	return fmt.Sprintf("stock drift: B and B′ differ by over max_noise in %d of %d read sets (up to %s)", dropped, len(g.SetDrifts), speed.Format(g.Drift))
}

// overStage is the outcome of a speed stage that ran for seconds (its
// span as the report records it, its engines' start included): out,
// unless the span is over the policy's max_stage_seconds. Then the stage's
// evidence is not the policy's (a speed witness spans at most that, spec
// §5.6): NO_DECISION, whatever it graded, except a FAIL, which the
// candidate earned before the limit could matter (a candidate that stalls
// cannot trade its FAIL for a NO_DECISION by stalling longer).
func overStage(p speed.Policy, seconds float64, out Outcome) Outcome {
	if p.MaxStageSeconds <= 0 || seconds <= float64(p.MaxStageSeconds) || out.Decision == Fail {
		return out
	}
	return Outcome{NoDecision, fmt.Sprintf("the speed stage ran %s s, over max_stage_seconds (%d); it read %s %s", speed.Format(seconds), p.MaxStageSeconds, out.Decision, out.Reason)}
}

// speedOutcome is the speed stage's decision from its grade and the lane
// samples around its reads. The grade is the policy's, to the bit; two
// things it cannot see make it NO_DECISION, whatever it says: a device
// that slowed itself down under a read, and a B′ the grade dropped for
// drifting from B by more than max_noise. The spec's v8 then grades C on
// B alone, but the two stock reads disagreeing is the lanes not being
// steady, not evidence about the candidate: measured on an H200, one
// process in a round can be 11 % slow (docs/results/engine-sessions-h200.md),
// and on stock-versus-stock rounds that alone crowned the copy. Regrade
// calls this too.
func speedOutcome(g *speed.Grade, samples []ReadSamples) Outcome {
	if d := Drift(samples); d != "" {
		return Outcome{NoDecision, fmt.Sprintf("%s; the reads graded %s at %s", d, g.Decision, speed.Format(g.Speedup))}
	}
	if g.Concluded && !g.BPrimeKept {
		on := " on B alone" // v8 drops B′ and grades C on B
		if len(g.SetDrifts) > 0 {
			on = ""
		}
		return Outcome{NoDecision, fmt.Sprintf("%s; the reads graded %s at %s%s", stockDrift(g), g.Decision, speed.Format(g.Speedup), on)}
	}
	return Outcome{Decision(g.Decision), fmt.Sprintf("%s (speedup %s)", g.Reason, speed.Format(g.Speedup))}
}
