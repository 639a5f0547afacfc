package qualify

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cacheon/engine/evaluator/evidence"
	"github.com/cacheon/engine/evaluator/quality"
	"github.com/cacheon/engine/evaluator/sandbox"
	"github.com/cacheon/engine/evaluator/speed"
	"github.com/cacheon/engine/evaluator/worker"
	"github.com/cacheon/engine/evaluator/workload"
	"github.com/cacheon/engine/internal/identity"
	"github.com/cacheon/engine/stacks/materialize"
	"github.com/cacheon/engine/stacks/plan"
)

// StageQuality is the pristine reference T.
const StageQuality = "quality"

// ArtifactSelectionCommitment is the store domain of the selection
// commitment, published when it is sealed, before any engine runs.
var ArtifactSelectionCommitment = string(identity.DomainSelectionCommitment)

// QualityInputs are what T needs beyond the qualification's Options.
type QualityInputs struct {
	// ReferenceTree is the materialized reference stack
	// (stacks/reference.hcl: no contribution at all).
	ReferenceTree string
	// Calibration holds T's thresholds; nil or provisional decides nothing.
	Calibration *quality.Calibration
	// SelectCount is how many prompts T judges; 0 takes half the pool,
	// at least 2 (or the pool, when smaller).
	SelectCount int
	// Secret is the selection secret (at least 32 bytes); nil draws 32
	// bytes from the controller's cryptographic random source.
	Secret []byte
}

// Selection is a sealed selection and its published commitment, or why
// none could be sealed.
type Selection struct {
	Sealed *quality.Sealed
	Ref    evidence.Ref
	Err    error
}

// sealSelection commits T's prompt selection before any engine runs:
// the marginal arm plan, the reference tree, the workload and its prompt
// pool, and the secret's commitment, published to the store. A failure is
// kept in the Selection for T to report as NO_DECISION.
func sealSelection(o Options, planned *plan.Result, in QualityInputs) *Selection {
	tree, err := materialize.Verify(in.ReferenceTree)
	if err != nil {
		return &Selection{Err: fmt.Errorf("reference tree: %w", err)}
	}
	wd, err := o.Workload.Digest()
	if err != nil {
		return &Selection{Err: err}
	}
	var pool []string
	seen := map[string]bool{}
	for _, batch := range judgedBatches(o.Workload) {
		for _, p := range batch {
			if d := quality.PromptDigest(p); !seen[d] {
				seen[d] = true
				pool = append(pool, d)
			}
		}
	}
	n := in.SelectCount
	if n == 0 {
		n = max(2, (len(pool)+1)/2)
		n = min(n, len(pool))
	}
	secret := in.Secret
	if secret == nil {
		secret = make([]byte, 32)
		if _, err := rand.Read(secret); err != nil {
			return &Selection{Err: fmt.Errorf("selection secret: %w", err)}
		}
	}
	sealed, err := quality.Commit(secret, planned.Digest.String(), tree.TreeDigest.String(), wd, quality.EntropyControllerRandom, pool, n)
	if err != nil {
		return &Selection{Err: err}
	}
	data, err := json.Marshal(sealed.Commitment)
	if err != nil {
		return &Selection{Err: err}
	}
	ref, err := o.Store.Put(ArtifactSelectionCommitment, "application/json", "selection-commitment.v1", data)
	if err != nil {
		return &Selection{Err: fmt.Errorf("selection commitment: %w", err)}
	}
	return &Selection{Sealed: sealed, Ref: ref}
}

// runQualityStage is T, after the speed stage (and the audit) and after
// every engine that ran candidate code is closed: it files the speed
// stage's retained B, C and B′ trajectories of every committed prompt and
// runs the reference over the selected ones (quality.Run). It returns the
// stage's outcome and the published evidence (the zero Ref when T could
// not finish: nothing partial is published). T runs no candidate code, so
// nothing it meets is the candidate's fault except what the trajectories
// show.
func runQualityStage(ctx context.Context, o Options, in QualityInputs, sel *Selection, ev *SpeedEvidence) (Outcome, evidence.Ref, string) {
	switch {
	case sel == nil:
		return Outcome{NoDecision, "no selection was committed before execution"}, evidence.Ref{}, ""
	case sel.Err != nil:
		return Outcome{NoDecision, "selection commitment: " + sel.Err.Error()}, evidence.Ref{}, ""
	case ev == nil:
		return Outcome{NoDecision, "no speed evidence to score"}, evidence.Ref{}, ""
	}
	pool, reason := trajectoryPool(o, ev)
	if reason != "" {
		return Outcome{NoDecision, reason}, evidence.Ref{}, ""
	}
	// A fresh root per run of T: the engines' roots are never reused.
	dir, err := os.MkdirTemp(o.RunDir, "teacher-")
	if err == nil {
		err = sandbox.SearchableDir(dir)
	}
	if err != nil {
		return Outcome{NoDecision, err.Error()}, evidence.Ref{}, ""
	}
	root, err := worker.EngineRoot(filepath.Join(dir, "root"))
	if err != nil {
		return Outcome{NoDecision, err.Error()}, evidence.Ref{}, ""
	}
	res, err := quality.Run(ctx, quality.Options{
		Teacher: quality.TeacherSpec{Python: o.Python, Root: root, Tree: in.ReferenceTree, Model: o.Model,
			Device: o.Lanes[0].Device, WorkDir: filepath.Join(dir, "work")},
		Isolation: o.Isolation, Sealed: sel.Sealed, Pool: pool, TokensPerRollout: o.Workload.MaxNewTokens,
		ModelDigest: o.ModelDigest, Calibration: in.Calibration, Store: o.Store,
		// The speed stage closes and reaps its B, C and B′ engines before
		// it returns, and the serving screen its engine; T starts after.
		Teardown: quality.Teardown{CandidateGone: true, Detail: "the serving screen's and the speed stage's engines were closed and reaped before T"},
	})
	if err != nil {
		return Outcome{NoDecision, "quality evidence: " + err.Error()}, evidence.Ref{}, ""
	}
	receipt := ""
	if res.Evidence != nil {
		receipt = res.Evidence.Receipt.Digest
	}
	return Outcome{Decision(res.Decision), res.Reason}, res.Ref, receipt
}

// judgedBatches are the prompt batches whose trajectories T judges: the
// timed ones, whose windows the speed stage graded. The warm-up and
// conditioning batches come first in every read, untimed. A kernel that is
// wrong only there gains no speed from it; one that is honest only there
// (for its first calls in a process) would have its honest trajectories
// dilute T's mean over the selection: measured on the CPU lane's smoke
// workload, where those batches hold a third of the prompts, a kernel
// honest for its first 40 calls and wrong afterwards was FAILed by T on
// some selections and NO_DECISION on others (docs/reference/integrity.md).
func judgedBatches(w *workload.Workload) [][][]int {
	_, end := w.ConditioningBatches()
	return w.PromptBatches[end:]
}

// trajectoryPool files every judged prompt of the workload with the
// trajectories each speed-stage role generated for it (a prompt that
// occurs twice keeps its first trajectories).
func trajectoryPool(o Options, ev *SpeedEvidence) (map[string]quality.Prompt, string) {
	roles := map[speed.Role]quality.Role{speed.B: quality.RoleB, speed.C: quality.RoleC, speed.BPrime: quality.RoleBPrime}
	pool := map[string]quality.Prompt{}
	_, first := o.Workload.ConditioningBatches()
	for k, batch := range judgedBatches(o.Workload) {
		i := first + k
		for j, p := range batch {
			d := quality.PromptDigest(p)
			if _, ok := pool[d]; ok {
				continue
			}
			pr := quality.Prompt{Tokens: p, Rollouts: map[quality.Role][]int{}}
			for sr, qr := range roles {
				for _, b := range ev.Batches[sr] {
					if b.Index == i && j < len(b.Output) {
						pr.Rollouts[qr] = b.Output[j]
						break
					}
				}
			}
			pool[d] = pr
		}
	}
	if len(pool) == 0 {
		return nil, "the workload has no prompt"
	}
	return pool, ""
}

// qualityRecord is the report's record of T from the stage's outcome, its
// evidence, the selection sealed before execution and the digest of its
// reveal ("" when T revealed nothing).
func qualityRecord(out Outcome, ref evidence.Ref, sel *Selection, receipt string) *Quality {
	q := &Quality{Decision: out.Decision, Reason: out.Reason, Evidence: ref, SelectionReceipt: receipt}
	if sel != nil {
		q.Commitment = sel.Ref
	}
	return q
}
