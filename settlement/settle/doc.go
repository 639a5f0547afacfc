// Package settle holds the pure rules of settlement: when two
// qualifications make one candidate, and what a set of candidates does to
// the evaluation stack. It reads nothing and writes nothing; the ledger
// persists what it decides.
//
// # Two qualifications, one candidate
//
// Pair accepts two passing qualifications of one candidate only when they
// are independent reproductions of each other: the same reproduction
// identity (arena, target, selected delta, hotkey, incumbent and
// candidate stacks and trees), the same reservation, finalized position,
// members, target spec, arm, proposal, transition, speed evidence policy
// and audit control, and none of the seven authority and evidence
// digests in common (authority, plan, attempt, report, selection
// commitment, selection-secret commitment, selection evidence). An
// audited pair ran under two validator seeds with two audit records; a
// pair with resident speed evidence read the baseline and the candidate
// on exchanged lanes; a pair with neither an audit nor a lane swap is
// refused. The candidate's speedup is the smaller of the two, compared
// exactly as decimals.
//
// # The plan
//
// Plan takes the candidates and the current evaluation stack and tree.
// Stale rows hold, current discovery rows earn a bounty, and one current
// registered row wins: the greatest conservative speedup, ties going to
// the earliest in finalized order. Its events (CROWN, RETIREMENT,
// NEUTRALIZATION, ADOPTION, STACK_TRANSITION) form a hash chain whose
// digests a ledger recomputes from the stored bodies (Event.Body,
// EventDigest); the plan has its own digest and the crown's standing
// claim.
//
// Every refusal is a *Rejection carrying a stable Reason code and
// matching internal/reject.ErrRejected; docs/reference/settlement.md lists
// the codes.
//
// # From a qualification report
//
// FromReport maps the report `cacheon qualify` writes
// (evaluator/qualify.Report, as the evidence store keeps it) and the
// reservation (Intake) onto a Qualification:
//
//	lane, arena, reservation, finalized, hotkey   Intake (the chain's reservation)
//	target_id, selected_delta  inputs.target_id, inputs.selected_delta
//	target_spec, members       transition.target_spec, transition.members
//	qualification_authority, _plan, _attempt   attempt.authority, attempt.plan, attempt.digest
//	qualification_report       SHA-256 of the report's canonical bytes (its evidence address)
//	selection_commitment, selection_secret_commitment   attempt.selection_commitment, attempt.selection_secret_commitment
//	selection_evidence         quality.selection_receipt
//	arm                        inputs.marginal_arm_plan
//	incumbent_stack, _tree     inputs.incumbent_stack, inputs.incumbent_tree
//	candidate_stack, _tree     inputs.candidate_stack, inputs.candidate_tree
//	speedup                    speed.speedup (a PASS speed stage)
//	proposal, transition       transition.proposal, transition.prior and .displaced
//	speed_evidence_policy      inputs.speed_policy
//	audit_control, audit_policy, audit_evidence   audit_control, audit_policy, audit.sha256
//	lane_orientation           lane_orientation (null: one device held both lanes)
//
// A field the report does not carry (a v1 report carries none of the
// attempt, transition, audit, selection and lane fields) is a
// missing_field:<field> refusal listing every missing field, never a
// stand-in value. docs/reference/settlement.md defines the authority,
// plan and attempt digests and why.
package settle
