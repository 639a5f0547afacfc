package contribution_test

import (
	"testing"

	"github.com/cacheon/engine/kernels/contribution"
	"github.com/cacheon/engine/stacks/stack"
)

// Both references are stack entries (an external test, so the stack
// package may one day import this one without a cycle).
var (
	_ stack.Ref = (*contribution.ProposalRef)(nil)
	_ stack.Ref = (*contribution.IntegratedRef)(nil)
)

func TestRefKindsMatchStackKinds(t *testing.T) {
	if contribution.KindProposal != stack.ProposalKind || contribution.KindIntegrated != stack.IntegratedKind {
		t.Fatalf("kinds %q/%q, stack says %q/%q", contribution.KindProposal, contribution.KindIntegrated, stack.ProposalKind, stack.IntegratedKind)
	}
}
