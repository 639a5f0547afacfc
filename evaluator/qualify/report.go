package qualify

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cacheon/engine/evaluator/evidence"
	"github.com/cacheon/engine/evaluator/quality"
	"github.com/cacheon/engine/evaluator/speed"
	"github.com/cacheon/engine/internal/canonjson"
)

// ReportSchema names the qualification report's format. Version 2 adds
// what settlement pairs two qualifications on: the attempt record, the
// transition, the audit control and policy, the lane orientation and the
// selection's reveal (docs/reference/settlement.md).
const ReportSchema = "cacheon.qualification-report.v2"

// ReportSchemaV1 is the format before the settlement fields. A v1 report
// still parses and regrades (its decisions are what they were); it never
// settles, for it names neither its authority nor its selection.
const ReportSchemaV1 = "cacheon.qualification-report.v1"

// Evidence artifact domains a qualification writes.
const (
	ArtifactReport  = "cacheon.qualification.report"
	ArtifactReads   = "cacheon.qualification.speed-reads"
	ArtifactBatches = "cacheon.qualification.batches"
	ArtifactPolicy  = "cacheon.qualification.speed-policy"
	ArtifactSamples = "cacheon.qualification.lane-samples"
	ArtifactSwaps   = "cacheon.qualification.hot-swaps"
	ArtifactIdleCPU = "cacheon.qualification.idle-cpu"
)

// Report is a qualification's canonical record: the decision, every
// input's digest, each stage's receipt, and references to the raw
// evidence in the store, so that Regrade can recompute every decision.
type Report struct {
	Schema   string   `json:"schema"`
	Decision Decision `json:"decision"`
	Reason   string   `json:"reason"`
	// Inputs are the digests of everything the decision depended on.
	Inputs Inputs `json:"inputs"`
	// Isolation says how engines were contained ("sandbox" or
	// "unisolated", the latter only by explicit request).
	Isolation string  `json:"isolation"`
	Lanes     []Lane  `json:"lanes"`
	Stages    []Stage `json:"stages"`
	Speed     *Speed  `json:"speed"`
	// Audit is the audit role A's evidence (after a speed PASS), with its
	// control digest (audit.Evidence.Control) and its policy and seed
	// ("" and null when no audit evidence was published).
	Audit        *evidence.Ref `json:"audit,omitempty"`
	AuditControl string        `json:"audit_control"`
	AuditPolicy  *AuditPolicy  `json:"audit_policy"`
	// Attempt is who ran the qualification, what it planned and which
	// attempt this was; null when the build stage planned no arms.
	Attempt *Attempt `json:"attempt"`
	// Transition is the planned target transition (the marginal arm
	// plan's); null when the build stage planned none.
	Transition *Transition `json:"transition"`
	// LaneOrientation binds the speed evidence to the lanes that read it;
	// null without a speed stage or when one device held both lanes.
	LaneOrientation *LaneOrientation `json:"lane_orientation"`
	// Quality is the pristine reference T's record; absent (omitted) when
	// T did not run.
	Quality *Quality `json:"quality,omitempty"`
	// Reproduces is the SHA-256 of the canonical report this run
	// reproduces ("" for a first qualification); LanesExchanged says its
	// lanes ran with the roles of that report's exchanged.
	Reproduces     string   `json:"reproduces"`
	LanesExchanged bool     `json:"lanes_exchanged"`
	Started        string   `json:"started"` // RFC 3339, UTC
	Seconds        string   `json:"seconds"` // a decimal string
	Notes          []string `json:"notes"`
}

// Inputs are digests (64 hex) of what a qualification read.
type Inputs struct {
	Candidate          string `json:"candidate_content_hash"`
	SelectedDelta      string `json:"selected_delta"`
	TargetID           string `json:"target_id"`
	IncumbentStack     string `json:"incumbent_stack"`
	CandidateStack     string `json:"candidate_stack"`
	MarginalArmPlan    string `json:"marginal_arm_plan"`
	IncumbentTree      string `json:"incumbent_tree"`
	CandidateTree      string `json:"candidate_tree"`
	Model              string `json:"model"`
	Workload           string `json:"workload"`
	Policy             string `json:"speed_policy"`
	Calibration        string `json:"calibration"`
	Substrate          string `json:"substrate"`
	WorkerProtocol     string `json:"worker_protocol"`
	EngineProtocol     string `json:"engine_protocol"`
	Controller         string `json:"controller"` // the cacheon binary's SHA-256
	TimerToleranceNote string `json:"timer_tolerance"`
}

// Lane is one set of devices an engine ran on.
type Lane struct {
	Name         string   `json:"name"`
	Device       string   `json:"device"` // "cpu" or "cuda"
	GPUs         []string `json:"gpus"`   // UUIDs; empty on the CPU lane
	SharedDevice bool     `json:"shared_device"`
}

// Stage is one step's receipt.
type Stage struct {
	Name     string   `json:"name"`
	Decision Decision `json:"decision"` // PASS, FAIL, NO_DECISION, or NOT_APPLICABLE
	Reason   string   `json:"reason"`
	// Times are decimal strings: canonical JSON carries no floats.
	Start   string `json:"start_seconds"` // from the qualification's start
	Seconds string `json:"seconds"`
}

// NotApplicable is a stage that does not apply here (the CUDA graph gate
// on the CPU lane), said so rather than skipped silently.
const NotApplicable Decision = "NOT_APPLICABLE"

// Speed is the speed stage's record.
type Speed struct {
	Decision Decision     `json:"decision"`
	Reason   string       `json:"reason"`
	Version  int          `json:"policy_version"`
	Speedup  string       `json:"speedup"` // 17 significant digits; "" when not graded
	Policy   evidence.Ref `json:"policy"`
	Reads    evidence.Ref `json:"reads"`
	Batches  evidence.Ref `json:"batches"`
	// Samples are the lane samples around every read: clocks, power,
	// temperature and throttle reasons ([] on the CPU lane).
	Samples evidence.Ref `json:"lane_samples"`
	// Swaps are a v7 schedule's hot swaps with their times ([] under v8).
	Swaps evidence.Ref `json:"swaps"`
	// Roofline is the plausibility floor every timed window was held to
	// (absent from reports written before the floor existed).
	Roofline *Roofline `json:"roofline,omitempty"`
	// IdleCPU is the CPU time every waiting engine consumed during each
	// read ([]IdleCPU), the noisy-neighbour check's evidence; absent in
	// reports from before the check.
	IdleCPU *evidence.Ref `json:"idle_cpu,omitempty"`
	// SetAside is the v8 read set the lanes spoiled (a device that slowed
	// itself down, or stock drift), read again in the same engines: the
	// reads and lane samples above are then the second set's. Absent when
	// the first set decided, so earlier reports keep their bytes.
	SetAside *SetAsideRecord `json:"set_aside,omitempty"`
}

// SetAsideRecord is a set-aside read set in the report: why, and its
// retained reads and lane samples, which Regrade grades again to check
// that the rule set it aside.
type SetAsideRecord struct {
	Reason  string       `json:"reason"`
	Reads   evidence.Ref `json:"reads"`
	Samples evidence.Ref `json:"lane_samples"`
}

// Quality is T's record in the report: its decision and the evidence it
// was graded from (the zero Ref when T did not finish), and the selection
// commitment published before execution.
type Quality struct {
	Decision   Decision     `json:"decision"`
	Reason     string       `json:"reason"`
	Evidence   evidence.Ref `json:"evidence"`
	Commitment evidence.Ref `json:"selection_commitment"`
	// SelectionReceipt is the digest of the selection's reveal in the
	// evidence (quality.SelectionReceipt.Digest): the selection evidence
	// settlement requires two qualifications not to share. "" when T
	// revealed nothing.
	SelectionReceipt string `json:"selection_receipt"`
}

// ErrRegrade is a retained decision the evidence does not reproduce.
var ErrRegrade = errors.New("regrade disagrees with the report")

// Regrade recomputes every decision of a report from the evidence it
// references and returns an error wrapping ErrRegrade at the first
// disagreement. Evidence that is missing or does not match its reference
// is an error too: a decision that cannot be re-graded is not evidence.
func Regrade(store *evidence.Store, r *Report) error {
	if r.Schema != ReportSchema && r.Schema != ReportSchemaV1 {
		return fmt.Errorf("report schema %q, want %q (or %q)", r.Schema, ReportSchema, ReportSchemaV1)
	}
	stages := []Outcome{}
	var policy *speed.Policy // the retained speed policy, where speed graded
	for _, s := range r.Stages {
		if s.Decision != NotApplicable {
			stages = append(stages, Outcome{s.Decision, s.Reason})
		}
		if s.Name == StageAudit {
			if r.Audit == nil {
				return fmt.Errorf("%w: the report has an audit stage and no audit evidence", ErrRegrade)
			}
			if err := regradeAudit(store, *r.Audit, s); err != nil {
				return err
			}
		}
	}
	if r.Speed != nil && r.Speed.IdleCPU != nil {
		if err := regradeIdle(store, r.Speed); err != nil {
			return err
		}
	}
	if r.Speed != nil && r.Speed.Speedup != "" {
		policyJSON, err := store.Get(r.Speed.Policy)
		if err != nil {
			return fmt.Errorf("speed policy: %w", err)
		}
		p, err := speed.ParsePolicy(policyJSON)
		if err != nil {
			return err
		}
		policy = &p
		readsJSON, err := store.Get(r.Speed.Reads)
		if err != nil {
			return fmt.Errorf("speed reads: %w", err)
		}
		reads, err := speed.ParseReads(readsJSON)
		if err != nil {
			return err
		}
		g, err := speed.GradeReads(p, reads, speed.Options{})
		if err != nil {
			return fmt.Errorf("%w: the retained reads do not grade: %v", ErrRegrade, err)
		}
		samplesJSON, err := store.Get(r.Speed.Samples)
		if err != nil {
			return fmt.Errorf("lane samples: %w", err)
		}
		var samples []ReadSamples
		if err := json.Unmarshal(samplesJSON, &samples); err != nil {
			return fmt.Errorf("lane samples: %w", err)
		}
		out := speedOutcome(g, samples)
		var setAside []speed.Read
		if sa := r.Speed.SetAside; sa != nil {
			if setAside, err = regradeSetAside(store, p, *sa); err != nil {
				return err
			}
		}
		if err := countReadSets(store, r.Speed, p); err != nil {
			return err
		}
		if rf := r.Speed.Roofline; rf != nil {
			if _, err := rf.floor(); err != nil {
				return fmt.Errorf("%w: %v", ErrRegrade, err)
			}
			if o, ok := plausibleSets(setAside, reads, rf); !ok {
				out = o
			}
		}
		// The span the report records for the stage, held to the policy's
		// max_stage_seconds as the controller held it. The span is the
		// report's own word (the controller's clock), like every stage's.
		for _, s := range r.Stages {
			if s.Name != StageSpeed || s.Seconds == "" {
				continue
			}
			span, err := speed.ParseDecimal(s.Seconds)
			if err != nil {
				return fmt.Errorf("%w: the speed stage's seconds: %v", ErrRegrade, err)
			}
			out = overStage(p, span, out)
		}
		if out.Decision != r.Speed.Decision || speed.Format(g.Speedup) != r.Speed.Speedup {
			return fmt.Errorf("%w: speed grades %s at %s, the report says %s at %s", ErrRegrade, out.Decision, speed.Format(g.Speedup), r.Speed.Decision, r.Speed.Speedup)
		}
		if d, _ := p.Digest(); d != r.Inputs.Policy {
			return fmt.Errorf("%w: the retained policy has digest %s, the report names %s", ErrRegrade, d, r.Inputs.Policy)
		}
	}
	if q := r.Quality; q != nil && q.Evidence.SHA256 != "" {
		ev, err := quality.Regrade(store, q.Evidence)
		if err != nil {
			return fmt.Errorf("%w: quality: %v", ErrRegrade, err)
		}
		if Decision(ev.Verdict.Decision) != q.Decision {
			return fmt.Errorf("%w: quality grades %s, the report says %s", ErrRegrade, ev.Verdict.Decision, q.Decision)
		}
		if ev.Calibration.Model != r.Inputs.Model {
			return fmt.Errorf("%w: quality: T's calibration was measured on model %s, the report's model is %s", ErrRegrade, ev.Calibration.Model, r.Inputs.Model)
		}
		if ev.CommitmentDigest != "" && q.Commitment.SHA256 != "" {
			data, err := store.Get(q.Commitment)
			if err != nil {
				return fmt.Errorf("selection commitment: %w", err)
			}
			var c quality.SelectionCommitment
			if err := json.Unmarshal(data, &c); err != nil {
				return fmt.Errorf("selection commitment: %w", err)
			}
			if d, err := c.Digest(); err != nil || d != ev.CommitmentDigest {
				return fmt.Errorf("%w: the commitment published before execution has digest %s, T revealed against %s", ErrRegrade, d, ev.CommitmentDigest)
			}
		}
		if r.Schema != ReportSchemaV1 {
			if err := regradeSelection(r, ev); err != nil {
				return err
			}
		}
	}
	if r.Schema != ReportSchemaV1 {
		if err := regradeAttempt(store, r); err != nil {
			return err
		}
	}
	got := Aggregate(stages)
	if policy != nil && r.Seconds != "" {
		// The whole run's recorded seconds, held to the policy's
		// max_qualification_seconds as the controller held them.
		secs, err := speed.ParseDecimal(r.Seconds)
		if err != nil {
			return fmt.Errorf("%w: the qualification's seconds: %v", ErrRegrade, err)
		}
		got, _ = overQualification(*policy, secs, got)
	}
	if got != r.Decision {
		return fmt.Errorf("%w: the stages aggregate to %s, the report says %s", ErrRegrade, got, r.Decision)
	}
	return nil
}

// overQualification is the decision of a qualification whose stages
// aggregate to d and which ran for seconds in all: d, unless a PASS ran
// over the policy's max_qualification_seconds. Then its evidence is not
// the policy's: NO_DECISION, with the reason why (empty when d stands). A
// FAIL stands, as at max_stage_seconds, and so does a NO_DECISION, whose
// stage's reason (an interrupted stage names the limit) says more.
func overQualification(p speed.Policy, seconds float64, d Decision) (Decision, string) {
	if p.MaxQualificationSeconds <= 0 || seconds <= float64(p.MaxQualificationSeconds) || d != Pass {
		return d, ""
	}
	return NoDecision, fmt.Sprintf("the qualification ran %s s, over max_qualification_seconds (%d); its stages read PASS", speed.Format(seconds), p.MaxQualificationSeconds)
}

// Aggregate is the qualification's decision over its stages: any FAIL is
// FAIL, else any NO_DECISION is NO_DECISION, else PASS. No stage at all
// is NO_DECISION.
func Aggregate(stages []Outcome) Decision {
	if len(stages) == 0 {
		return NoDecision
	}
	d := Pass
	for _, s := range stages {
		switch s.Decision {
		case Fail:
			return Fail
		case NoDecision:
			d = NoDecision
		}
	}
	return d
}

// DecidedBy names the stage that decided a FAIL or NO_DECISION report:
// the first stage whose decision is the report's, the one its reason
// names. It is "" for a PASS (every stage decided it together) and for a
// report without such a stage. A reader tells a correctness verdict (a
// screen, the audit, quality) from a speed verdict by it.
func (r *Report) DecidedBy() string {
	s, _ := r.decider()
	return s.Name
}

// decider is the stage DecidedBy names, with false when there is none.
func (r *Report) decider() (Stage, bool) {
	if r.Decision == Pass {
		return Stage{}, false
	}
	for _, s := range r.Stages {
		if s.Decision == r.Decision {
			return s, true
		}
	}
	return Stage{}, false
}

// ParseReport reads a report.
func ParseReport(data []byte) (*Report, error) {
	var r Report
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("qualification report: %w", err)
	}
	return &r, nil
}

// seconds writes a duration as decimal seconds.
func seconds(d time.Duration) string { return speed.Format(d.Seconds()) }

// Canonical is the report's canonical JSON: the bytes the store keeps
// and the evidence digest names.
func (r *Report) Canonical() ([]byte, error) {
	data, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("qualification report: %w", err)
	}
	v, err := canonjson.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("qualification report: %w", err)
	}
	return canonjson.Marshal(v)
}

// regradeSetAside grades a set-aside read set again from its retained
// evidence and checks that the rule set it aside for the reason the
// report gives: a set that decided cannot be swapped for a second try.
// It returns the set's reads, for the roofline.
func regradeSetAside(store *evidence.Store, p speed.Policy, sa SetAsideRecord) ([]speed.Read, error) {
	readsJSON, err := store.Get(sa.Reads)
	if err != nil {
		return nil, fmt.Errorf("set-aside speed reads: %w", err)
	}
	reads, err := speed.ParseReads(readsJSON)
	if err != nil {
		return nil, err
	}
	g, err := speed.GradeReads(p, reads, speed.Options{})
	if err != nil {
		return nil, fmt.Errorf("%w: the set-aside reads do not grade: %v", ErrRegrade, err)
	}
	samplesJSON, err := store.Get(sa.Samples)
	if err != nil {
		return nil, fmt.Errorf("set-aside lane samples: %w", err)
	}
	var samples []ReadSamples
	if err := json.Unmarshal(samplesJSON, &samples); err != nil {
		return nil, fmt.Errorf("set-aside lane samples: %w", err)
	}
	if why := rereadReason(g, samples); why == "" || why != sa.Reason {
		return nil, fmt.Errorf("%w: the set-aside reads grade %s at %s and give reason %q to read again, the report says %q", ErrRegrade, g.Decision, speed.Format(g.Speedup), why, sa.Reason)
	}
	return reads, nil
}

// countReadSets checks that the stage's own records count as many read
// sets as the report shows: one, or two when one was set aside (under v9
// a "read set" is all of the policy's sets, read again together). Under
// v8 and v9 they are the idle records, one for every engine that waited
// through every read; under v7 the hot swaps, one stock→stock swap of
// the baseline engine before every B. A report that hid a set-aside set,
// or read again more often than the rule allows, is caught here.
func countReadSets(store *evidence.Store, s *Speed, p speed.Policy) error {
	sets := 1
	if s.SetAside != nil {
		sets = 2
	}
	if p.Version == speed.V7 {
		data, err := store.Get(s.Swaps)
		if err != nil {
			return fmt.Errorf("hot swaps: %w", err)
		}
		var swaps []Swap
		if err := json.Unmarshal(data, &swaps); err != nil {
			return fmt.Errorf("hot swaps: %w", err)
		}
		bs := 0
		for _, sw := range swaps {
			if sw.Role == speed.B {
				bs++
			}
		}
		if bs != sets {
			return fmt.Errorf("%w: the hot swaps show %d read set(s), the report %d", ErrRegrade, bs, sets)
		}
		return nil
	}
	if s.IdleCPU == nil {
		return nil
	}
	data, err := store.Get(*s.IdleCPU)
	if err != nil {
		return fmt.Errorf("idle CPU: %w", err)
	}
	var records []IdleCPU
	if err := json.Unmarshal(data, &records); err != nil {
		return fmt.Errorf("idle CPU: %w", err)
	}
	// Every read has one idle record for each engine that waited: all
	// the schedule's engines but the one read.
	engines := 3 * speed.ReadSets(p.Sets)
	if want := engines * (engines - 1) * sets; len(records) != want {
		return fmt.Errorf("%w: the idle records show %d reads, the report %d read set(s) of %d", ErrRegrade, len(records)/(engines-1), sets, engines)
	}
	return nil
}
