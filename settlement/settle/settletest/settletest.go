// Package settletest builds settlement qualifications for tests of the
// packages that settle: two independent, audited qualifications of one
// candidate whose reproduction exchanged the lanes, the pair settle.Pair
// accepts. The candidate's identity (what it is, where it was measured)
// is the caller's; the independence (who ran it, under which selection,
// audit and lanes) is derived here from a side name, so the pair differs
// exactly where two qualifications must.
package settletest

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/cacheon/engine/settlement/settle"
)

// Digest is a distinct, valid digest for a name.
func Digest(name string) string {
	sum := sha256.Sum256([]byte(name))
	return hex.EncodeToString(sum[:])
}

// Candidate is what a candidate's two qualifications share.
type Candidate struct {
	Lane           settle.Lane
	Arena          string
	Reservation    string
	Finalized      settle.Position
	Hotkey         string
	TargetID       string
	TargetSpec     string
	Members        []string
	SelectedDelta  string
	Arm            string
	IncumbentStack string
	IncumbentTree  string
	CandidateStack string
	CandidateTree  string
	Proposal       string
	Transition     settle.Transition
	// Speedups are the first and the second qualification's.
	Speedups [2]string
}

// Pair returns the candidate's two independent qualifications; name
// keeps the authority digests of different candidates apart.
func Pair(name string, c Candidate) (settle.Qualification, settle.Qualification) {
	if c.Lane == "" {
		c.Lane = settle.LaneRegistered
	}
	if c.Transition.Displaced == nil {
		c.Transition.Displaced = []settle.Displaced{}
	}
	side := func(i int, s string) settle.Qualification {
		d := func(what string) string { return Digest(name + "/" + s + "/" + what) }
		return settle.Qualification{
			Lane: c.Lane, Arena: c.Arena, Reservation: c.Reservation, Finalized: c.Finalized, Hotkey: c.Hotkey,
			TargetID: c.TargetID, TargetSpec: c.TargetSpec, Members: append([]string(nil), c.Members...), SelectedDelta: c.SelectedDelta,
			Authority: d("authority"), Plan: d("plan"), Attempt: d("attempt"), Report: d("report"),
			SelectionCommitment: d("selection-commitment"), SelectionSecretCommitment: d("selection-secret-commitment"),
			SelectionEvidence: d("selection-evidence"),
			Arm:               c.Arm, IncumbentStack: c.IncumbentStack, IncumbentTree: c.IncumbentTree,
			CandidateStack: c.CandidateStack, CandidateTree: c.CandidateTree, Speedup: c.Speedups[i],
			Proposal: c.Proposal, Transition: c.Transition, SpeedEvidencePolicy: Digest("speed-policy"),
			AuditControl: Digest("audit-control"),
			AuditPolicy: &settle.AuditPolicy{ValidatorSeed: d("seed")[:32], SampleRatePPM: 1_000_000, MinCalls: 32,
				ExpectedSlots: append([]string(nil), c.Members...), TPSize: 4},
			AuditEvidence: d("audit-evidence"),
			LaneOrientation: &settle.LaneOrientation{SpeedPolicy: Digest("speed-policy"), Control: Digest("lane-control"),
				BaselineLane: Digest("lane-x"), CandidateLane: Digest("lane-y")},
		}
	}
	a, b := side(0, "a"), side(1, "b")
	// The reproduction read each arm on the other lane.
	b.LaneOrientation.BaselineLane, b.LaneOrientation.CandidateLane = a.LaneOrientation.CandidateLane, a.LaneOrientation.BaselineLane
	return a, b
}
