package settle

import (
	"fmt"
	"math/big"
	"sort"

	"github.com/cacheon/engine/internal/identity"
)

// Lane is the market lane a reservation entered through.
type Lane string

// Lanes. A registered row competes for the target's crown; a discovery
// row earns a bounty and never changes the stack.
const (
	LaneRegistered Lane = "registered"
	LaneDiscovery  Lane = "discovery"
)

// Position is a reservation's place in finalized chain order: the block
// its submission finalized in, the event index in that block and the
// subevent index in that event. Earlier positions win ties.
type Position struct {
	Block         uint64 `json:"block"`
	EventIndex    uint32 `json:"event_index"`
	SubeventIndex uint32 `json:"subevent_index"`
}

// compare orders positions by block, event index, subevent index.
func (p Position) compare(q Position) int {
	switch {
	case p.Block != q.Block:
		return cmpUint(p.Block, q.Block)
	case p.EventIndex != q.EventIndex:
		return cmpUint(uint64(p.EventIndex), uint64(q.EventIndex))
	default:
		return cmpUint(uint64(p.SubeventIndex), uint64(q.SubeventIndex))
	}
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Displaced is one incumbent entry the candidate's target displaces: the
// target it held and the digest of its contribution reference.
type Displaced struct {
	TargetID string `json:"target_id"`
	Entry    string `json:"entry"`
}

// Transition is what the incumbent manifest and the candidate manifest
// differ by, as settlement needs it: the entry the candidate replaces at
// its own target (Prior, "" when the target was not active) and the
// entries of other targets its displacement closure removes, sorted by
// target. The candidate's own entry is Qualification.Proposal.
type Transition struct {
	Prior     string      `json:"prior"`
	Displaced []Displaced `json:"displaced"`
}

// AuditPolicy is the sealed audit policy of one attempt (role A). The
// validator seed is derived from the attempt's private selection secret,
// so two independent attempts never share it.
type AuditPolicy struct {
	ValidatorSeed string   `json:"validator_seed"` // 32 lowercase hex
	SampleRatePPM int64    `json:"sample_rate_ppm"`
	MinCalls      int64    `json:"min_calls"`
	ExpectedSlots []string `json:"expected_slots"`
	TPSize        int64    `json:"tp_size"`
}

// LaneOrientation binds resident speed evidence to the physical lanes it
// read: the speed policy and lane control it ran under and the lane that
// read the baseline and the one that read the candidate.
type LaneOrientation struct {
	SpeedPolicy   string `json:"speed_policy"`
	Control       string `json:"control"`
	BaselineLane  string `json:"baseline_lane"`
	CandidateLane string `json:"candidate_lane"`
}

// Qualification is the settlement view of one passing qualification
// attempt: who submitted what, where it sits in finalized order, which
// authority ran which attempt under which selection, what it measured
// (the arm, its stacks and trees, the speedup) and how it was audited.
// Every digest is 64 lowercase hex, never the all-zero digest.
type Qualification struct {
	Lane        Lane     `json:"lane"`
	Arena       string   `json:"arena"`
	Reservation string   `json:"reservation"`
	Finalized   Position `json:"finalized"`
	Hotkey      string   `json:"hotkey"`
	TargetID    string   `json:"target_id"`
	TargetSpec  string   `json:"target_spec"`
	// Members are the target's member slots, sorted: a crown conflicts
	// with every other row that shares one.
	Members       []string `json:"members"`
	SelectedDelta string   `json:"selected_delta"`

	// The seven authority and evidence digests: two independent
	// qualifications share none of them.
	Authority                 string `json:"qualification_authority"`
	Plan                      string `json:"qualification_plan"`
	Attempt                   string `json:"qualification_attempt"`
	Report                    string `json:"qualification_report"`
	SelectionCommitment       string `json:"selection_commitment"`
	SelectionSecretCommitment string `json:"selection_secret_commitment"`
	SelectionEvidence         string `json:"selection_evidence"`

	// Arm is the marginal arm plan digest; the four stack and tree
	// digests are its B and C arms.
	Arm            string `json:"arm"`
	IncumbentStack string `json:"incumbent_stack"`
	IncumbentTree  string `json:"incumbent_tree"`
	CandidateStack string `json:"candidate_stack"`
	CandidateTree  string `json:"candidate_tree"`
	// Speedup is a canonical decimal string greater than 1.
	Speedup string `json:"speedup"`

	// Proposal is the candidate's contribution reference digest: the
	// entry a crown adopts. Transition is what it replaces.
	Proposal            string     `json:"proposal"`
	Transition          Transition `json:"transition"`
	SpeedEvidencePolicy string     `json:"speed_evidence_policy"`

	// AuditControl, AuditPolicy and AuditEvidence are all set (an
	// audited attempt) or all unset.
	AuditControl  string       `json:"audit_control"`
	AuditPolicy   *AuditPolicy `json:"audit_policy"`
	AuditEvidence string       `json:"audit_evidence"`
	// LaneOrientation is set for resident speed evidence.
	LaneOrientation *LaneOrientation `json:"lane_orientation"`
}

// Audited reports whether the attempt ran audit role A.
func (q *Qualification) Audited() bool { return q.AuditControl != "" }

// ReproductionIdentity is what makes two qualifications reproductions of
// one candidate: the same arena, target, bytes and hotkey, measured over
// the same incumbent into the same candidate stack and trees.
type ReproductionIdentity struct {
	Arena          string `json:"arena"`
	TargetID       string `json:"target_id"`
	SelectedDelta  string `json:"selected_delta"`
	Hotkey         string `json:"hotkey"`
	IncumbentStack string `json:"incumbent_stack"`
	IncumbentTree  string `json:"incumbent_tree"`
	CandidateStack string `json:"candidate_stack"`
	CandidateTree  string `json:"candidate_tree"`
}

// Digest is H(cacheon.settlement.reproduction-identity, identity).
func (r ReproductionIdentity) Digest() (identity.Digest, error) {
	return identity.H(identity.DomainSettlementReproductionIdentity, r)
}

// fields lists the identity's fields in declaration order, for the pair
// check that names the first that differs.
func (r ReproductionIdentity) fields() []namedValue {
	return []namedValue{
		{"arena", r.Arena}, {"target_id", r.TargetID}, {"selected_delta", r.SelectedDelta}, {"hotkey", r.Hotkey},
		{"incumbent_stack", r.IncumbentStack}, {"incumbent_tree", r.IncumbentTree},
		{"candidate_stack", r.CandidateStack}, {"candidate_tree", r.CandidateTree},
	}
}

type namedValue struct{ name, value string }

// ReproductionIdentity projects the qualification onto its identity.
func (q *Qualification) ReproductionIdentity() ReproductionIdentity {
	return ReproductionIdentity{
		Arena: q.Arena, TargetID: q.TargetID, SelectedDelta: q.SelectedDelta, Hotkey: q.Hotkey,
		IncumbentStack: q.IncumbentStack, IncumbentTree: q.IncumbentTree,
		CandidateStack: q.CandidateStack, CandidateTree: q.CandidateTree,
	}
}

// authorityDigests are the seven digests two independent qualifications
// never share, with the names their rejections carry.
func (q *Qualification) authorityDigests() []namedValue {
	return []namedValue{
		{"authority", q.Authority}, {"plan", q.Plan}, {"attempt", q.Attempt}, {"report", q.Report},
		{"selection_commitment", q.SelectionCommitment}, {"selection_secret_commitment", q.SelectionSecretCommitment},
		{"selection_evidence", q.SelectionEvidence},
	}
}

// Validate checks one qualification alone: every field well formed, the
// members sorted, the speedup canonical and above 1. It returns the
// parsed speedup.
func (q *Qualification) Validate() (*big.Rat, error) {
	invalid := func(field, format string, args ...any) error {
		return rejectf(ReasonInvalidField.on(field), "%s: %s", field, fmt.Sprintf(format, args...))
	}
	if q.Lane != LaneRegistered && q.Lane != LaneDiscovery {
		return nil, invalid("lane", "%q is neither %q nor %q", q.Lane, LaneRegistered, LaneDiscovery)
	}
	for _, f := range []namedValue{{"arena", q.Arena}, {"hotkey", q.Hotkey}, {"target_id", q.TargetID}} {
		if f.value == "" {
			return nil, invalid(f.name, "empty")
		}
	}
	digests := []namedValue{{"reservation", q.Reservation}, {"target_spec", q.TargetSpec}, {"selected_delta", q.SelectedDelta}}
	digests = append(digests, q.authorityDigests()...)
	digests = append(digests, []namedValue{{"arm", q.Arm},
		{"incumbent_stack", q.IncumbentStack}, {"incumbent_tree", q.IncumbentTree},
		{"candidate_stack", q.CandidateStack}, {"candidate_tree", q.CandidateTree},
		{"proposal", q.Proposal}, {"speed_evidence_policy", q.SpeedEvidencePolicy}}...)
	for _, f := range digests {
		if err := identity.CheckDigest(f.name, f.value, false); err != nil {
			return nil, invalid(f.name, "%v", err)
		}
	}
	if q.CandidateTree == q.IncumbentTree {
		return nil, invalid("candidate_tree", "equals the incumbent tree %s: the transition changes no byte", q.IncumbentTree)
	}
	if err := checkSortedSet(q.Members); err != nil {
		return nil, invalid("members", "%v", err)
	}
	if err := q.Transition.validate(q.TargetID); err != nil {
		return nil, invalid("transition", "%v", err)
	}
	if err := q.validateAudit(); err != nil {
		return nil, err
	}
	if o := q.LaneOrientation; o != nil {
		if err := o.validate(q.SpeedEvidencePolicy); err != nil {
			return nil, err
		}
	}
	s, err := parseDecimal(q.Speedup)
	if err != nil {
		return nil, invalid("speedup", "%v", err)
	}
	if s.Cmp(big.NewRat(1, 1)) <= 0 {
		return nil, rejectf(ReasonSpeedupNotAboveOne, "speedup %s is not above 1", q.Speedup)
	}
	ppm := ppmOf(s)
	if ppm.Cmp(ppmScale) <= 0 {
		return nil, rejectf(ReasonSpeedupBelowPPM, "speedup %s is %s ppm: a standing claim needs more than 1000000", q.Speedup, ppm)
	}
	if !ppm.IsInt64() {
		return nil, invalid("speedup", "%s is beyond any measurable speedup", q.Speedup)
	}
	return s, nil
}

func (t *Transition) validate(target string) error {
	if t.Prior != "" {
		if err := identity.CheckDigest("prior", t.Prior, false); err != nil {
			return err
		}
	}
	for i, d := range t.Displaced {
		if d.TargetID == "" || d.TargetID == target {
			return fmt.Errorf("displaced[%d]: target %q: a displaced entry is of another target", i, d.TargetID)
		}
		if err := identity.CheckDigest(fmt.Sprintf("displaced[%d].entry", i), d.Entry, false); err != nil {
			return err
		}
		if i > 0 && t.Displaced[i-1].TargetID >= d.TargetID {
			return fmt.Errorf("displaced[%d]: target %q: displaced entries are sorted by target, each once", i, d.TargetID)
		}
	}
	return nil
}

func (q *Qualification) validateAudit() error {
	invalid := func(field, format string, args ...any) error {
		return rejectf(ReasonInvalidField.on(field), "%s: %s", field, fmt.Sprintf(format, args...))
	}
	set := []bool{q.AuditControl != "", q.AuditPolicy != nil, q.AuditEvidence != ""}
	if set[0] != set[1] || set[0] != set[2] {
		return invalid("audit_control", "audit control, policy and evidence are all set or all unset (set: control %v, policy %v, evidence %v)", set[0], set[1], set[2])
	}
	if !set[0] {
		return nil
	}
	for _, f := range []namedValue{{"audit_control", q.AuditControl}, {"audit_evidence", q.AuditEvidence}} {
		if err := identity.CheckDigest(f.name, f.value, false); err != nil {
			return invalid(f.name, "%v", err)
		}
	}
	p := q.AuditPolicy
	if len(p.ValidatorSeed) != 32 || !identity.IsHex64(p.ValidatorSeed+p.ValidatorSeed) {
		return invalid("audit_policy.validator_seed", "%q is not 32 lowercase hex", p.ValidatorSeed)
	}
	if p.SampleRatePPM < 1 || p.SampleRatePPM > 1_000_000 {
		return invalid("audit_policy.sample_rate_ppm", "%d is outside [1, 1000000]", p.SampleRatePPM)
	}
	if p.MinCalls < 1 || p.TPSize < 1 {
		return invalid("audit_policy", "min_calls %d and tp_size %d must be at least 1", p.MinCalls, p.TPSize)
	}
	if err := checkSortedSet(p.ExpectedSlots); err != nil {
		return invalid("audit_policy.expected_slots", "%v", err)
	}
	if !equalStrings(p.ExpectedSlots, q.Members) {
		return invalid("audit_policy.expected_slots", "%v are not the target members %v", p.ExpectedSlots, q.Members)
	}
	return nil
}

func (o *LaneOrientation) validate(speedPolicy string) error {
	invalid := func(field, format string, args ...any) error {
		return rejectf(ReasonInvalidField.on(field), "%s: %s", field, fmt.Sprintf(format, args...))
	}
	for _, f := range []namedValue{{"speed_policy", o.SpeedPolicy}, {"control", o.Control}, {"baseline_lane", o.BaselineLane}, {"candidate_lane", o.CandidateLane}} {
		if err := identity.CheckDigest(f.name, f.value, false); err != nil {
			return invalid("lane_orientation."+f.name, "%v", err)
		}
	}
	if o.SpeedPolicy != speedPolicy {
		return invalid("lane_orientation.speed_policy", "%s is not the qualification's speed evidence policy %s", o.SpeedPolicy, speedPolicy)
	}
	if o.BaselineLane == o.CandidateLane {
		return invalid("lane_orientation.candidate_lane", "the baseline and the candidate read on one lane %s", o.BaselineLane)
	}
	return nil
}

// checkSortedSet requires a non-empty, strictly sorted list of non-empty
// names.
func checkSortedSet(names []string) error {
	if len(names) == 0 {
		return fmt.Errorf("empty")
	}
	for i, n := range names {
		if n == "" {
			return fmt.Errorf("[%d] is empty", i)
		}
		if i > 0 && names[i-1] >= n {
			return fmt.Errorf("%v is not sorted with each name once", names)
		}
	}
	return nil
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// overlaps reports whether two sorted sets share an element.
func overlaps(a, b []string) bool {
	for _, x := range a {
		if i := sort.SearchStrings(b, x); i < len(b) && b[i] == x {
			return true
		}
	}
	return false
}
