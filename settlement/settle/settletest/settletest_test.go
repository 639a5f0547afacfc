package settletest_test

import (
	"testing"

	"github.com/cacheon/engine/settlement/settle"
	"github.com/cacheon/engine/settlement/settle/settletest"
)

func candidate() settletest.Candidate {
	d := settletest.Digest
	return settletest.Candidate{
		Arena: d("arena"), Reservation: d("reservation"), Finalized: settle.Position{Block: 7}, Hotkey: "5H",
		TargetID: "norm.rmsnorm", TargetSpec: d("spec"), Members: []string{"norm.rmsnorm"}, SelectedDelta: d("delta"),
		Arm: d("arm"), IncumbentStack: d("b"), IncumbentTree: d("bt"), CandidateStack: d("c"), CandidateTree: d("ct"),
		Proposal: d("proposal"), Transition: settle.Transition{Prior: d("prior")}, Speedups: [2]string{"1.3", "1.25"},
	}
}

func TestPairSettles(t *testing.T) {
	a, b := settletest.Pair("x", candidate())
	c, err := settle.Pair(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if c.Speedup() != "1.25" {
		t.Errorf("conservative speedup %s, want 1.25", c.Speedup())
	}
	// The same side twice is one qualification, never a pair.
	if _, err := settle.Pair(a, a); err == nil {
		t.Error("a qualification paired with itself settled")
	}
}
