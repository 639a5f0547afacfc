// Package audit is the audit role A of a qualification (spec §5.3): after
// a speed PASS, a separate eager, untimed engine session of the candidate
// serves the audit workload while the substrate records, on sampled calls
// of the target's member slots, each call's inputs (cloned before the
// call) and the candidate's outputs. The judgement happens after that
// engine is gone, in a reference worker that runs no candidate code: it
// recomputes the fp32 truth on the recorded inputs with the validator's
// slot semantics and compares under the slot's correctness policy and the
// audit bar. Receipts per slot and rank go through the host gate (Gate).
// See docs/reference/audit.md.
package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/cacheon/engine/evaluator/engine"
	"github.com/cacheon/engine/evaluator/worker"
	"github.com/cacheon/engine/evaluator/workload"
	"github.com/cacheon/engine/internal/reject"
)

// Environment of the audit session (read by cacheon_substrate.audit).
// Only an audit session is started with these; timed sessions never are.
const (
	EnvDir   = "CACHEON_SLOT_AUDIT_DIR"
	EnvSlots = "CACHEON_SLOT_AUDIT_SLOTS"
	EnvRank  = "CACHEON_SLOT_AUDIT_RANK"
	// EnvOutputs names each expected slot's output argument positions,
	// which the recorder poisons before every call: "slot=2;other=4+5".
	EnvOutputs = "CACHEON_SLOT_AUDIT_OUTPUTS"
)

// EnvPrefix is what every audit variable starts with: a timed engine
// spec carrying any such variable is a protocol error.
const EnvPrefix = "CACHEON_SLOT_AUDIT"

// RoleAudit is the worker role that judges the records.
const RoleAudit = "audit"

// NewTokens is what every audit batch generates: the prefill's token and
// one decode step, so both paths of the engine are audited.
const NewTokens = 2

// Options is one audit to run.
type Options struct {
	Python string // absolute interpreter path
	Root   string // the engine root (worker.EngineRoot)
	Tree   string // the candidate's materialized engine tree
	Model  string // the sealed model directory
	// Native is the candidate tree's sealed prebuild artifact directory
	// ("" when its rows have no native libraries), as the speed stage binds it.
	Native string
	Device string // "cpu" or "cuda"
	// WorkDir is the audit's own directory under the run directory: the
	// engine's private directory (where it records) and the judge's.
	WorkDir   string
	Isolation worker.Isolation
	// Workload is the qualification workload; the audit serves its
	// shortest prompt.
	Workload *workload.Workload
	// Contracts are the catalog contracts of the target's member slots:
	// the expected slots.
	Contracts []worker.SlotContract
	// Secret is the validator's secret (at least MinSecretBytes); only
	// its commitment is kept.
	Secret []byte
	// SelectedDelta is the candidate's selected-delta digest (hex).
	SelectedDelta string
	// MinCalls and RatePPM; zero takes the defaults.
	MinCalls, RatePPM int
	// BudgetBytes is the recorder's byte budget (zero: DefaultBudgetBytes).
	// It reaches the recorder on the request pipe with the seed, so a
	// test can make it small without a variable the candidate could set
	// or read.
	BudgetBytes int64
	// StartTimeout, BatchTimeout bound the engine (zero: the engine's
	// defaults); JudgeTimeout the reference worker (zero: 10 minutes).
	StartTimeout, BatchTimeout, JudgeTimeout time.Duration
	Progress                                 func(format string, args ...any)
}

// Run runs the audit. The error is for options that cannot describe an
// audit (a rejection); everything that happens while it runs is in the
// evidence as FAIL or NO_DECISION with its reason.
func Run(ctx context.Context, o Options) (*Evidence, error) {
	t0 := time.Now()
	progress := o.Progress
	if progress == nil {
		progress = func(string, ...any) {}
	}
	if o.MinCalls == 0 {
		o.MinCalls = DefaultMinCalls
	}
	if o.RatePPM == 0 {
		o.RatePPM = DefaultRatePPM
	}
	if o.BudgetBytes == 0 {
		o.BudgetBytes = DefaultBudgetBytes
	}
	if o.JudgeTimeout == 0 {
		o.JudgeTimeout = 10 * time.Minute
	}
	if o.Workload == nil || o.Python == "" || o.Root == "" || o.Tree == "" || o.Model == "" || o.WorkDir == "" {
		return nil, reject.Errorf("audit options: python, root, tree, model, work directory and workload are required")
	}
	var slots []string
	for _, c := range o.Contracts {
		slots = append(slots, c.Slot)
	}
	slices.Sort(slots)
	p := Policy{MinCalls: o.MinCalls, RatePPM: o.RatePPM, ExpectedSlots: slots, WorldSize: 1, BudgetBytes: o.BudgetBytes}
	if err := p.Validate(); err != nil {
		return nil, reject.Wrap(err)
	}
	if o.Workload.Engine.TensorParallel > 1 {
		return nil, reject.Errorf("audit: the engine session serves one rank; tensor parallel %d is not audited here", o.Workload.Engine.TensorParallel)
	}
	outputs, err := outputPositions(o.Contracts)
	if err != nil {
		return nil, err
	}
	prompt, err := ShortestPrompt(o.Workload)
	if err != nil {
		return nil, err
	}
	seed, err := Seed(o.Secret, o.SelectedDelta)
	if err != nil {
		return nil, err
	}
	ev := &Evidence{Schema: Schema, Policy: p, SecretCommitment: SecretCommitment(o.Secret), SelectedDelta: o.SelectedDelta,
		Prompt: prompt.Digest, PromptTokens: len(prompt.Tokens), Repetitions: o.MinCalls + 1, NewTokens: NewTokens,
		Receipts: []Receipt{}}
	finish := func(by, decision, reason string) (*Evidence, error) {
		ev.DecidedBy, ev.Decision, ev.Reason = by, decision, reason
		ev.Seconds = seconds(time.Since(t0))
		return ev, nil
	}

	// The candidate's engine: eager, untimed, recording.
	engineDir := filepath.Join(o.WorkDir, "engine")
	recDir := filepath.Join(engineDir, "audit")
	spec := engine.Spec{Python: o.Python, Root: o.Root, Tree: o.Tree, Model: o.Model, Native: o.Native, Device: o.Device, Graph: false,
		WorkDir: engineDir, StartTimeout: o.StartTimeout, BatchTimeout: o.BatchTimeout,
		Env: sessionEnv(recDir, slots, outputs), Preamble: secretLine(seed, p.RatePPM, p.BudgetBytes)}
	progress("audit: candidate engine, %d × 1 prompt of %d tokens, %d new tokens", ev.Repetitions, len(prompt.Tokens), NewTokens)
	te := time.Now()
	by, decision, reason := serve(ctx, o.Isolation, spec, prompt.Tokens, ev.Repetitions)
	ev.EngineSeconds = seconds(time.Since(te))
	if decision != "" {
		return finish(by, decision, reason)
	}

	// The judge: after the candidate's engine has ended, in a worker that
	// holds the validator's code and the records, read-only.
	tj := time.Now()
	res, by, decision, reason := judge(ctx, o, seed, p, recDir)
	ev.JudgeSeconds = seconds(time.Since(tj))
	if decision != "" {
		return finish(by, decision, reason)
	}
	ev.Receipts = res.Receipts
	if len(res.Unsupported) > 0 {
		return finish(ByJudge, NoDecision, fmt.Sprintf("the validator cannot audit slot(s) %s from records yet", strings.Join(res.Unsupported, ", ")))
	}
	if len(res.RecordErrors) > 0 {
		var parts []string
		for _, e := range res.RecordErrors {
			parts = append(parts, fmt.Sprintf("rank %d: %s", e.Rank, e.Reason))
		}
		ev.RecordErrors = parts
		return finish(ByRecords, Fail, "the candidate's engine left forged or truncated audit records: "+strings.Join(parts, "; "))
	}
	if len(res.Overflow) > 0 {
		// A slot that outgrew its share stopped recording, so its sample
		// is not the whole run's and cannot pass; but what it kept is a
		// sample of real calls, and a wrong output there is the
		// candidate's FAIL (the gate's, so a regrade recomputes it). A
		// kernel that inflated a record to stop the recording gains no
		// PASS from it.
		if d, r := Gate(p, ev.Receipts); d == Fail {
			return finish(ByGate, d, r)
		}
		return finish(ByRecords, NoDecision, "the audit records outgrew the recorder's budget: "+strings.Join(res.Overflow, "; "))
	}
	decision, reason = Gate(p, ev.Receipts)
	return finish(ByGate, decision, reason)
}

// sessionEnv is the audit session's environment: where the records go,
// which slots are expected and their outputs. The sample's seed and rate
// are not in it: the environment is the candidate's to read, and a kernel
// that knows them can compute which calls are recorded (secretLine).
func sessionEnv(recDir string, slots []string, outputs string) []string {
	return []string{EnvDir + "=" + recDir, EnvSlots + "=" + strings.Join(slots, ","), EnvOutputs + "=" + outputs, EnvRank + "=0"}
}

// secretLine is the audit session's first request line, which the
// session reads before it imports the engine tree: the sample's seed and
// rate, and the recorder's byte budget (cacheon_substrate/audit.py
// read_secret). The budget is no secret (the evidence keeps it), but it
// travels here so that nothing in the environment steers the recorder.
func secretLine(seed string, ratePPM int, budget int64) []byte {
	line, _ := json.Marshal(struct {
		Seed   string `json:"audit_seed"`
		Rate   int    `json:"audit_rate_ppm"`
		Budget int64  `json:"audit_budget_bytes"`
	}{seed, ratePPM, budget})
	return line
}

// Who decided: the engine run, the records, the judge or the gate.
const (
	ByEngine  = "engine"
	ByRecords = "records"
	ByJudge   = "judge"
	ByGate    = "gate"
)

// serve runs the audit session to its end: a non-empty decision is an
// engine that did not serve it, attributed to the candidate (FAIL) when
// the engine misbehaved by the protocol, else NO_DECISION.
func serve(ctx context.Context, iso worker.Isolation, spec engine.Spec, prompt []int, reps int) (string, string, string) {
	e, err := engine.Start(ctx, iso, spec)
	if err != nil {
		return attribute("start", err)
	}
	for i := 0; i < reps; i++ {
		if _, err := e.Batch(ctx, [][]int{prompt}, NewTokens); err != nil {
			e.Kill()
			_, _ = e.Close()
			return attribute(fmt.Sprintf("batch %d", i), err)
		}
	}
	out, err := e.Close()
	if err != nil {
		return ByEngine, NoDecision, fmt.Sprintf("audit engine: closing: %v", err)
	}
	if ctx.Err() != nil {
		return ByEngine, NoDecision, "interrupted: " + ctx.Err().Error()
	}
	if !out.Clean() {
		// The session's end of input ends an honest engine with status 0;
		// anything else is the candidate's engine misbehaving.
		return ByEngine, Fail, "audit engine: did not end cleanly after its last batch: " + out.Describe() + tail(spec.WorkDir)
	}
	return "", "", ""
}

func attribute(what string, err error) (string, string, string) {
	var f *engine.Fault
	if errors.As(err, &f) {
		return ByEngine, Fail, fmt.Sprintf("audit engine %s: %v", what, err)
	}
	return ByEngine, NoDecision, fmt.Sprintf("audit engine %s: %v", what, err)
}

func tail(dir string) string {
	if s := strings.TrimSpace(worker.Tail(dir, worker.StderrFile, 400)); s != "" {
		return " (stderr: " + s + ")"
	}
	return ""
}

// Request is the audit role's request (see docs/reference/audit.md).
type Request struct {
	Protocol   string                `json:"protocol"`
	Role       string                `json:"role"`
	WorkDir    string                `json:"work_dir"`
	Contracts  []worker.SlotContract `json:"contracts"`
	RecordDirs []string              `json:"record_dirs"`
	Seed       string                `json:"seed"`
	RatePPM    int                   `json:"rate_ppm"`
	// BudgetBytes is the recorder's budget: the judge reads no more.
	BudgetBytes int64 `json:"budget_bytes"`
	// ModelDir is the sealed model the audited engine served, mounted
	// read-only: a MoE expert call's record names the layer its prepared
	// state came from, and the judge reads that layer's experts here.
	ModelDir string `json:"model_dir,omitempty"`
}

// Result is the audit role's result file.
type Result struct {
	Protocol     string        `json:"protocol"`
	Role         string        `json:"role"`
	Receipts     []Receipt     `json:"receipts"`
	RecordErrors []RecordError `json:"record_errors"`
	Unsupported  []string      `json:"unsupported"`
	// Overflow says, per slot that outgrew its share of the budget,
	// where it stopped recording and by how much (the judge's words).
	Overflow     []string `json:"overflow"`
	HarnessError string   `json:"harness_error,omitempty"`
	Traceback    string   `json:"traceback,omitempty"`
}

// RecordError is a record the judge refused: the candidate's engine wrote it.
type RecordError struct {
	Rank   int    `json:"rank"`
	Reason string `json:"reason"`
}

func judge(ctx context.Context, o Options, seed string, p Policy, recDir string) (*Result, string, string, string) {
	if info, err := os.Lstat(recDir); err != nil || !info.IsDir() {
		return nil, ByRecords, Fail, fmt.Sprintf("the candidate's engine left no audit record directory (%s)", filepath.Base(recDir))
	}
	if err := os.MkdirAll(o.WorkDir, 0o755); err != nil {
		return nil, ByJudge, NoDecision, fmt.Sprintf("audit judge: %v", err)
	}
	root, err := worker.JudgeRoot(filepath.Join(o.WorkDir, "validator"))
	if err != nil {
		return nil, ByJudge, NoDecision, fmt.Sprintf("audit judge: %v", err)
	}
	dir := filepath.Join(o.WorkDir, "judge")
	req := Request{Protocol: worker.Protocol, Role: RoleAudit, WorkDir: dir, Contracts: o.Contracts,
		RecordDirs: []string{recDir}, Seed: seed, RatePPM: p.RatePPM, BudgetBytes: p.BudgetBytes, ModelDir: o.Model}
	out, err := worker.Run(ctx, o.Isolation, worker.Spec{Python: o.Python, ValidatorRoot: root, WorkDir: dir, Request: req,
		Timeout: o.JudgeTimeout, ReadOnly: []string{recDir, o.Model}})
	if err != nil {
		return nil, ByJudge, NoDecision, fmt.Sprintf("audit judge: %v", err)
	}
	if !out.Clean() {
		return nil, ByJudge, NoDecision, "audit judge " + out.Describe() + tail(dir)
	}
	var res Result
	if err := worker.ReadResult(dir, &res); err != nil {
		return nil, ByJudge, NoDecision, fmt.Sprintf("audit judge result: %v", err)
	}
	if res.HarnessError != "" || res.Role != RoleAudit {
		return nil, ByJudge, NoDecision, fmt.Sprintf("audit judge: harness error %q (role %q)", res.HarnessError, res.Role)
	}
	if res.Receipts == nil {
		res.Receipts = []Receipt{}
	}
	return &res, "", "", ""
}

// outputPositions is the EnvOutputs value of the contracts: per slot, in
// slot order, the positions of its outputs in its call. An output the
// call does not name is a contract the audit cannot poison: refused.
func outputPositions(contracts []worker.SlotContract) (string, error) {
	sorted := slices.Clone(contracts)
	slices.SortFunc(sorted, func(a, b worker.SlotContract) int { return strings.Compare(a.Slot, b.Slot) })
	var entries []string
	for _, c := range sorted {
		var pos []string
		for _, name := range c.Outputs {
			i := slices.Index(c.Call, name)
			if i < 0 {
				return "", reject.Errorf("audit: contract of %s: output %q is not an argument of its call %v", c.Slot, name, c.Call)
			}
			pos = append(pos, fmt.Sprint(i))
		}
		entries = append(entries, c.Slot+"="+strings.Join(pos, "+"))
	}
	return strings.Join(entries, ";"), nil
}
