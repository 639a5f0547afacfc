package qualify

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"

	"github.com/cacheon/engine/evaluator/lanes"
)

// reproduction returns the SHA-256 of the canonical report a run
// reproduces and the lanes to run it on: the machine's lanes with the
// report's roles exchanged. On the machine that ran the report, its
// baseline devices become the candidate's; on another machine (other
// devices) the discovered lanes are exchanged, so that a reproduction
// never runs the roles in the order its machine would by default.
func reproduction(prior *Report, discovered [2]lanes.Lane) (string, [2]lanes.Lane, error) {
	if prior.Schema != ReportSchema {
		return "", discovered, fmt.Errorf("the report to reproduce has schema %q, want %q", prior.Schema, ReportSchema)
	}
	data, err := prior.Canonical()
	if err != nil {
		return "", discovered, err
	}
	sum := sha256.Sum256(data)
	out := lanes.Exchange(discovered)
	if len(prior.Lanes) == 2 && slices.Equal(prior.Lanes[1].GPUs, discovered[0].GPUs) && !slices.Equal(prior.Lanes[0].GPUs, discovered[0].GPUs) {
		// The discovered order already is the report's exchanged.
		out = discovered
	}
	return hex.EncodeToString(sum[:]), out, nil
}

// sameExperiment names the first input that makes a reproduction another
// experiment than the report's: the settlement's reproduction identity
// (candidate, target, selected delta, both stacks and both trees) and the
// model, workload and policy it was measured with. "" when none.
func sameExperiment(prior, now Inputs) string {
	for _, f := range []struct{ name, a, b string }{
		{"candidate content hash", prior.Candidate, now.Candidate},
		{"target", prior.TargetID, now.TargetID},
		{"selected delta", prior.SelectedDelta, now.SelectedDelta},
		{"incumbent stack", prior.IncumbentStack, now.IncumbentStack},
		{"candidate stack", prior.CandidateStack, now.CandidateStack},
		{"incumbent tree", prior.IncumbentTree, now.IncumbentTree},
		{"candidate tree", prior.CandidateTree, now.CandidateTree},
		{"model", prior.Model, now.Model},
		{"workload", prior.Workload, now.Workload},
		{"speed policy", prior.Policy, now.Policy},
	} {
		if f.a != f.b {
			return fmt.Sprintf("%s (%s, the report's %s)", f.name, f.b, f.a)
		}
	}
	return ""
}
