package contribution

import (
	"fmt"

	"github.com/cacheon/engine/internal/identity"
)

// Reference kinds, as stack entries name them.
const (
	KindProposal   = "proposal"
	KindIntegrated = "integrated"
)

const refSchemaVersion = 1

// ProposalRef names a bundle as proposed: its content hash
// (artifact_digest), the target it resolved to and what it selects. It is
// what an evaluation stack holds for an unreviewed contribution.
type ProposalRef struct {
	Type                  string          `json:"type"` // always "proposal"
	SchemaVersion         int             `json:"schema_version"`
	TargetID              string          `json:"target_id"`
	TargetSpecDigest      identity.Digest `json:"target_spec_digest"`
	ArtifactDigest        identity.Digest `json:"artifact_digest"`
	SelectedPayloadDigest identity.Digest `json:"selected_payload_digest"`
	AttributionDigest     identity.Digest `json:"attribution_digest"`
}

// NewProposalRef binds an inspected, registered bundle to the attribution
// evidence of its intake (who proposed it, where it was published). The
// bundle's content hash becomes the artifact digest.
func NewProposalRef(in *Inspection, attributionDigest identity.Digest) (*ProposalRef, error) {
	if in == nil || !in.Registered() {
		return nil, fmt.Errorf("proposal: bundle does not resolve to a registered target")
	}
	r := &ProposalRef{
		Type: KindProposal, SchemaVersion: refSchemaVersion,
		TargetID: in.Target.TargetID, TargetSpecDigest: in.Target.TargetSpecDigest,
		ArtifactDigest: in.ContentHash, SelectedPayloadDigest: in.SelectedPayloadDigest,
		AttributionDigest: attributionDigest,
	}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return r, nil
}

// Validate checks the reference's fields alone.
func (r *ProposalRef) Validate() error {
	if r.Type != KindProposal {
		return fmt.Errorf("proposal ref: type %q, want %q", r.Type, KindProposal)
	}
	if r.SchemaVersion != refSchemaVersion {
		return fmt.Errorf("proposal ref: schema_version %d, want %d", r.SchemaVersion, refSchemaVersion)
	}
	if r.TargetID == "" {
		return fmt.Errorf("proposal ref: empty target_id")
	}
	for _, f := range []struct {
		name string
		v    identity.Digest
	}{
		{"target_spec_digest", r.TargetSpecDigest}, {"artifact_digest", r.ArtifactDigest},
		{"selected_payload_digest", r.SelectedPayloadDigest}, {"attribution_digest", r.AttributionDigest},
	} {
		if err := identity.CheckField(f.name, f.v, false); err != nil {
			return fmt.Errorf("proposal ref: %w", err)
		}
	}
	return nil
}

// RefKind is "proposal".
func (r *ProposalRef) RefKind() string { return KindProposal }

// RefTarget returns the target id and target-spec digest.
func (r *ProposalRef) RefTarget() (string, identity.Digest) { return r.TargetID, r.TargetSpecDigest }

// RefDigest is H(cacheon.contribution.proposal, ref).
func (r *ProposalRef) RefDigest() (identity.Digest, error) {
	if err := r.Validate(); err != nil {
		return identity.Digest{}, err
	}
	return identity.H(identity.DomainProposal, r)
}

// SelectedDelta is the delta the proposal contributes at its target.
func (r *ProposalRef) SelectedDelta() (identity.Digest, error) {
	return SelectedDelta(r.SelectedPayloadDigest, r.TargetID, r.TargetSpecDigest)
}

// IntegratedRef names reviewed source integrated into the project: its
// integrated source tree digest, the payload it selects (equal to the
// crowned proposal's) and the integration review record it derives from.
// Only integrated refs may enter a release stack.
type IntegratedRef struct {
	Type                       string          `json:"type"` // always "integrated"
	SchemaVersion              int             `json:"schema_version"`
	TargetID                   string          `json:"target_id"`
	TargetSpecDigest           identity.Digest `json:"target_spec_digest"`
	IntegratedSourceTreeDigest identity.Digest `json:"integrated_source_tree_digest"`
	SelectedPayloadDigest      identity.Digest `json:"selected_payload_digest"`
	AttributionDigest          identity.Digest `json:"attribution_digest"`
	IntegrationRecordDigest    identity.Digest `json:"integration_record_digest"`
}

// IntegrationRecord is the evidence an integrated contribution derives
// from: an approved integration review of a crowned proposal. The review
// package owns the record and its checks (crown, settlement, reviewed
// commit); this package only reads the fields an IntegratedRef carries.
type IntegrationRecord interface {
	// Digest is the record's own identity.
	Digest() (identity.Digest, error)
	// Approved reports whether the review approved the integration.
	Approved() bool
	TargetID() string
	TargetSpecDigest() identity.Digest
	IntegratedSourceTreeDigest() identity.Digest
	SelectedPayloadDigest() identity.Digest
	AttributionDigest() identity.Digest
}

// IntegratedRefFromRecord derives the one integrated reference an
// approved integration review record names. There is deliberately no
// constructor from a ProposalRef: integration needs the review.
func IntegratedRefFromRecord(rec IntegrationRecord) (*IntegratedRef, error) {
	if rec == nil {
		return nil, fmt.Errorf("integrated ref: no integration record")
	}
	if !rec.Approved() {
		return nil, fmt.Errorf("integrated ref: integration record is not approved")
	}
	d, err := rec.Digest()
	if err != nil {
		return nil, fmt.Errorf("integrated ref: integration record: %w", err)
	}
	r := &IntegratedRef{
		Type: KindIntegrated, SchemaVersion: refSchemaVersion,
		TargetID: rec.TargetID(), TargetSpecDigest: rec.TargetSpecDigest(),
		IntegratedSourceTreeDigest: rec.IntegratedSourceTreeDigest(),
		SelectedPayloadDigest:      rec.SelectedPayloadDigest(),
		AttributionDigest:          rec.AttributionDigest(),
		IntegrationRecordDigest:    d,
	}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return r, nil
}

// Validate checks the reference's fields alone.
func (r *IntegratedRef) Validate() error {
	if r.Type != KindIntegrated {
		return fmt.Errorf("integrated ref: type %q, want %q", r.Type, KindIntegrated)
	}
	if r.SchemaVersion != refSchemaVersion {
		return fmt.Errorf("integrated ref: schema_version %d, want %d", r.SchemaVersion, refSchemaVersion)
	}
	if r.TargetID == "" {
		return fmt.Errorf("integrated ref: empty target_id")
	}
	for _, f := range []struct {
		name string
		v    identity.Digest
	}{
		{"target_spec_digest", r.TargetSpecDigest}, {"integrated_source_tree_digest", r.IntegratedSourceTreeDigest},
		{"selected_payload_digest", r.SelectedPayloadDigest}, {"attribution_digest", r.AttributionDigest},
		{"integration_record_digest", r.IntegrationRecordDigest},
	} {
		if err := identity.CheckField(f.name, f.v, false); err != nil {
			return fmt.Errorf("integrated ref: %w", err)
		}
	}
	return nil
}

// RefKind is "integrated".
func (r *IntegratedRef) RefKind() string { return KindIntegrated }

// RefTarget returns the target id and target-spec digest.
func (r *IntegratedRef) RefTarget() (string, identity.Digest) { return r.TargetID, r.TargetSpecDigest }

// RefDigest is H(cacheon.contribution.integrated, ref).
func (r *IntegratedRef) RefDigest() (identity.Digest, error) {
	if err := r.Validate(); err != nil {
		return identity.Digest{}, err
	}
	return identity.H(identity.DomainIntegrated, r)
}

// SelectedDelta is the delta the integrated contribution carries.
func (r *IntegratedRef) SelectedDelta() (identity.Digest, error) {
	return SelectedDelta(r.SelectedPayloadDigest, r.TargetID, r.TargetSpecDigest)
}
