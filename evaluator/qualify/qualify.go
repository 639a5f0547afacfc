package qualify

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/cacheon/engine/evaluator/audit"
	"github.com/cacheon/engine/evaluator/engine"
	"github.com/cacheon/engine/evaluator/evidence"
	"github.com/cacheon/engine/evaluator/lanes"
	"github.com/cacheon/engine/evaluator/speed"
	"github.com/cacheon/engine/evaluator/verify"
	"github.com/cacheon/engine/evaluator/worker"
	"github.com/cacheon/engine/evaluator/workload"
	"github.com/cacheon/engine/internal/reject"
	"github.com/cacheon/engine/stacks/plan"
)

// Options is one qualification to run.
type Options struct {
	// Plan names the assembled incumbent, the candidate bundle and how
	// both are materialized; Run keeps the trees under RunDir.
	Plan plan.Request
	// Model is the sealed model directory every engine serves; ModelDigest
	// its content digest.
	Model, ModelDigest string
	Workload           *workload.Workload
	Policy             speed.Policy
	Store              *evidence.Store
	// RunDir holds the trees and the engines' work directories; hidden
	// from every engine except the parts bound into it.
	RunDir string
	Python string
	Lanes  [2]lanes.Lane
	// Sample reads the lanes' devices around every timed read; nil on
	// the CPU lane.
	Sample Sampler
	// Isolation contains every engine; Unsafe only by explicit request.
	Isolation worker.Isolation
	// Verify configures the ABI screen (device, dtype). Its seed is never
	// the caller's: Run draws it from the validator secret (audit.VerifySeed).
	Verify   verify.Options
	Progress func(format string, args ...any)
	// Controller is the SHA-256 of the running binary, recorded in the report.
	Controller string
	// AuditSecret is the validator's secret the audit seed and the ABI
	// screen's input seed are drawn from (with the selected delta's
	// bytes); nil draws a fresh one.
	AuditSecret []byte
	// Quality is the pristine reference T's input: the reference tree and
	// the quality calibration. Without a reference tree T decides nothing
	// (NO_DECISION), so a qualification can never pass on speed alone.
	Quality QualityInputs
	// LanePeak is the candidate lane's peak memory bandwidth in bytes per
	// second and LanePeakSource where it comes from (roofline.PeakBandwidth
	// of its GPU): every timed window is held to the roofline floor it
	// gives. 0 applies no floor, and the report says so.
	LanePeak       float64
	LanePeakSource string
	// Reproduces, when set, is the report this run reproduces: the lanes
	// run with its roles exchanged, and the run must plan the same
	// candidate over the same incumbent (else NO_DECISION).
	Reproduces *Report
}

// Result is a finished qualification.
type Result struct {
	Report    *Report
	ReportRef evidence.Ref
}

// Run runs the qualification and returns its report, already published
// to the store. The error is for a qualification that could not produce a
// report at all (the store cannot be written); every other trouble is in
// the report as a FAIL or a NO_DECISION with its reason.
func Run(ctx context.Context, o Options) (*Result, error) {
	t0 := time.Now()
	progress := o.Progress
	if progress == nil {
		progress = func(string, ...any) {}
	}
	r := &Report{Schema: ReportSchema, Started: t0.UTC().Format(time.RFC3339), Isolation: "sandbox", Notes: []string{}, Stages: []Stage{}}
	if o.Reproduces != nil {
		digest, lns, err := reproduction(o.Reproduces, o.Lanes)
		if err != nil {
			return nil, err
		}
		r.Reproduces, r.LanesExchanged, o.Lanes = digest, true, lns
		if o.Lanes[0].Shared {
			r.Notes = append(r.Notes, "one device holds both lanes: the exchange of roles is nominal")
		}
	}
	// The validator's audit secret is the authority's own (Attempt): it
	// is settled before anything runs, so that the attempt record can name
	// it. No secret given: a fresh one, kept only by its commitment.
	auditSecret, auditSecretErr := o.AuditSecret, error(nil)
	if auditSecret == nil {
		auditSecret, auditSecretErr = audit.FreshSecret()
	}
	if o.Isolation.Unsafe {
		r.Isolation = "unisolated"
		r.Notes = append(r.Notes, "engines ran without a sandbox (--unsafe-no-isolation)")
	}
	for _, l := range o.Lanes {
		r.Lanes = append(r.Lanes, Lane{Name: l.Name, Device: l.Device, GPUs: l.GPUs, SharedDevice: l.Shared})
	}
	r.Inputs.Model, r.Inputs.Controller = o.ModelDigest, o.Controller
	r.Inputs.WorkerProtocol, r.Inputs.EngineProtocol = worker.Protocol, engine.Protocol
	r.Inputs.TimerToleranceNote = fmt.Sprintf("%s + %g of the span", engine.DefaultTolerance.Absolute, engine.DefaultTolerance.Relative)
	r.Inputs.Calibration = o.Policy.CalibrationDigest
	if d, err := o.Workload.Digest(); err == nil {
		r.Inputs.Workload = d
	}
	if d, err := o.Policy.Digest(); err == nil {
		r.Inputs.Policy = d
	}

	// The policy's max_qualification_seconds bounds the whole
	// qualification: at that deadline the stage under way ends
	// NO_DECISION, naming the limit, and nothing after it runs; finish
	// holds the whole run's recorded seconds to it too.
	if limit := o.Policy.MaxQualificationSeconds; limit > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, time.Duration(limit)*time.Second, fmt.Errorf("the qualification reached max_qualification_seconds (%d)", limit))
		defer cancel()
	}

	// record appends a stage's outcome, run from start to end, to the
	// report; how follows its length in the progress line.
	record := func(name string, out Outcome, start, end time.Time, how string) Outcome {
		if ctx.Err() != nil && out.Decision != Fail {
			out = Outcome{NoDecision, "interrupted: " + context.Cause(ctx).Error()}
		}
		r.Stages = append(r.Stages, Stage{Name: name, Decision: out.Decision, Reason: out.Reason, Start: seconds(start.Sub(t0)), Seconds: seconds(end.Sub(start))})
		progress("%s: %s %s (%s%s)", name, out.Decision, out.Reason, end.Sub(start).Round(time.Millisecond), how)
		return out
	}
	stage := func(name string, run func() Outcome) Outcome {
		progress("%s …", name)
		start := time.Now()
		out := run()
		return record(name, out, start, time.Now(), "")
	}
	finish := func() (*Result, error) {
		var outcomes []Outcome
		for _, s := range r.Stages {
			if s.Decision != NotApplicable {
				outcomes = append(outcomes, Outcome{s.Decision, s.Reason})
			}
		}
		r.Decision = Aggregate(outcomes)
		r.Reason = "every stage passed"
		if s, ok := r.decider(); ok {
			r.Reason = s.Name + ": " + s.Reason
		}
		elapsed := time.Since(t0)
		r.Seconds = seconds(elapsed)
		if d, why := overQualification(o.Policy, elapsed.Seconds(), r.Decision); why != "" {
			r.Decision, r.Reason = d, why
		}
		data, err := r.Canonical()
		if err != nil {
			return nil, err
		}
		ref, err := o.Store.Put(ArtifactReport, "application/json", ReportSchema, data)
		if err != nil {
			return nil, fmt.Errorf("qualification report: %w", err)
		}
		return &Result{Report: r, ReportRef: ref}, nil
	}

	// Static: the candidate's sources, before anything of it runs.
	if stage(ScreenStatic, func() Outcome { return screenStatic(o.Plan.CandidateDir) }).Decision != Pass {
		return finish()
	}
	// Build: plan the transition and materialize both engine trees.
	var planned *plan.Result
	var natives map[string]string // engine tree -> its sealed prebuild artifact
	req := o.Plan
	req.TreeDir = filepath.Join(o.RunDir, "trees")
	req.Progress = progress
	if stage(ScreenBuild, func() Outcome {
		res, err := plan.Run(ctx, req)
		if err != nil {
			var rej *plan.Rejection
			if errors.As(err, &rej) {
				return Outcome{Fail, err.Error()}
			}
			if reject.Is(err) {
				return Outcome{Fail, err.Error()}
			}
			return Outcome{NoDecision, err.Error()}
		}
		planned = res
		// Declared CUDA sources are compiled here, once per tree, and
		// sealed: no engine or verify worker compiles.
		var notes []string
		var out Outcome
		natives, notes, out = prebuildTrees(ctx, o, []string{res.IncumbentTree, res.CandidateTree}, []lanes.Lane{o.Lanes[0], o.Lanes[1]})
		if out.Decision != Pass {
			return out
		}
		if r.Transition, err = transitionOf(o, res); err != nil {
			return Outcome{NoDecision, err.Error()}
		}
		r.Notes = append(r.Notes, notes...)
		return Outcome{Pass, fmt.Sprintf("target %s: B tree %s, C tree %s", res.Candidate.Transition.TargetID, short(res.Arms.BaselineBefore.TreeDigest.String()), short(res.Arms.Challenger.TreeDigest.String()))}
	}).Decision != Pass {
		return finish()
	}
	r.Inputs.Candidate = planned.Inspection.ContentHash.String()
	r.Inputs.TargetID = planned.Candidate.Transition.TargetID
	r.Inputs.MarginalArmPlan = planned.Digest.String()
	r.Inputs.IncumbentStack, r.Inputs.CandidateStack = planned.Arms.IncumbentStackDigest.String(), planned.Arms.CandidateStackDigest.String()
	r.Inputs.IncumbentTree, r.Inputs.CandidateTree = planned.Arms.BaselineBefore.TreeDigest.String(), planned.Arms.Challenger.TreeDigest.String()
	r.Inputs.SelectedDelta = planned.Inspection.SelectedDeltaDigest.String()
	// The schedule follows the candidate (spec §1.4): a hot-swappable one
	// is read under v7 in resident engines, any other under v8 in engines
	// of its own; the policy file gives the thresholds of both. A v9
	// policy reads every candidate in engines of its own.
	// A resident engine never loads native libraries across a swap, so an
	// incumbent with prebuilt rows reads every candidate under v8 too.
	resident := planned.Inspection.Swappable && natives[planned.IncumbentTree] == "" && natives[planned.CandidateTree] == ""
	policy := scheduled(o.Policy, resident)
	if d, err := policy.Digest(); err == nil {
		r.Inputs.Policy = d
	}
	switch {
	case policy.Version == speed.V9:
		r.Notes = append(r.Notes, fmt.Sprintf("speed policy v9: %d read sets of B, C and B′ in engines of their own, graded on the mean of their speedups", policy.Sets))
	case resident:
		r.Notes = append(r.Notes, "the candidate is hot-swappable: speed policy v7 in resident engines")
	case !planned.Inspection.Swappable:
		r.Notes = append(r.Notes, fmt.Sprintf("the candidate is not hot-swappable (%s): speed policy v8 in engines of its own", planned.Inspection.SwapReason))
	default:
		r.Notes = append(r.Notes, "the engine trees load prebuilt native libraries, which a resident engine does not swap: speed policy v8 in engines of its own")
	}
	if o.Reproduces != nil {
		if diff := sameExperiment(o.Reproduces.Inputs, r.Inputs); diff != "" {
			stage(StageReproduction, func() Outcome {
				return Outcome{NoDecision, "not a reproduction of the report: its " + diff + " differs"}
			})
			return finish()
		}
	}

	// T's prompt selection is sealed now, before any engine runs.
	sel := sealSelection(o, planned, o.Quality)
	// The attempt record: every input of the plan is known now.
	if auditSecretErr == nil {
		a, err := newAttempt(r, o.Controller, audit.SecretCommitment(auditSecret), sel)
		if err != nil {
			return nil, fmt.Errorf("qualification attempt: %w", err)
		}
		r.Attempt = a
	}

	// The validator's secret: the ABI screen's inputs and the audit's
	// sample are drawn from it, so neither can be predicted.
	if auditSecretErr != nil {
		stage(ScreenABI, func() Outcome { return Outcome{NoDecision, "validator secret: " + auditSecretErr.Error()} })
		return finish()
	}
	verifySeed, err := audit.VerifySeed(auditSecret, planned.Inspection.SelectedDeltaDigest.String())
	if err != nil {
		stage(ScreenABI, func() Outcome { return Outcome{NoDecision, "verify seed: " + err.Error()} })
		return finish()
	}

	root, err := worker.EngineRoot(filepath.Join(o.RunDir, "engine-root"))
	if err != nil {
		stage(ScreenServing, func() Outcome { return Outcome{NoDecision, err.Error()} })
		return finish()
	}
	arm := func(role speed.Role, tree string, lane lanes.Lane) engine.Spec {
		return engine.Spec{Python: o.Python, Root: root, Tree: tree, Model: o.Model, Device: lane.Device, Native: natives[tree],
			Graph: lane.Device == "cuda" && o.Workload.Engine.CUDAGraphs, WorkDir: armDir(o.RunDir, role)}
	}
	// Abbreviated serving and the audit run beside the ABI and graph
	// screens (besideRun): none of them is timed, each runs the candidate
	// in a sandbox of its own, and an engine's start is most of each
	// one's time. Serving's outcome is recorded after the graph screen's,
	// the audit's after a speed PASS, as if each had run there; both have
	// ended, their engines reaped, before the speed stage times anything.
	// A qualification that stops earlier ends them and waits for them.
	// serve and runAudit run a stage's work under c; role and dir name its
	// work directory (another for a run again alone).
	serve := func(c context.Context, role speed.Role) Outcome {
		return screenServing(c, o.Isolation, arm(role, planned.CandidateTree, o.Lanes[1]), o.Workload.PromptBatches[0], r.Transition.Members)
	}
	// The audit's evidence of the run whose outcome is taken.
	var aev *audit.Evidence
	var aref *evidence.Ref
	var aerr error
	runAudit := func(c context.Context, dir string) Outcome {
		var out Outcome
		out, aev, aref, aerr = runAuditStage(c, o, planned, root, natives[planned.CandidateTree], auditSecret, dir)
		return out
	}
	servingB := startBeside(ctx, ScreenServing, func(c context.Context) Outcome { return serve(c, "serving") })
	auditB := startBeside(ctx, StageAudit, func(c context.Context) Outcome { return runAudit(c, "audit") })
	// The speed stage's engines (v8, v9: engines of their own) start and
	// warm up beside the screens too: their start is most of the stage's
	// time and none of it is timed. Their reads wait until the screens
	// have passed and every other engine has ended. The roofline floor is
	// the controller's own reading of the sealed model, needed first.
	rf, rerr := qualificationRoofline(o)
	speedArms := setArms([]Arm{
		{Role: speed.B, Spec: arm(speed.B, planned.IncumbentTree, o.Lanes[0])},
		{Role: speed.C, Candidate: true, Spec: arm(speed.C, planned.CandidateTree, o.Lanes[1])},
		{Role: speed.BPrime, Spec: arm(speed.BPrime, planned.IncumbentTree, o.Lanes[0])},
	}, speed.ReadSets(policy.Sets))
	var speedB *speedEngines
	if policy.Version != speed.V7 && rerr == nil {
		progress("speed: starting %d engines beside the screens", len(speedArms))
		speedB = startSpeedEngines(ctx, o.Isolation, speedArms, o.Workload, policy)
	}
	abandonAll := func() {
		servingB.abandon()
		auditB.abandon()
		if speedB != nil {
			speedB.close()
		}
	}
	defer abandonAll()
	// alone notes that a stage read NO_DECISION beside others and is run
	// again alone, once the others are ended.
	alone := func(name, beside, reason string) {
		abandonAll()
		r.Notes = append(r.Notes, fmt.Sprintf("%s: NO_DECISION beside %s (%s); ran again alone", name, beside, reason))
		progress("%s: NO_DECISION beside %s; again alone", name, beside)
	}
	// take records a stage that ran beside others: its outcome, or, when
	// it was abandoned or said NO_DECISION there, the outcome of running
	// it again alone (again).
	take := func(b *besideRun, again func() Outcome) Outcome {
		if b.abandoned {
			return stage(b.name, again)
		}
		progress("%s …", b.name)
		b.wait()
		if b.out.Decision == NoDecision && ctx.Err() == nil {
			alone(b.name, "the ABI screen", b.out.Reason)
			return stage(b.name, again)
		}
		return record(b.name, b.out, b.start, b.end, ", beside the ABI screen")
	}

	// ABI: every op row on its slot contract, in worker processes, on
	// inputs drawn from the secret seed.
	vo := o.Verify
	vo.Seed = verifySeed
	vo.Unisolated = o.Isolation.Unsafe
	vo.WorkDir = o.RunDir
	// The candidate's libraries were sealed with its tree; verify binds
	// them to the bundle's bytes by content instead of compiling again.
	vo.NativeArtifact = natives[planned.CandidateTree]
	var abi *verify.Report
	if stage(ScreenABI, func() Outcome {
		out, rep := screenABI(ctx, o.Plan.CandidateDir, vo)
		if out.Decision == NoDecision && ctx.Err() == nil {
			alone(ScreenABI, "the serving and audit engines", out.Reason)
			out, rep = screenABI(ctx, o.Plan.CandidateDir, vo)
		}
		abi = rep
		return out
	}).Decision != Pass {
		return finish()
	}
	// Graph: the CUDA graph gate, from the ABI screen's captures; the CPU
	// lane captures none.
	if o.Lanes[1].Device != "cuda" {
		r.Stages = append(r.Stages, Stage{Name: ScreenGraph, Decision: NotApplicable, Reason: "the CPU lane captures no CUDA graph", Start: seconds(time.Since(t0)), Seconds: "0"})
	} else if stage(ScreenGraph, func() Outcome { return screenGraph(abi) }).Decision != Pass {
		return finish()
	}
	if take(servingB, func() Outcome { return serve(ctx, "serving-again") }).Decision != Pass {
		return finish()
	}
	// No candidate engine may run while the speed stage times its reads.
	if !auditB.abandoned {
		progress("waiting for the audit's engine, beside the screens, to end before the speed stage")
		auditB.wait()
	}
	// Speed: v7 in two resident engines that swap trees, v8 in three
	// engine processes of their own, or v9 in as many sets of three.
	// Every timed window is held to the roofline floor: the controller's
	// own reading of the sealed model's weights at the lane's peak
	// bandwidth.
	var ev *SpeedEvidence
	readSpeed := func() Outcome {
		if rerr != nil {
			ev = &SpeedEvidence{Outcome: Outcome{NoDecision, rerr.Error()}, Policy: policy, Batches: map[speed.Role][]Batch{}, Samples: []ReadSamples{}, Swaps: []Swap{}}
			return ev.Outcome
		}
		if policy.Version == speed.V7 {
			ev = runSpeedV7(ctx, o.Isolation, Resident{
				Baseline: arm(speed.B, planned.IncumbentTree, o.Lanes[0]), Candidate: arm(speed.C, planned.IncumbentTree, o.Lanes[1]),
				IncumbentTree: planned.IncumbentTree, CandidateTree: planned.CandidateTree,
			}, o.Workload, policy, o.Sample)
		} else {
			// A read set the lanes spoiled is read again once.
			ev = speedB.read(ctx, o.Workload, policy, o.Sample, 1)
			// Quality and the audit's judge run on the device next.
			speedB.close()
		}
		if ev.Grade != nil {
			var setAside []speed.Read
			if ev.SetAside != nil {
				setAside = ev.SetAside.Reads
			}
			if out, ok := plausibleSets(setAside, ev.Reads, rf); !ok {
				ev.Outcome = out
			}
		}
		return ev.Outcome
	}
	progress("%s …", StageSpeed)
	start, how := time.Now(), ""
	switch {
	case speedB == nil:
	case speedB.closed:
		// Ended with the other engines beside the screens (a NO_DECISION
		// run again alone): started again, alone, in the stage.
		speedB = startSpeedEngines(ctx, o.Isolation, speedArms, o.Workload, policy)
	case !speedB.ready():
		// A start that failed beside the screens, the audit's and
		// serving's engines, is not taken: all of them shared the device.
		// Started again alone.
		abandonAll()
		r.Notes = append(r.Notes, fmt.Sprintf("%s: the engines' start beside the screens read %s (%s); started again alone", StageSpeed, speedB.ev.Decision, speedB.ev.Reason))
		progress("%s: the engines' start beside the screens read %s; again alone", StageSpeed, speedB.ev.Decision)
		speedB = startSpeedEngines(ctx, o.Isolation, speedArms, o.Workload, policy)
	default:
		// The screens and the engines' start are behind: the reads begin
		// now, and the stage began with the engines' start.
		start = speedB.start
		how = fmt.Sprintf(", its engines started beside the screens; its reads began %s into the qualification", time.Since(t0).Round(100*time.Millisecond))
	}
	out := readSpeed()
	end := time.Now()
	// The stage's span, as the report records it, is held to the policy's
	// max_stage_seconds; regrade holds the recorded span to it too.
	if over := overStage(policy, end.Sub(start).Seconds(), out); over != out {
		out, ev.Outcome = over, over
	}
	record(StageSpeed, out, start, end, how)
	for _, rd := range ev.Ready {
		r.Inputs.Substrate = rd.Substrate
	}
	sp, err := publishSpeed(o.Store, ev)
	if err != nil {
		return nil, err
	}
	sp.Roofline = rf
	r.Speed = sp
	if r.LaneOrientation, err = orientationOf(r); err != nil {
		return nil, err
	}
	// Audit: an eager, untimed candidate engine recorded its slot calls,
	// judged afterwards by a worker that runs no candidate code, beside
	// the screens; its outcome counts after a speed PASS, and is dropped
	// otherwise. Then quality: the pristine reference T scores the speed
	// stage's trajectories (the candidate's engines are gone by now). A
	// speed PASS alone never makes a PASS; a failed audit ends it.
	if ev.Decision == Pass {
		aout := take(auditB, func() Outcome { return runAudit(ctx, "audit-again") })
		if aerr != nil {
			return nil, aerr
		}
		r.Audit = aref
		if aev != nil {
			if r.AuditControl, err = aev.Control(); err != nil {
				return nil, err
			}
			if r.AuditPolicy, err = auditPolicyOf(aev, auditSecret, planned.Inspection.SelectedDeltaDigest.String()); err != nil {
				return nil, err
			}
		}
		if aout.Decision == Fail {
			return finish()
		}
		var qref evidence.Ref
		var receipt string
		qout := stage(StageQuality, func() Outcome {
			out, ref, rd := runQualityStage(ctx, o, o.Quality, sel, ev)
			qref, receipt = ref, rd
			return out
		})
		r.Quality = qualityRecord(qout, qref, sel, receipt)
	}
	return finish()
}

func short(d string) string {
	if len(d) > 12 {
		return d[:12]
	}
	return d
}

// scheduled is the policy a candidate's speed stage grades under: the
// given thresholds at version 7 for a hot-swappable candidate, else 8; a
// version 9 policy stays 9 (its sets are fresh engine processes, whatever
// the candidate can swap).
func scheduled(p speed.Policy, swappable bool) speed.Policy {
	if p.Version == speed.V9 {
		return p
	}
	p.Version = speed.V8
	if swappable {
		p.Version = speed.V7
	}
	return p
}
