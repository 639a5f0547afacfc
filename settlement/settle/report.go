package settle

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/cacheon/engine/evaluator/qualify"
	"github.com/cacheon/engine/internal/canonjson"
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

// FromReport maps a qualification report, as the evidence store keeps it
// (its canonical bytes, optionally followed by the newline report.json
// ends in), and the reservation it qualified to the
// settlement view. The report must be a PASS with a graded speedup.
//
// A report that lacks a field settlement needs (a report of an older
// controller: schema v1 carries none of the attempt, transition, audit,
// selection and lane fields) maps to the fields it carries, returned with
// a *Rejection whose Reason is missing_field:<first missing> and whose
// Missing lists them all, in record order. The partial Qualification is
// for display only; Pair refuses it. Nothing missing is ever filled with
// a stand-in value.
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
	if r.Schema != qualify.ReportSchema && r.Schema != qualify.ReportSchemaV1 {
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
		AuditControl:        r.AuditControl,
	}
	transition := false
	if t := r.Transition; t != nil {
		q.TargetSpec, q.Members, q.Proposal = t.TargetSpec, append([]string(nil), t.Members...), t.Proposal
		q.Transition = Transition{Prior: t.Prior, Displaced: []Displaced{}}
		for _, d := range t.Displaced {
			q.Transition.Displaced = append(q.Transition.Displaced, Displaced{TargetID: d.TargetID, Entry: d.Entry})
		}
		transition = true
	}
	if a := r.Attempt; a != nil {
		q.Authority, q.Plan, q.Attempt = a.Authority, a.Plan, a.Digest
		q.SelectionCommitment, q.SelectionSecretCommitment = a.SelectionCommitment, a.SelectionSecretCommitment
	}
	if r.Quality != nil {
		q.SelectionEvidence = r.Quality.SelectionReceipt
	}
	if p := r.AuditPolicy; p != nil {
		q.AuditPolicy = &AuditPolicy{ValidatorSeed: p.ValidatorSeed, SampleRatePPM: p.SampleRatePPM, MinCalls: p.MinCalls,
			ExpectedSlots: append([]string(nil), p.ExpectedSlots...), TPSize: p.TPSize}
	}
	if r.Audit != nil {
		q.AuditEvidence = r.Audit.SHA256
	}
	if o := r.LaneOrientation; o != nil {
		q.LaneOrientation = &LaneOrientation{SpeedPolicy: o.SpeedPolicy, Control: o.Control, BaselineLane: o.BaselineLane, CandidateLane: o.CandidateLane}
	}
	// Every field in record order. Our qualification audits every speed
	// PASS, so a passing report without its audit record lacks it. A v2
	// report without a lane orientation says its roles read on one
	// device (none to claim); a v1 report never said.
	var missing []string
	for _, f := range []struct {
		name    string
		present bool
	}{
		{"target_id", q.TargetID != ""}, {"target_spec", q.TargetSpec != ""}, {"members", len(q.Members) > 0},
		{"selected_delta", q.SelectedDelta != ""},
		{"qualification_authority", q.Authority != ""}, {"qualification_plan", q.Plan != ""}, {"qualification_attempt", q.Attempt != ""},
		{"selection_commitment", q.SelectionCommitment != ""}, {"selection_secret_commitment", q.SelectionSecretCommitment != ""},
		{"selection_evidence", q.SelectionEvidence != ""},
		{"arm", q.Arm != ""}, {"incumbent_stack", q.IncumbentStack != ""}, {"incumbent_tree", q.IncumbentTree != ""},
		{"candidate_stack", q.CandidateStack != ""}, {"candidate_tree", q.CandidateTree != ""},
		{"proposal", q.Proposal != ""}, {"transition", transition}, {"speed_evidence_policy", q.SpeedEvidencePolicy != ""},
		{"audit_control", q.AuditControl != ""}, {"audit_policy", q.AuditPolicy != nil}, {"audit_evidence", q.AuditEvidence != ""},
		{"lane_orientation", r.Schema != qualify.ReportSchemaV1},
	} {
		if !f.present {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return q, &Rejection{
			Reason:  ReasonMissingField.on(missing[0]),
			Detail:  fmt.Sprintf("the qualification report (%s) does not carry %s", r.Schema, strings.Join(missing, ", ")),
			Missing: missing,
		}
	}
	if r.Inputs.Calibration == qualify.UncalibratedDigest() {
		return q, rejectf(ReasonUncalibratedPolicy, "the speed policy is bound to the embedded uncalibrated calibration document %s: "+
			"run `cacheon qualify calibrate` on the lanes and qualify under a policy naming that calibration", r.Inputs.Calibration)
	}
	if _, err := q.Validate(); err != nil {
		return q, err
	}
	return q, nil
}
