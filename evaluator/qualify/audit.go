package qualify

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/cacheon/engine/evaluator/audit"
	"github.com/cacheon/engine/evaluator/evidence"
	"github.com/cacheon/engine/evaluator/worker"
	"github.com/cacheon/engine/stacks/plan"
)

// StageAudit is the audit role A, after a speed PASS.
const StageAudit = "audit"

// auditOptions is the audit of the planned candidate under o: the
// candidate's tree on the candidate's lane, the target's member slots as
// the expected slots, the workload's shortest prompt, its own work
// directory under the run directory (hidden from every other engine).
func auditOptions(o Options, planned *plan.Result, root, native string, secret []byte, dir string) (audit.Options, error) {
	cat := o.Plan.Materialize.Catalog
	if cat == nil {
		return audit.Options{}, fmt.Errorf("audit: the plan request carries no catalog")
	}
	id := planned.Candidate.Transition.TargetID
	tg, ok := cat.Target(id)
	if !ok {
		return audit.Options{}, fmt.Errorf("audit: target %s is not in the catalog", id)
	}
	var contracts []worker.SlotContract
	for _, m := range tg.Members {
		s, ok := cat.Slot(m)
		if !ok {
			return audit.Options{}, fmt.Errorf("audit: member slot %s of target %s is not in the catalog", m, id)
		}
		contracts = append(contracts, worker.ContractOf(s))
	}
	return audit.Options{Python: o.Python, Root: root, Tree: planned.CandidateTree, Model: o.Model, Native: native, Device: o.Lanes[1].Device,
		WorkDir: filepath.Join(o.RunDir, dir), Isolation: o.Isolation, Workload: o.Workload, Contracts: contracts,
		Secret: secret, SelectedDelta: planned.Inspection.SelectedDeltaDigest.String(), Progress: o.Progress}, nil
}

// runAuditStage runs the audit of the planned candidate and publishes its
// evidence. The outcome is the stage's, with the evidence published; the error is for evidence that
// could not be stored (as publishSpeed's). native is the candidate
// tree's sealed prebuild artifact ("" for none); secret is the validator's
// audit secret (at least audit.MinSecretBytes; only its commitment is
// published); dir names its work directory under the run directory. An
// audit that cannot be set up is NO_DECISION.
func runAuditStage(ctx context.Context, o Options, planned *plan.Result, root, native string, secret []byte, dir string) (Outcome, *audit.Evidence, *evidence.Ref, error) {
	ao, err := auditOptions(o, planned, root, native, secret, dir)
	if err != nil {
		return Outcome{NoDecision, err.Error()}, nil, nil, nil
	}
	ev, err := audit.Run(ctx, ao)
	if err != nil {
		return Outcome{NoDecision, fmt.Sprintf("audit could not run: %v", err)}, nil, nil, nil
	}
	ref, err := audit.Publish(o.Store, ev)
	if err != nil {
		return Outcome{}, nil, nil, fmt.Errorf("audit evidence: %w", err)
	}
	return Outcome{Decision(ev.Decision), ev.Reason}, ev, &ref, nil
}

// regradeAudit re-grades the audit evidence ref names (audit.Regrade) and
// checks that the report's audit stage says what the evidence decided.
// Regrade calls it for a report with an audit reference.
func regradeAudit(store *evidence.Store, ref evidence.Ref, stage Stage) error {
	ev, err := audit.Regrade(store, ref)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrRegrade, err)
	}
	if stage.Name != StageAudit || string(stage.Decision) != ev.Decision || stage.Reason != ev.Reason {
		return fmt.Errorf("%w: the audit evidence decides %s (%s), the report's %s stage says %s (%s)",
			ErrRegrade, ev.Decision, ev.Reason, stage.Name, stage.Decision, stage.Reason)
	}
	return nil
}
