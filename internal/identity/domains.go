package identity

// Every domain-separation string of the system, declared once. The strings
// are stable wire identifiers shared with the upstream toolchain: changing
// one changes every identity of its kind, so they are never renamed, only
// added. docs/reference/identity.md's domain table is generated from
// Domains (go test ./internal/identity -run TestDomainTableIsCurrent -update).

// Catalog identities (package catalog).
const (
	DomainTargetContract           Domain = "cacheon.target-contract"
	DomainAtomicTargetContract     Domain = "cacheon.atomic-target-contract"
	DomainTargetSpec               Domain = "cacheon.target-spec"
	DomainBindingContract          Domain = "cacheon.binding-contract"
	DomainTargetCatalog            Domain = "cacheon.target-catalog"
	DomainArtifactProviderRegistry Domain = "cacheon.artifact-provider-registry"
)

// Contribution identities (packages kernels/contribution, release/review,
// tools/cli).
const (
	DomainSelectedPayload Domain = "cacheon.contribution.selected-payload"
	// The underscore is upstream's spelling of this one domain; it is the
	// stable wire id, not a typo to fix.
	DomainSelectedDelta        Domain = "cacheon.contribution.selected_delta"
	DomainProposal             Domain = "cacheon.contribution.proposal"
	DomainIntegrated           Domain = "cacheon.contribution.integrated"
	DomainIntegratedSourceTree Domain = "cacheon.integrated-source-tree"
	DomainIntegrationReview    Domain = "cacheon.contribution.integration-review"
	// The attribution of a candidate checked locally, outside any market
	// intake: derived from the bundle alone, it never credits anyone.
	DomainLocalAttribution Domain = "cacheon.contribution.local-attribution.v1"
	// A contribution's selected delta with comments, docstrings and
	// formatting normalized away (kernels/fingerprint): the anti-copy
	// identity that survives a reformatted copy.
	DomainNormalizedDelta Domain = "cacheon.contribution.normalized-delta.v1"
)

// Stack and engine-tree identities (packages stacks/...).
const (
	DomainStackEvaluation           Domain = "cacheon.stack.evaluation"
	DomainStackRelease              Domain = "cacheon.stack.release"
	DomainReferenceManifest         Domain = "cacheon.qualification.reference-manifest"
	DomainReferenceManifestMeasured Domain = "cacheon.qualification.reference-manifest-measured"
	DomainMarginalArmPlan           Domain = "cacheon.stack.marginal-arm-plan"
	DomainMaterializedEngineTree    Domain = "cacheon.materialized-engine-tree"
	DomainSubstrateBaseEngine       Domain = "cacheon.substrate.base-engine"
	DomainSubstrateRuntime          Domain = "cacheon.substrate.runtime"
	DomainArenaDescriptor           Domain = "cacheon.arena.descriptor"
)

// Release and model identities (packages release/descriptor, models).
const (
	DomainEngineReleaseDescriptor Domain = "cacheon.engine-release.descriptor"
	DomainModelContent            Domain = "cacheon.model-content"
	DomainModelProvisionReceipt   Domain = "cacheon.model-provision-receipt"
)

// Qualification identities (packages evaluator/...).
const (
	DomainResidentSpeedPolicy Domain = "cacheon.qualification.resident-speed-policy"
	DomainMarginalWorkload    Domain = "cacheon.qualification.marginal-workload.v1"
	DomainEngineConfig        Domain = "cacheon.qualification.engine-config"
	DomainCalibration         Domain = "cacheon.qualification.calibration"
	DomainAuditSeed           Domain = "cacheon.qualification.audit-seed.v1"
	DomainAuditSecret         Domain = "cacheon.qualification.audit-secret.v1"
	DomainVerifySeed          Domain = "cacheon.qualification.verify-seed.v1"
	DomainPrebuildArtifact    Domain = "cacheon.prebuild.artifact"
	// The pristine reference T's prompt selection (evaluator/quality):
	// the commitment sealed before execution, the per-prompt ranking key
	// of the reveal, the receipt of what was revealed, and one prompt's
	// identity in the pool.
	DomainSelectionCommitment Domain = "cacheon.qualification.selection-commitment"
	DomainSelectionKey        Domain = "cacheon.qualification.selection-key"
	DomainSelectionReceipt    Domain = "cacheon.qualification.selection-receipt"
	DomainSelectionPrompt     Domain = "cacheon.qualification.selection-prompt"
	// A quality calibration: stock-versus-stock teacher-forced rounds and
	// the familywise thresholds they support.
	DomainQualityCalibration Domain = "cacheon.qualification.quality-calibration"
	// The attempt record settlement pairs on (evaluator/qualify): the
	// authority that ran a qualification, the experiment it planned, this
	// attempt of it, a lane's devices and the lane control two
	// orientations share, and the audit control two audits share.
	DomainQualificationAuthority Domain = "cacheon.qualification.authority.v1"
	DomainQualificationPlan      Domain = "cacheon.qualification.plan.v1"
	DomainQualificationAttempt   Domain = "cacheon.qualification.attempt.v1"
	DomainQualificationLane      Domain = "cacheon.qualification.lane.v1"
	DomainLaneControl            Domain = "cacheon.qualification.lane-control.v1"
	DomainAuditControl           Domain = "cacheon.qualification.audit-control.v1"
)

// Settlement and economics identities (packages settlement/...).
const (
	DomainSettlementEvent                Domain = "cacheon.settlement.event"
	DomainSettlementPlan                 Domain = "cacheon.settlement.plan"
	DomainSettlementReproductionIdentity Domain = "cacheon.settlement.reproduction-identity"
	DomainSettlementEvidence             Domain = "cacheon.settlement.evidence"
	DomainSettlementReservation          Domain = "cacheon.settlement.reservation.v1"
	// An operator's correction of an intake verdict (a copy verdict
	// cleared before settlement), chained apart from settlement events.
	DomainIntakeEvent Domain = "cacheon.intake.event"
	// One write's bound ledger rows (the bytes of every row that decides a
	// payout), in the ledger's row record chain.
	DomainLedgerRecord Domain = "cacheon.ledger.record"
	// One step of an evaluation lease on a proposal (taken, released,
	// reclaimed), in the ledger's lease hash chain.
	DomainLeaseEvent      Domain = "cacheon.ledger.lease"
	DomainEconomicsPolicy Domain = "cacheon.economics.policy"
	DomainStandingFamily  Domain = "cacheon.economics.standing-family"
	DomainStandingClaim   Domain = "cacheon.economics.standing-claim"
	DomainDiscoveryClaim  Domain = "cacheon.economics.discovery-claim"
)

// DomainInfo describes one declared domain for the reference table.
type DomainInfo struct {
	Domain  Domain
	Name    string // the Go constant
	Owner   string // the package that computes identities of this kind
	Payload string // what the payload is, in a few words
}

// Domains lists every declared domain in table order. A test checks that it
// names each constant of this file exactly once.
func Domains() []DomainInfo {
	return []DomainInfo{
		{DomainTargetContract, "DomainTargetContract", "catalog", "a slot target's contract projection"},
		{DomainAtomicTargetContract, "DomainAtomicTargetContract", "catalog", "an atomic target's member contract digests"},
		{DomainTargetSpec, "DomainTargetSpec", "catalog", "one target row of the catalog snapshot"},
		{DomainBindingContract, "DomainBindingContract", "catalog", "a composition rule's binding contract"},
		{DomainTargetCatalog, "DomainTargetCatalog", "catalog", "the whole catalog snapshot"},
		{DomainArtifactProviderRegistry, "DomainArtifactProviderRegistry", "catalog", "the artifact-provider registry"},
		{DomainSelectedPayload, "DomainSelectedPayload", "kernels/contribution", "the files a contribution's selected rows reach"},
		{DomainSelectedDelta, "DomainSelectedDelta", "kernels/contribution", "a selected payload bound to its target and target spec"},
		{DomainProposal, "DomainProposal", "kernels/contribution", "a proposal reference"},
		{DomainIntegrated, "DomainIntegrated", "kernels/contribution", "an integrated contribution reference"},
		{DomainIntegratedSourceTree, "DomainIntegratedSourceTree", "kernels/contribution", "an integrated contribution's file inventory"},
		{DomainIntegrationReview, "DomainIntegrationReview", "release/review", "an integration review record"},
		{DomainLocalAttribution, "DomainLocalAttribution", "tools/cli", "the stand-in attribution of a candidate planned without --attribution"},
		{DomainNormalizedDelta, "DomainNormalizedDelta", "kernels/fingerprint", "a selected delta with comments, docstrings and formatting normalized away"},
		{DomainStackEvaluation, "DomainStackEvaluation", "stacks/stack", "an evaluation stack manifest"},
		{DomainStackRelease, "DomainStackRelease", "stacks/stack", "an engine release manifest"},
		{DomainReferenceManifest, "DomainReferenceManifest", "stacks/stack", "a qualification reference manifest"},
		{DomainReferenceManifestMeasured, "DomainReferenceManifestMeasured", "stacks/stack", "a reference manifest without its controller and launch fields"},
		{DomainMarginalArmPlan, "DomainMarginalArmPlan", "stacks/plan", "a candidate's marginal arm plan"},
		{DomainMaterializedEngineTree, "DomainMaterializedEngineTree", "stacks/materialize", "a materialized engine tree's file inventory"},
		{DomainSubstrateBaseEngine, "DomainSubstrateBaseEngine", "stacks/*.hcl (cacheon digest)", "the substrate descriptor `stacks/substrate.json`"},
		{DomainSubstrateRuntime, "DomainSubstrateRuntime", "stacks/*.hcl (cacheon digest)", "the runtime descriptor `stacks/runtime.json`"},
		{DomainArenaDescriptor, "DomainArenaDescriptor", "stacks/*.hcl (cacheon digest)", "the arena descriptor `stacks/arena.json`"},
		{DomainResidentSpeedPolicy, "DomainResidentSpeedPolicy", "evaluator/speed", "a resident speed policy (v7, v8, v9) with its read order and timing"},
		{DomainMarginalWorkload, "DomainMarginalWorkload", "evaluator/workload", "a qualification workload: prompt batches and read structure"},
		{DomainEngineConfig, "DomainEngineConfig", "evaluator/workload", "the engine configuration every arm is served with"},
		{DomainCalibration, "DomainCalibration", "evaluator/qualify", "stock-versus-stock rounds on a machine's lanes and the thresholds they support"},
		{DomainAuditSeed, "DomainAuditSeed", "evaluator/audit", "the audit seed's prefix: SHA-256 over it, NUL, the validator secret and the selected delta"},
		{DomainAuditSecret, "DomainAuditSecret", "evaluator/audit", "the commitment to the audit's validator secret: SHA-256 over it, NUL and the secret"},
		{DomainVerifySeed, "DomainVerifySeed", "evaluator/audit", "the ABI screen's input seed: SHA-256 over it, NUL, the validator secret and the selected delta"},
		{DomainPrebuildArtifact, "DomainPrebuildArtifact", "evaluator/prebuild", "a sealed prebuild artifact's inventory: the native libraries compiled from declared CUDA sources"},
		{DomainSelectionCommitment, "DomainSelectionCommitment", "evaluator/quality", "the prompt selection sealed before execution"},
		{DomainSelectionKey, "DomainSelectionKey", "evaluator/quality", "one prompt's ranking key in the selection reveal"},
		{DomainSelectionReceipt, "DomainSelectionReceipt", "evaluator/quality", "the revealed selection: entropy, secret and the selected prompts"},
		{DomainSelectionPrompt, "DomainSelectionPrompt", "evaluator/quality", "one prompt of the selection pool (its token ids)"},
		{DomainQualityCalibration, "DomainQualityCalibration", "evaluator/quality", "stock-versus-stock teacher-forced rounds and the quality thresholds they support"},
		{DomainQualificationAuthority, "DomainQualificationAuthority", "evaluator/qualify", "the authority that ran a qualification: the controller binary and the commitment to its audit secret"},
		{DomainQualificationPlan, "DomainQualificationPlan", "evaluator/qualify", "the experiment a qualification planned: authority, marginal arm plan, model, workload, speed policy, lanes, the report it reproduces"},
		{DomainQualificationAttempt, "DomainQualificationAttempt", "evaluator/qualify", "one attempt of a plan: its start and the selection and audit secrets it committed to"},
		{DomainQualificationLane, "DomainQualificationLane", "evaluator/qualify", "the devices of one lane (device kind and GPU UUIDs)"},
		{DomainLaneControl, "DomainLaneControl", "evaluator/qualify", "what two lane orientations of one candidate share: speed policy, workload, model"},
		{DomainAuditControl, "DomainAuditControl", "evaluator/audit", "what two audits of one candidate share: the audit policy without its seed, and the audit prompt and schedule"},
		{DomainSettlementEvent, "DomainSettlementEvent", "settlement/...", "one settlement event of the hash chain"},
		{DomainSettlementPlan, "DomainSettlementPlan", "settlement/...", "a settlement plan over the queued candidates"},
		{DomainSettlementReproductionIdentity, "DomainSettlementReproductionIdentity", "settlement/...", "what two qualifications of one candidate must share"},
		{DomainSettlementEvidence, "DomainSettlementEvidence", "settlement/apply", "the two attempts a crown settled on, retained with its standing claim"},
		{DomainSettlementReservation, "DomainSettlementReservation", "settlement/evaluate", "a ledger proposal's reservation: arena, finalized position, hotkey and committed content hash"},
		{DomainIntakeEvent, "DomainIntakeEvent", "settlement/ledger", "one operator correction of an intake verdict, in the intake hash chain"},
		{DomainLedgerRecord, "DomainLedgerRecord", "settlement/ledger", "the bound rows one ledger write left, in the row record chain"},
		{DomainLeaseEvent, "DomainLeaseEvent", "settlement/ledger", "one step of an evaluation lease on a proposal (taken, released, reclaimed), in the lease hash chain"},
		{DomainEconomicsPolicy, "DomainEconomicsPolicy", "settlement/weights", "an emissions policy (V1)"},
		{DomainStandingFamily, "DomainStandingFamily", "settlement/weights", "the (arena, target, target spec) family of a standing claim"},
		{DomainStandingClaim, "DomainStandingClaim", "settlement/weights", "a standing claim of a crown"},
		{DomainDiscoveryClaim, "DomainDiscoveryClaim", "settlement/weights", "a discovery bounty claim"},
		{DomainEngineReleaseDescriptor, "DomainEngineReleaseDescriptor", "release/descriptor", "a release descriptor"},
		{DomainModelContent, "DomainModelContent", "models", "a model directory's file inventory"},
		{DomainModelProvisionReceipt, "DomainModelProvisionReceipt", "models", "a model provision receipt"},
	}
}
