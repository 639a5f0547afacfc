package settle

import (
	"fmt"
	"math/big"

	"github.com/cacheon/engine/internal/identity"
)

// Candidate is a candidate ready to settle: two independent passing
// qualifications of one reproduction identity, and the conservative
// speedup (the smaller of the two). Only Pair makes one.
type Candidate struct {
	first, second Qualification
	identity      ReproductionIdentity
	digest        identity.Digest
	speedup       *big.Rat
	speedupText   string
	ppm           int64
}

// First and Second are the two qualifications as Pair received them
// (copies: a candidate does not change after Pair).
func (c *Candidate) First() Qualification  { return c.first.clone() }
func (c *Candidate) Second() Qualification { return c.second.clone() }

// Identity is the reproduction identity both qualifications share.
func (c *Candidate) Identity() ReproductionIdentity { return c.identity }

// Digest names the candidate: its reproduction identity digest. Events
// carry it as candidate_digest.
func (c *Candidate) Digest() identity.Digest { return c.digest }

// Speedup is the conservative speedup, as its canonical decimal string.
func (c *Candidate) Speedup() string { return c.speedupText }

// SpeedupPPM is floor(conservative speedup × 10^6).
func (c *Candidate) SpeedupPPM() int64 { return c.ppm }

// The accessors below return what both qualifications share (Pair checked
// they are equal); slices are copies.
func (c *Candidate) Lane() Lane             { return c.first.Lane }
func (c *Candidate) Reservation() string    { return c.first.Reservation }
func (c *Candidate) Finalized() Position    { return c.first.Finalized }
func (c *Candidate) Members() []string      { return append([]string(nil), c.first.Members...) }
func (c *Candidate) TargetID() string       { return c.first.TargetID }
func (c *Candidate) IncumbentStack() string { return c.first.IncumbentStack }
func (c *Candidate) IncumbentTree() string  { return c.first.IncumbentTree }
func (c *Candidate) CandidateStack() string { return c.first.CandidateStack }
func (c *Candidate) CandidateTree() string  { return c.first.CandidateTree }
func (c *Candidate) Proposal() string       { return c.first.Proposal }
func (c *Candidate) Transition() Transition { return c.first.Transition.clone() }
func (c *Candidate) TargetSpec() string     { return c.first.TargetSpec }
func (c *Candidate) Hotkey() string         { return c.first.Hotkey }
func (c *Candidate) Arena() string          { return c.first.Arena }

// Pair checks that a and b are two independent passing qualifications of
// one candidate and returns the candidate. The rules, in the order they
// are checked, each rejection naming its rule:
//
//  1. each qualification is valid alone (invalid_field:<field>,
//     speedup_not_above_one, speedup_below_ppm_resolution);
//  2. they are two qualifications, not one twice (one_qualification:
//     the same report);
//  3. the reproduction identities are equal
//     (reproduction_identity_mismatch:<field>);
//  4. the lane, reservation, finalized position, members, target spec,
//     arm, proposal, transition (the manifests' difference), speed
//     evidence policy and audit control are equal (<field>_mismatch);
//  5. the seven authority and evidence digests all differ
//     (shared_authority_digest:<name>);
//  6. an audited pair ran under different validator seeds with
//     different audit evidence (validator_seed_reused,
//     audit_evidence_reused);
//  7. lane orientation: carried by both or neither
//     (lane_orientation_missing), under one lane control
//     (lane_orientation_mismatch:control), with the baseline and
//     candidate lanes exchanged (lanes_not_exchanged); a pair with no
//     audit must carry it (unaudited_without_lane_swap).
//
// The conservative speedup is the smaller of the two.
func Pair(a, b Qualification) (*Candidate, error) {
	sa, err := a.Validate()
	if err != nil {
		return nil, fmt.Errorf("first qualification: %w", err)
	}
	sb, err := b.Validate()
	if err != nil {
		return nil, fmt.Errorf("second qualification: %w", err)
	}
	if a.Report == b.Report {
		return nil, rejectf(ReasonOneQualification, "both sides are report %s: a reproduction is a second, independent qualification", a.Report)
	}
	ia, ib := a.ReproductionIdentity(), b.ReproductionIdentity()
	fa, fb := ia.fields(), ib.fields()
	for i := range fa {
		if fa[i].value != fb[i].value {
			return nil, rejectf(ReasonReproductionMismatch.on(fa[i].name), "%s: %q, the reproduction has %q", fa[i].name, fa[i].value, fb[i].value)
		}
	}
	if err := mustMatch(&a, &b); err != nil {
		return nil, err
	}
	da, db := a.authorityDigests(), b.authorityDigests()
	for i := range da {
		for j := range db {
			if da[i].value == db[j].value {
				name := da[i].name
				if i != j {
					name = da[i].name + "=" + db[j].name
				}
				return nil, rejectf(ReasonSharedAuthority.on(name), "the first qualification's %s digest %s is the second's %s digest: the two are not independent", da[i].name, da[i].value, db[j].name)
			}
		}
	}
	if a.Audited() {
		if a.AuditPolicy.ValidatorSeed == b.AuditPolicy.ValidatorSeed {
			return nil, rejectf(ReasonValidatorSeedReused, "both audits ran under validator seed %s", a.AuditPolicy.ValidatorSeed)
		}
		if a.AuditEvidence == b.AuditEvidence {
			return nil, rejectf(ReasonAuditEvidenceReused, "both audits name evidence %s", a.AuditEvidence)
		}
	}
	if err := checkOrientation(&a, &b); err != nil {
		return nil, err
	}
	min, text := sa, a.Speedup
	if sb.Cmp(sa) < 0 {
		min, text = sb, b.Speedup
	}
	d, err := ia.Digest()
	if err != nil {
		return nil, fmt.Errorf("reproduction identity: %w", err)
	}
	return &Candidate{first: a.clone(), second: b.clone(), identity: ia, digest: d, speedup: min, speedupText: text, ppm: ppmOf(min).Int64()}, nil
}

// mustMatch checks the fields a reproduction repeats exactly.
func mustMatch(a, b *Qualification) error {
	fields := []struct {
		name  string
		equal bool
		got   any
		want  any
	}{
		{"lane", a.Lane == b.Lane, a.Lane, b.Lane},
		{"reservation", a.Reservation == b.Reservation, a.Reservation, b.Reservation},
		{"finalized_position", a.Finalized == b.Finalized, a.Finalized, b.Finalized},
		{"members", equalStrings(a.Members, b.Members), a.Members, b.Members},
		{"target_spec", a.TargetSpec == b.TargetSpec, a.TargetSpec, b.TargetSpec},
		{"arm", a.Arm == b.Arm, a.Arm, b.Arm},
		{"proposal", a.Proposal == b.Proposal, a.Proposal, b.Proposal},
		{"transition", equalTransitions(a.Transition, b.Transition), a.Transition, b.Transition},
		{"speed_evidence_policy", a.SpeedEvidencePolicy == b.SpeedEvidencePolicy, a.SpeedEvidencePolicy, b.SpeedEvidencePolicy},
		{"audit_control", a.AuditControl == b.AuditControl, a.AuditControl, b.AuditControl},
	}
	for _, f := range fields {
		if !f.equal {
			return rejectf(mismatch(f.name), "%s: %v, the reproduction has %v", f.name, f.got, f.want)
		}
	}
	return nil
}

func equalTransitions(a, b Transition) bool {
	if a.Prior != b.Prior || len(a.Displaced) != len(b.Displaced) {
		return false
	}
	for i := range a.Displaced {
		if a.Displaced[i] != b.Displaced[i] {
			return false
		}
	}
	return true
}

// checkOrientation applies the lane-swap rule: resident evidence read on
// lanes (baseline X, candidate Y) is reproduced on (Y, X), so a lane's
// own speed cannot pass for the candidate's.
func checkOrientation(a, b *Qualification) error {
	oa, ob := a.LaneOrientation, b.LaneOrientation
	switch {
	case oa == nil && ob == nil:
		if !a.Audited() {
			return rejectf(ReasonUnauditedWithoutLaneSwap, "neither qualification ran an audit or carries a lane orientation")
		}
		return nil
	case oa == nil || ob == nil:
		return rejectf(ReasonLaneOrientationMissing, "only one qualification carries a lane orientation (first %v, second %v)", oa != nil, ob != nil)
	}
	// The orientations' speed policies are equal already: each is its
	// qualification's speed evidence policy (Validate), and those match.
	if oa.Control != ob.Control {
		return rejectf(ReasonLaneOrientationMismatch.on("control"), "lane control %s, the reproduction has %s", oa.Control, ob.Control)
	}
	if oa.BaselineLane != ob.CandidateLane || oa.CandidateLane != ob.BaselineLane {
		return rejectf(ReasonLanesNotExchanged, "lanes (baseline %s, candidate %s) reproduced on (baseline %s, candidate %s): want (%s, %s)",
			oa.BaselineLane, oa.CandidateLane, ob.BaselineLane, ob.CandidateLane, oa.CandidateLane, oa.BaselineLane)
	}
	return nil
}

// clone copies every slice and pointer of q, so that a Candidate shares
// no memory with its caller.
func (q Qualification) clone() Qualification {
	q.Members = append([]string(nil), q.Members...)
	q.Transition = q.Transition.clone()
	if q.AuditPolicy != nil {
		p := *q.AuditPolicy
		p.ExpectedSlots = append([]string(nil), p.ExpectedSlots...)
		q.AuditPolicy = &p
	}
	if q.LaneOrientation != nil {
		o := *q.LaneOrientation
		q.LaneOrientation = &o
	}
	return q
}

func (t Transition) clone() Transition {
	t.Displaced = append([]Displaced(nil), t.Displaced...)
	return t
}
