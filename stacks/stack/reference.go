package stack

import (
	"fmt"

	"github.com/cacheon/engine/internal/identity"
)

// ReferenceManifest pins everything the pristine reference T of a
// qualification runs on: the empty (candidate-free) evaluation stack and
// its engine tree and launch, the substrate, arena and catalog it binds,
// and the model, hardware, workload and judging inputs of the measurement.
type ReferenceManifest struct {
	PristineStackDigest          identity.Digest `json:"pristine_stack_digest"`
	PristineTreeDigest           identity.Digest `json:"pristine_tree_digest"`
	PristineLaunchDigest         identity.Digest `json:"pristine_launch_digest"`
	RuntimeDigest                identity.Digest `json:"runtime_digest"`
	BaseEngineDigest             identity.Digest `json:"base_engine_digest"`
	ArenaDigest                  identity.Digest `json:"arena_digest"`
	CatalogDigest                identity.Digest `json:"catalog_digest"`
	ControllerDistributionDigest identity.Digest `json:"controller_distribution_digest"`
	WorkerDistributionDigest     identity.Digest `json:"worker_distribution_digest"`
	ModelRevisionDigest          identity.Digest `json:"model_revision_digest"`
	ModelManifestDigest          identity.Digest `json:"model_manifest_digest"`
	ModelContentDigest           identity.Digest `json:"model_content_digest"`
	LogicalHardwareDigest        identity.Digest `json:"logical_hardware_digest"`
	WorkloadDigest               identity.Digest `json:"workload_digest"`
	TokenizerDigest              identity.Digest `json:"tokenizer_digest"`
	HiddenCorpusCommitmentDigest identity.Digest `json:"hidden_corpus_commitment_digest"`
	HiddenJudgeDigest            identity.Digest `json:"hidden_judge_digest"`
	SelectionPolicyDigest        identity.Digest `json:"selection_policy_digest"`
}

// ReferenceInputs are the measurement inputs of a reference manifest that
// the pristine stack itself does not carry.
type ReferenceInputs struct {
	PristineLaunchDigest         identity.Digest
	ControllerDistributionDigest identity.Digest
	WorkerDistributionDigest     identity.Digest
	ModelRevisionDigest          identity.Digest
	ModelManifestDigest          identity.Digest
	ModelContentDigest           identity.Digest
	LogicalHardwareDigest        identity.Digest
	WorkloadDigest               identity.Digest
	TokenizerDigest              identity.Digest
	HiddenCorpusCommitmentDigest identity.Digest
	HiddenJudgeDigest            identity.Digest
	SelectionPolicyDigest        identity.Digest
}

// NewReferenceManifest builds the reference manifest of a pristine
// evaluation stack materialized as the tree pristineTreeDigest. The stack
// must be empty: a reference that ran any contribution would measure that
// contribution, not the stock engine.
func NewReferenceManifest(pristine *EvaluationStackManifest, pristineTreeDigest identity.Digest, in ReferenceInputs) (*ReferenceManifest, error) {
	if pristine == nil {
		return nil, fmt.Errorf("reference manifest: no pristine stack")
	}
	if n := len(pristine.Entries); n != 0 {
		return nil, fmt.Errorf("reference manifest: the pristine stack must be empty, it has %d entries (%s)", n, joinTargets(pristine.Entries))
	}
	stackDigest, err := pristine.Digest()
	if err != nil {
		return nil, fmt.Errorf("reference manifest: %w", err)
	}
	r := &ReferenceManifest{
		PristineStackDigest:          stackDigest,
		PristineTreeDigest:           pristineTreeDigest,
		PristineLaunchDigest:         in.PristineLaunchDigest,
		RuntimeDigest:                pristine.RuntimeDigest,
		BaseEngineDigest:             pristine.BaseEngineDigest,
		ArenaDigest:                  pristine.ArenaDigest,
		CatalogDigest:                pristine.CatalogDigest,
		ControllerDistributionDigest: in.ControllerDistributionDigest,
		WorkerDistributionDigest:     in.WorkerDistributionDigest,
		ModelRevisionDigest:          in.ModelRevisionDigest,
		ModelManifestDigest:          in.ModelManifestDigest,
		ModelContentDigest:           in.ModelContentDigest,
		LogicalHardwareDigest:        in.LogicalHardwareDigest,
		WorkloadDigest:               in.WorkloadDigest,
		TokenizerDigest:              in.TokenizerDigest,
		HiddenCorpusCommitmentDigest: in.HiddenCorpusCommitmentDigest,
		HiddenJudgeDigest:            in.HiddenJudgeDigest,
		SelectionPolicyDigest:        in.SelectionPolicyDigest,
	}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return r, nil
}

type referenceField struct {
	name  string
	value identity.Digest
}

func (r *ReferenceManifest) fields() []referenceField {
	return []referenceField{
		{"pristine_stack_digest", r.PristineStackDigest},
		{"pristine_tree_digest", r.PristineTreeDigest},
		{"pristine_launch_digest", r.PristineLaunchDigest},
		{"runtime_digest", r.RuntimeDigest},
		{"base_engine_digest", r.BaseEngineDigest},
		{"arena_digest", r.ArenaDigest},
		{"catalog_digest", r.CatalogDigest},
		{"controller_distribution_digest", r.ControllerDistributionDigest},
		{"worker_distribution_digest", r.WorkerDistributionDigest},
		{"model_revision_digest", r.ModelRevisionDigest},
		{"model_manifest_digest", r.ModelManifestDigest},
		{"model_content_digest", r.ModelContentDigest},
		{"logical_hardware_digest", r.LogicalHardwareDigest},
		{"workload_digest", r.WorkloadDigest},
		{"tokenizer_digest", r.TokenizerDigest},
		{"hidden_corpus_commitment_digest", r.HiddenCorpusCommitmentDigest},
		{"hidden_judge_digest", r.HiddenJudgeDigest},
		{"selection_policy_digest", r.SelectionPolicyDigest},
	}
}

// Validate checks that every field is a 64-hex digest other than zero.
func (r *ReferenceManifest) Validate() error {
	for _, f := range r.fields() {
		if err := identity.CheckField(f.name, f.value, false); err != nil {
			return fmt.Errorf("reference manifest: %w", err)
		}
	}
	return nil
}

// Digest is H(cacheon.qualification.reference-manifest, all 18 fields).
func (r *ReferenceManifest) Digest() (identity.Digest, error) {
	if err := r.Validate(); err != nil {
		return identity.Digest{}, err
	}
	return identity.H(identity.DomainReferenceManifest, r)
}

// MeasuredDigest identifies what the reference measures: every field
// except the controller distribution and the pristine launch, so that a
// change of controller code alone keeps calibrations valid.
func (r *ReferenceManifest) MeasuredDigest() (identity.Digest, error) {
	if err := r.Validate(); err != nil {
		return identity.Digest{}, err
	}
	payload := map[string]identity.Digest{}
	for _, f := range r.fields() {
		if f.name == "controller_distribution_digest" || f.name == "pristine_launch_digest" {
			continue
		}
		payload[f.name] = f.value
	}
	return identity.H(identity.DomainReferenceManifestMeasured, payload)
}
