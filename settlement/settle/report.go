package settle

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/cacheon/engine/evaluator/qualify"
	"github.com/cacheon/engine/tools/canonjson"
)

// Intake is what settlement knows of a qualification from outside any
// qualification record: the reservation as the chain finalized it.
type Intake struct {
	Lane        Lane
	Arena       string
	Reservation string
	Finalized   Position
	Hotkey      string
}

// reportGaps are the settlement fields our qualification report does not
// carry yet, in record order. Each becomes a missing_field refusal until
// the report carries it; none is ever filled with a stand-in value.
// target_spec, proposal and transition are in the marginal arm plan,
// which the report names only by digest; members are the catalog
// target's; the authority, plan, attempt and selection digests come with
// the cohort attempt record, the audit fields with audit role A, and a
// lane orientation with the resident speed policy.
var reportGaps = []string{
	"target_spec", "members",
	"qualification_authority", "qualification_plan", "qualification_attempt",
	"selection_commitment", "selection_secret_commitment", "selection_evidence",
	"proposal", "transition",
	"audit_control", "audit_policy", "audit_evidence", "lane_orientation",
}

// FromReport maps a qualification report, as the evidence store keeps it
// (its canonical bytes, optionally followed by the newline report.json
// ends in), and the reservation it qualified to the
// settlement view. The report must be a PASS with a graded speedup.
//
// Our report does not carry every settlement field yet (see the package
// documentation for the mapping): FromReport then returns the fields it
// could map together with a *Rejection whose Reason is
// missing_field:<first missing> and whose Missing lists them all. The
// partial Qualification is for display only; Pair refuses it.
func FromReport(data []byte, in Intake) (Qualification, error) {
	r, err := qualify.ParseReport(data)
	if err != nil {
		return Qualification{}, rejectf(ReasonInvalidField.on("report"), "%v", err)
	}
	// The report digest is the evidence store's address of the report:
	// the SHA-256 of its canonical bytes. report.json is those bytes and
	// a newline. Anything else (a reformatted copy) would name a report
	// nobody can fetch. The bytes are canonicalized as they are, not
	// through the report type, so a report written by an older controller
	// (without fields added since) keeps its address.
	v, err := canonjson.Parse(bytes.TrimSuffix(data, []byte("\n")))
	if err != nil {
		return Qualification{}, rejectf(ReasonInvalidField.on("report"), "%v", err)
	}
	canonical, err := canonjson.Marshal(v)
	if err != nil {
		return Qualification{}, rejectf(ReasonInvalidField.on("report"), "%v", err)
	}
	// A field the report type does not know is a report from a newer
	// controller than this settler: refused rather than half read.
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(new(qualify.Report)); err != nil {
		return Qualification{}, rejectf(ReasonInvalidField.on("report"), "the report is not one this settler reads: %v", err)
	}
	if !bytes.Equal(canonical, bytes.TrimSuffix(data, []byte("\n"))) {
		return Qualification{}, rejectf(ReasonInvalidField.on("report"), "the report is not in its canonical form, as the evidence store keeps it")
	}
	if r.Schema != qualify.ReportSchema {
		return Qualification{}, rejectf(ReasonReportSchema, "report schema %q, want %q", r.Schema, qualify.ReportSchema)
	}
	if r.Decision != qualify.Pass {
		return Qualification{}, rejectf(ReasonNotPassed, "the qualification decided %s (%s)", r.Decision, r.Reason)
	}
	if r.Speed == nil || r.Speed.Decision != qualify.Pass || r.Speed.Speedup == "" {
		return Qualification{}, rejectf(ReasonNotPassed.on("speed"), "the report has no passing, graded speed stage")
	}
	sum := sha256.Sum256(canonical)
	q := Qualification{
		Lane: in.Lane, Arena: in.Arena, Reservation: in.Reservation, Finalized: in.Finalized, Hotkey: in.Hotkey,
		TargetID:            r.Inputs.TargetID,
		SelectedDelta:       r.Inputs.SelectedDelta,
		Report:              hex.EncodeToString(sum[:]),
		Arm:                 r.Inputs.MarginalArmPlan,
		IncumbentStack:      r.Inputs.IncumbentStack,
		IncumbentTree:       r.Inputs.IncumbentTree,
		CandidateStack:      r.Inputs.CandidateStack,
		CandidateTree:       r.Inputs.CandidateTree,
		Speedup:             r.Speed.Speedup,
		SpeedEvidencePolicy: r.Inputs.Policy,
	}
	var missing []string
	for _, f := range []namedValue{{"target_id", q.TargetID}, {"selected_delta", q.SelectedDelta}, {"arm", q.Arm},
		{"incumbent_stack", q.IncumbentStack}, {"incumbent_tree", q.IncumbentTree},
		{"candidate_stack", q.CandidateStack}, {"candidate_tree", q.CandidateTree}, {"speed_evidence_policy", q.SpeedEvidencePolicy}} {
		if f.value == "" {
			missing = append(missing, f.name)
		}
	}
	missing = append(missing, reportGaps...)
	if len(missing) > 0 {
		return q, &Rejection{
			Reason:  ReasonMissingField.on(missing[0]),
			Detail:  fmt.Sprintf("the qualification report does not carry %s", strings.Join(missing, ", ")),
			Missing: missing,
		}
	}
	if _, err := q.Validate(); err != nil {
		return q, err
	}
	return q, nil
}
