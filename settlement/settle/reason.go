package settle

import (
	"fmt"
	"strings"

	"github.com/cacheon/engine/internal/reject"
)

// Reason is a stable code naming the rule a pair, a plan row or a report
// broke. Codes are wire values: ledgers store them and operators grep for
// them, so they are never renamed. A code that concerns one field carries
// it after a colon ("reproduction_identity_mismatch:candidate_tree").
type Reason string

// Rejection reasons of one qualification, of a pair and of a report.
const (
	// ReasonInvalidField is a malformed field of one qualification.
	ReasonInvalidField Reason = "invalid_field"
	// ReasonSpeedupNotAboveOne is a speedup of 1 or less: no crown.
	ReasonSpeedupNotAboveOne Reason = "speedup_not_above_one"
	// ReasonSpeedupBelowPPM is a speedup above 1 whose ppm floor is
	// still 1,000,000: a standing claim needs speedup_ppm > 1,000,000.
	ReasonSpeedupBelowPPM Reason = "speedup_below_ppm_resolution"
	// ReasonOneQualification is a pair that is one qualification twice.
	ReasonOneQualification Reason = "one_qualification"
	// ReasonReproductionMismatch is a reproduction that is not of the
	// same candidate: one of the eight identity fields differs.
	ReasonReproductionMismatch Reason = "reproduction_identity_mismatch"
	// ReasonSharedAuthority is one of the seven authority and evidence
	// digests shared by both qualifications: they are not independent.
	ReasonSharedAuthority Reason = "shared_authority_digest"
	// ReasonValidatorSeedReused is an audited pair run under one seed.
	ReasonValidatorSeedReused Reason = "validator_seed_reused"
	// ReasonAuditEvidenceReused is an audited pair with one audit record.
	ReasonAuditEvidenceReused Reason = "audit_evidence_reused"
	// ReasonLaneOrientationMissing is a pair where one side carries a
	// lane orientation and the other does not.
	ReasonLaneOrientationMissing Reason = "lane_orientation_missing"
	// ReasonLaneOrientationMismatch is a pair whose orientations are
	// under different speed policies or lane controls.
	ReasonLaneOrientationMismatch Reason = "lane_orientation_mismatch"
	// ReasonLanesNotExchanged is a reproduction that did not swap the
	// baseline and candidate lanes.
	ReasonLanesNotExchanged Reason = "lanes_not_exchanged"
	// ReasonUnauditedWithoutLaneSwap is a pair with neither an audit nor
	// a lane orientation: nothing bounds what the candidate did.
	ReasonUnauditedWithoutLaneSwap Reason = "unaudited_without_lane_swap"

	// ReasonMissingField is a settlement field the qualification report
	// does not carry.
	ReasonMissingField Reason = "missing_field"
	// ReasonNotPassed is a report whose decision is not PASS.
	ReasonNotPassed Reason = "not_passed"
	// ReasonReportSchema is a report of another format.
	ReasonReportSchema Reason = "report_schema"
	// ReasonUncalibratedPolicy is a report graded under a speed policy
	// bound to the embedded "uncalibrated" calibration document: its
	// thresholds were never measured on any lane, so its PASS may be
	// noise and can never crown.
	ReasonUncalibratedPolicy Reason = "uncalibrated_policy"
)

// mismatch is the reason of a must-match field that differs:
// "<field>_mismatch".
func mismatch(field string) Reason { return Reason(field + "_mismatch") }

// on names the field a reason concerns.
func (r Reason) on(field string) Reason { return Reason(string(r) + ":" + field) }

// Base is the reason without its field ("shared_authority_digest" for
// "shared_authority_digest:plan").
func (r Reason) Base() Reason {
	base, _, _ := strings.Cut(string(r), ":")
	return Reason(base)
}

// Rejection is a refused qualification, pair or report: the reason code
// and a sentence saying what was found. It matches reject.ErrRejected, so
// the command line exits 2 on it.
type Rejection struct {
	Reason Reason
	Detail string
	// Missing lists every missing field of a report refusal, in the
	// order of the settlement record; Reason names the first.
	Missing []string
}

func (r *Rejection) Error() string {
	return fmt.Sprintf("settlement rejected (%s): %s", r.Reason, r.Detail)
}

// Is makes every settlement rejection a rejection of its input.
func (r *Rejection) Is(target error) bool { return target == reject.ErrRejected }

func rejectf(reason Reason, format string, args ...any) error {
	return &Rejection{Reason: reason, Detail: fmt.Sprintf(format, args...)}
}
