package quality

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/cacheon/engine/evaluator/evidence"
	"github.com/cacheon/engine/evaluator/worker"
	"github.com/cacheon/engine/internal/canonjson"
	"github.com/cacheon/engine/stacks/materialize"
)

// ArtifactQuality is the evidence store domain of T's record.
const ArtifactQuality = "cacheon.qualification.quality"

// EvidenceSchema names T's record.
const EvidenceSchema = "cacheon.quality-evidence.v1"

// Prompt is one prompt of the pool with the trajectories the speed
// stage's engines generated for it.
type Prompt struct {
	Tokens   []int
	Rollouts map[Role][]int
}

// Teardown is the caller's receipt that the candidate's processes are
// gone before T starts: T refuses to run otherwise.
type Teardown struct {
	CandidateGone bool   `json:"candidate_gone"`
	Detail        string `json:"detail"`
}

// Options is one run of T.
type Options struct {
	Teacher   TeacherSpec
	Isolation worker.Isolation
	// Sealed is the selection committed before any engine ran.
	Sealed *Sealed
	// Entropy is the post-commit entropy; nil draws 32 bytes from the
	// controller's cryptographic random source now, after the commitment.
	Entropy []byte
	// Pool holds every committed prompt by its digest.
	Pool map[string]Prompt
	// TokensPerRollout is how many tokens every trajectory holds (the
	// workload's max_new_tokens): a shorter one is truncated.
	TokensPerRollout int
	// ModelDigest is the digest of the model every engine served: the
	// calibration applies only to the model it was measured on
	// (Calibration.Fits).
	ModelDigest string
	Calibration *Calibration
	Teardown    Teardown
	Store       *evidence.Store
}

// Result is T's outcome. Ref is the published evidence; it is the zero
// Ref when T could not finish (nothing partial is published).
type Result struct {
	Decision Decision
	Reason   string
	Evidence *Evidence
	Ref      evidence.Ref
}

// Evidence is T's record: the commitment and its reveal, the reference
// that scored, every selected prompt's per-token evidence and metrics per
// role, and the decision. Regrade recomputes the decision from it.
type Evidence struct {
	Schema            string              `json:"schema"`
	Commitment        SelectionCommitment `json:"selection_commitment"`
	CommitmentDigest  string              `json:"selection_commitment_digest"`
	Receipt           SelectionReceipt    `json:"selection_receipt"`
	Calibration       Calibration         `json:"calibration"`
	CalibrationDigest string              `json:"calibration_digest"`
	// The reference execution: the tree (no contribution), the substrate
	// and device it reported, how its slots resolved.
	ReferenceTree  string            `json:"reference_tree"`
	Substrate      string            `json:"substrate"`
	Device         string            `json:"device"`
	Slots          map[string]string `json:"slots"`
	TeardownBefore Teardown          `json:"teardown_before_t"`
	TeardownAfter  string            `json:"teardown_after_t"` // how the teacher process ended
	Prompts        []PromptEvidence  `json:"prompts"`
	Verdict        Verdict           `json:"verdict"`
}

// PromptEvidence is one selected prompt.
type PromptEvidence struct {
	Digest   string                   `json:"digest"`
	Tokens   []int                    `json:"tokens"`
	Rollouts map[Role]RolloutEvidence `json:"rollouts"`
}

// RolloutEvidence is one role's trajectory as the reference scored it.
type RolloutEvidence struct {
	Target  []int             `json:"target"`
	NLL     []string          `json:"nll"` // decimal strings
	Argmax  []int             `json:"argmax"`
	Metrics map[string]string `json:"metrics"`
}

func undecided(format string, args ...any) *Result {
	return &Result{Decision: NoDecision, Reason: fmt.Sprintf(format, args...)}
}

// Run is T: it reveals the selection, starts the reference engine,
// teacher-forces every selected prompt's B, C and B′ trajectories, scores
// them familywise and publishes the record. Every failure of the inputs,
// the reference or the host is NO_DECISION with its reason and publishes
// nothing; the error is for a store that cannot be written.
func Run(ctx context.Context, o Options) (*Result, error) {
	if !o.Teardown.CandidateGone {
		return undecided("teardown before T: the candidate's processes are not known to be gone (%s)", o.Teardown.Detail), nil
	}
	if o.Sealed == nil {
		return undecided("no selection was committed before execution"), nil
	}
	tail, err := o.Calibration.TailThreshold()
	if err != nil {
		return undecided("quality calibration: %v", err), nil
	}
	calDigest, err := o.Calibration.Digest()
	if err != nil {
		return undecided("quality calibration: %v", err), nil
	}
	tree, err := materialize.Verify(o.Teacher.Tree)
	if err != nil {
		return undecided("reference tree: %v", err), nil
	}
	if len(tree.Contributions) != 0 {
		return undecided("reference tree %s holds %d contributions (%s first): the reference must run stock code only", tree.TreeDigest, len(tree.Contributions), tree.Contributions[0].TargetID), nil
	}
	c := &o.Sealed.Commitment
	if tree.TreeDigest.String() != c.ReferenceManifest {
		return undecided("reference tree %s is not the one committed (%s)", tree.TreeDigest, c.ReferenceManifest), nil
	}
	if err := o.Calibration.Fits(o.ModelDigest, c.Workload, c.ReferenceManifest); err != nil {
		return undecided("quality calibration: %v", err), nil
	}
	entropy := o.Entropy
	if entropy == nil {
		entropy = make([]byte, 32)
		if _, err := rand.Read(entropy); err != nil {
			return undecided("post-commit entropy: %v", err), nil
		}
	}
	receipt, err := o.Sealed.Reveal(entropy)
	if err != nil {
		return undecided("%v", err), nil
	}
	if err := CheckReveal(c, receipt); err != nil {
		return undecided("%v", err), nil
	}
	ev := &Evidence{Schema: EvidenceSchema, Commitment: *c, CommitmentDigest: o.Sealed.Digest, Receipt: *receipt,
		Calibration: *o.Calibration, CalibrationDigest: calDigest, ReferenceTree: tree.TreeDigest.String(),
		TeardownBefore: o.Teardown, Prompts: []PromptEvidence{}}
	if reason := checkPool(c, receipt, o.Pool, o.TokensPerRollout); reason != "" {
		return undecided("%s", reason), nil
	}

	t, err := StartTeacher(ctx, o.Isolation, o.Teacher)
	if err != nil {
		return undecided("reference engine: %v", err), nil
	}
	ev.Substrate, ev.Device, ev.Slots = t.Substrate, t.Device, t.Slots
	for _, d := range receipt.Selected {
		p := o.Pool[d]
		pe := PromptEvidence{Digest: d, Tokens: p.Tokens, Rollouts: map[Role]RolloutEvidence{}}
		for _, role := range Roles {
			s, err := t.Score(ctx, p.Tokens, p.Rollouts[role])
			if err != nil {
				t.Kill()
				_, _ = t.Close()
				if ctx.Err() != nil {
					return undecided("interrupted: %v", ctx.Err()), nil
				}
				return undecided("reference engine: prompt %s %s: %v", short(d), role, err), nil
			}
			m, err := RolloutMetrics(s, tail)
			if err != nil {
				t.Kill()
				_, _ = t.Close()
				return undecided("reference engine: prompt %s %s: %v", short(d), role, err), nil
			}
			pe.Rollouts[role] = rolloutEvidence(s, m)
		}
		ev.Prompts = append(ev.Prompts, pe)
	}
	out, err := t.Close()
	if err != nil {
		return undecided("teardown after T: %v", err), nil
	}
	if !out.Clean() {
		return undecided("teardown after T: the reference engine %s", out.Describe()), nil
	}
	ev.TeardownAfter = out.Describe()
	v, err := grade(ev)
	if err != nil {
		return undecided("%v", err), nil
	}
	ev.Verdict = v
	data, err := ev.Canonical()
	if err != nil {
		return nil, err
	}
	ref, err := o.Store.Put(ArtifactQuality, "application/json", EvidenceSchema, data)
	if err != nil {
		return nil, fmt.Errorf("quality evidence: %w", err)
	}
	return &Result{Decision: v.Decision, Reason: v.Reason, Evidence: ev, Ref: ref}, nil
}

// checkPool says what is wrong with the pool the trajectories came in,
// or "": it must be exactly the committed pool, and every selected
// prompt must hold all three trajectories, each of the full length.
func checkPool(c *SelectionCommitment, r *SelectionReceipt, pool map[string]Prompt, tokens int) string {
	if len(pool) != len(c.PromptPool) {
		return fmt.Sprintf("the trajectories cover %d prompts, the commitment's pool %d", len(pool), len(c.PromptPool))
	}
	for _, d := range c.PromptPool {
		p, ok := pool[d]
		if !ok {
			return fmt.Sprintf("committed prompt %s has no trajectories", short(d))
		}
		if PromptDigest(p.Tokens) != d {
			return fmt.Sprintf("the prompt filed under %s has digest %s", short(d), short(PromptDigest(p.Tokens)))
		}
	}
	if tokens < 1 {
		return fmt.Sprintf("tokens per rollout %d: want at least 1", tokens)
	}
	for _, d := range r.Selected {
		for _, role := range Roles {
			tr, ok := pool[d].Rollouts[role]
			switch {
			case !ok || len(tr) == 0:
				return fmt.Sprintf("selected prompt %s: no %s trajectory", short(d), role)
			case len(tr) != tokens:
				return fmt.Sprintf("selected prompt %s: the %s trajectory holds %d tokens, want %d (truncated or padded)", short(d), role, len(tr), tokens)
			}
		}
	}
	return ""
}

func rolloutEvidence(s Scored, m Metrics) RolloutEvidence {
	r := RolloutEvidence{Target: s.Target, Argmax: s.Argmax, NLL: make([]string, len(s.NLL)), Metrics: map[string]string{}}
	for i, x := range s.NLL {
		r.NLL[i] = format(x)
	}
	for k, v := range m {
		r.Metrics[k] = format(v)
	}
	return r
}

// grade recomputes every rollout's metrics from the per-token evidence
// (checking the retained metrics agree) and scores the triplets.
func grade(ev *Evidence) (Verdict, error) {
	tail, err := ev.Calibration.TailThreshold()
	if err != nil {
		return Verdict{}, fmt.Errorf("quality calibration: %w", err)
	}
	ts := make([]Triplet, 0, len(ev.Prompts))
	for _, p := range ev.Prompts {
		t := Triplet{Prompt: p.Digest, Roles: map[Role]Metrics{}}
		for _, role := range Roles {
			r, ok := p.Rollouts[role]
			if !ok {
				return Verdict{}, fmt.Errorf("prompt %s: no %s rollout in the evidence", short(p.Digest), role)
			}
			s := Scored{Target: r.Target, Argmax: r.Argmax, NLL: make([]float64, len(r.NLL))}
			for i, x := range r.NLL {
				if s.NLL[i], err = parse(fmt.Sprintf("prompt %s %s nll[%d]", short(p.Digest), role, i), x); err != nil {
					return Verdict{}, err
				}
			}
			m, err := RolloutMetrics(s, tail)
			if err != nil {
				return Verdict{}, fmt.Errorf("prompt %s %s: %w", short(p.Digest), role, err)
			}
			for k, v := range m {
				if r.Metrics[k] != format(v) {
					return Verdict{}, fmt.Errorf("prompt %s %s: %s is %s in the evidence, its tokens give %s", short(p.Digest), role, k, r.Metrics[k], format(v))
				}
			}
			if len(r.Metrics) != len(m) {
				return Verdict{}, fmt.Errorf("prompt %s %s: %d metrics in the evidence, want %d", short(p.Digest), role, len(r.Metrics), len(m))
			}
			t.Roles[role] = m
		}
		ts = append(ts, t)
	}
	return Score(&ev.Calibration, ts), nil
}

// Canonical is the record's canonical JSON.
func (ev *Evidence) Canonical() ([]byte, error) {
	data, err := json.Marshal(ev)
	if err != nil {
		return nil, fmt.Errorf("quality evidence: %w", err)
	}
	v, err := canonjson.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("quality evidence: %w", err)
	}
	return canonjson.Marshal(v)
}

// ErrRegrade is retained quality evidence whose decision does not
// recompute.
var ErrRegrade = errors.New("quality regrade disagrees with the evidence")

// Regrade recomputes T's decision from the retained record at ref: the
// reveal against its commitment, the selected prompts' identities, every
// metric from its per-token evidence, and the familywise decision. It
// returns the record, or an error (wrapping ErrRegrade at a disagreement).
func Regrade(store *evidence.Store, ref evidence.Ref) (*Evidence, error) {
	data, err := store.Get(ref)
	if err != nil {
		return nil, fmt.Errorf("quality evidence: %w", err)
	}
	var ev Evidence
	if err := worker.DecodeFrame(data, &ev); err != nil {
		return nil, fmt.Errorf("quality evidence: %w", err)
	}
	if ev.Schema != EvidenceSchema {
		return nil, fmt.Errorf("quality evidence: schema %q, want %q", ev.Schema, EvidenceSchema)
	}
	if d, err := ev.Commitment.Digest(); err != nil || d != ev.CommitmentDigest {
		return nil, fmt.Errorf("%w: the commitment's digest is %s, the record names %s (%v)", ErrRegrade, d, ev.CommitmentDigest, err)
	}
	if err := CheckReveal(&ev.Commitment, &ev.Receipt); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrRegrade, err)
	}
	if ev.ReferenceTree != ev.Commitment.ReferenceManifest {
		return nil, fmt.Errorf("%w: reference tree %s, the commitment names %s", ErrRegrade, ev.ReferenceTree, ev.Commitment.ReferenceManifest)
	}
	if d, err := ev.Calibration.Digest(); err != nil || d != ev.CalibrationDigest {
		return nil, fmt.Errorf("%w: the calibration's digest is %s, the record names %s", ErrRegrade, d, ev.CalibrationDigest)
	}
	// T publishes evidence only under a calibration made for its inputs;
	// the model is the report's to check (its inputs name it).
	if err := ev.Calibration.Fits(ev.Calibration.Model, ev.Commitment.Workload, ev.Commitment.ReferenceManifest); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrRegrade, err)
	}
	var got []string
	for _, p := range ev.Prompts {
		if PromptDigest(p.Tokens) != p.Digest {
			return nil, fmt.Errorf("%w: prompt %s: its tokens have digest %s", ErrRegrade, short(p.Digest), short(PromptDigest(p.Tokens)))
		}
		got = append(got, p.Digest)
	}
	sort.Strings(got)
	if fmt.Sprint(got) != fmt.Sprint(ev.Receipt.Selected) {
		return nil, fmt.Errorf("%w: the record scores prompts %v, the reveal selected %v", ErrRegrade, got, ev.Receipt.Selected)
	}
	v, err := grade(&ev)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrRegrade, err)
	}
	a, _ := json.Marshal(v)
	b, _ := json.Marshal(ev.Verdict)
	if string(a) != string(b) {
		return nil, fmt.Errorf("%w: the evidence grades %s (%s), the record says %s (%s)", ErrRegrade, v.Decision, v.Reason, ev.Verdict.Decision, ev.Verdict.Reason)
	}
	return &ev, nil
}

func short(d string) string {
	if len(d) > 12 {
		return d[:12]
	}
	return d
}
