package settle_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/cacheon/engine/internal/reject"
	"github.com/cacheon/engine/settlement/settle"
)

// dg is a distinct, valid digest for a name.
func dg(name string) string {
	sum := sha256.Sum256([]byte(name))
	return hex.EncodeToString(sum[:])
}

// qualPair returns two independent, audited qualifications of one
// candidate whose reproduction exchanged the lanes: a pair Pair accepts.
func qualPair() (settle.Qualification, settle.Qualification) {
	base := func(side string) settle.Qualification {
		return settle.Qualification{
			Lane:                      settle.LaneRegistered,
			Arena:                     "b300-mainnet",
			Reservation:               dg("reservation"),
			Finalized:                 settle.Position{Block: 100, EventIndex: 3, SubeventIndex: 1},
			Hotkey:                    "5Hotkey",
			TargetID:                  "rmsnorm.v1",
			TargetSpec:                dg("target-spec"),
			Members:                   []string{"rmsnorm"},
			SelectedDelta:             dg("selected-delta"),
			Authority:                 dg(side + "/authority"),
			Plan:                      dg(side + "/plan"),
			Attempt:                   dg(side + "/attempt"),
			Report:                    dg(side + "/report"),
			SelectionCommitment:       dg(side + "/selection-commitment"),
			SelectionSecretCommitment: dg(side + "/selection-secret-commitment"),
			SelectionEvidence:         dg(side + "/selection-evidence"),
			Arm:                       dg("arm"),
			IncumbentStack:            dg("incumbent-stack"),
			IncumbentTree:             dg("incumbent-tree"),
			CandidateStack:            dg("candidate-stack"),
			CandidateTree:             dg("candidate-tree"),
			Speedup:                   "1.25",
			Proposal:                  dg("proposal"),
			Transition:                settle.Transition{Prior: dg("prior"), Displaced: []settle.Displaced{}},
			SpeedEvidencePolicy:       dg("speed-policy"),
			AuditControl:              dg("audit-control"),
			AuditPolicy: &settle.AuditPolicy{ValidatorSeed: dg(side + "/seed")[:32], SampleRatePPM: 1_000_000, MinCalls: 32,
				ExpectedSlots: []string{"rmsnorm"}, TPSize: 4},
			AuditEvidence: dg(side + "/audit-evidence"),
			LaneOrientation: &settle.LaneOrientation{SpeedPolicy: dg("speed-policy"), Control: dg("lane-control"),
				BaselineLane: dg("lane-x"), CandidateLane: dg("lane-y")},
		}
	}
	a, b := base("a"), base("b")
	b.LaneOrientation.BaselineLane, b.LaneOrientation.CandidateLane = dg("lane-y"), dg("lane-x")
	b.Speedup = "1.2"
	return a, b
}

// reasonOf is the Reason of a settlement rejection, failing the test when
// err is not one or does not match reject.ErrRejected.
func reasonOf(t *testing.T, err error) settle.Reason {
	t.Helper()
	if err == nil {
		return ""
	}
	var r *settle.Rejection
	if !errors.As(err, &r) {
		t.Fatalf("error %v is not a *settle.Rejection", err)
	}
	if !errors.Is(err, reject.ErrRejected) {
		t.Fatalf("rejection %v does not match reject.ErrRejected", err)
	}
	return r.Reason
}
