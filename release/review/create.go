package review

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cacheon/engine/internal/identity"
	"github.com/cacheon/engine/kernels/contribution"
)

// Crown is what settlement decided and the review binds: the crowned
// proposal at its target, the settlement records behind the crown and
// the payload and attribution it carries. Settlement writes it; the
// reviewer passes it to `cacheon release review --crown`.
type Crown struct {
	TargetID                   string `json:"target_id"`
	TargetSpecDigest           string `json:"target_spec_digest"`
	ProposalContributionDigest string `json:"proposal_contribution_digest"`
	SettlementCandidateDigest  string `json:"settlement_candidate_digest"`
	SettlementEvidenceDigest   string `json:"settlement_evidence_digest"`
	CrownEventDigest           string `json:"crown_event_digest"`
	PrimaryAttemptDigest       string `json:"primary_attempt_digest"`
	ReproductionAttemptDigest  string `json:"reproduction_attempt_digest"`
	SelectedPayloadDigest      string `json:"selected_payload_digest"`
	AttributionDigest          string `json:"attribution_digest"`
}

// ParseCrown reads a crown binding (strict JSON).
func ParseCrown(b []byte) (*Crown, error) {
	var c Crown
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("parse crown: %w", err)
	}
	if c.TargetID == "" {
		return nil, fmt.Errorf("crown: empty target_id")
	}
	for _, f := range []struct{ name, v string }{
		{"target_spec_digest", c.TargetSpecDigest}, {"proposal_contribution_digest", c.ProposalContributionDigest},
		{"settlement_candidate_digest", c.SettlementCandidateDigest}, {"settlement_evidence_digest", c.SettlementEvidenceDigest},
		{"crown_event_digest", c.CrownEventDigest}, {"primary_attempt_digest", c.PrimaryAttemptDigest},
		{"reproduction_attempt_digest", c.ReproductionAttemptDigest}, {"selected_payload_digest", c.SelectedPayloadDigest},
		{"attribution_digest", c.AttributionDigest},
	} {
		if err := identity.CheckDigest("crown "+f.name, f.v, false); err != nil {
			return nil, err
		}
	}
	return &c, nil
}

// Inspection is what the source at the reviewed commit selects.
type Inspection struct {
	TargetID              string
	TargetSpecDigest      string
	SelectedPayloadDigest string
}

// InspectFunc inspects a checked-out source tree the way the materializer
// will (never importing or running it) and reports what it selects.
type InspectFunc func(dir string) (*Inspection, error)

// Request is a review to record.
type Request struct {
	Crown    *Crown
	Evidence map[Role][]byte // the seven evidence documents, by role
	Reviewer string
	Repo     string // git repository holding the reviewed source
	Commit   string // full 40-hex commit id
	Path     string // the contribution's directory inside the repository
	Inspect  InspectFunc
}

// New checks a review request and returns the approved record. The
// integrated source tree digest is computed from the git objects of the
// commit, and the source must select exactly the crowned payload at the
// crowned target; the attempt evidence must be the attempts the crown
// names.
func New(req Request) (*Record, error) {
	c := req.Crown
	if c == nil {
		return nil, fmt.Errorf("review: no crown")
	}
	if req.Inspect == nil {
		return nil, fmt.Errorf("review: no inspector for the reviewed source")
	}
	var art Artifacts
	refs := art.byRole()
	for _, role := range Roles {
		data, ok := req.Evidence[role]
		if !ok {
			return nil, fmt.Errorf("review: evidence %s is missing", role)
		}
		*refs[role] = NewEvidenceRef(role, data)
	}
	if got := art.PrimaryAttempt.SHA256; got != c.PrimaryAttemptDigest {
		return nil, fmt.Errorf("review: the primary attempt evidence hashes to %s, the crown names %s", got, c.PrimaryAttemptDigest)
	}
	if got := art.ReproductionAttempt.SHA256; got != c.ReproductionAttemptDigest {
		return nil, fmt.Errorf("review: the reproduction attempt evidence hashes to %s, the crown names %s", got, c.ReproductionAttemptDigest)
	}
	tmp, err := os.MkdirTemp("", "cacheon-review-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	src := filepath.Join(tmp, "src")
	if err := Checkout(req.Repo, req.Commit, req.Path, src); err != nil {
		return nil, fmt.Errorf("review: %w", err)
	}
	treeDigest, err := contribution.IntegratedSourceTreeDigest(src)
	if err != nil {
		return nil, fmt.Errorf("review: %s at %s: %w", displayDir(req.Path), req.Commit, err)
	}
	in, err := req.Inspect(src)
	if err != nil {
		return nil, fmt.Errorf("review: inspect %s at %s: %w", displayDir(req.Path), req.Commit, err)
	}
	switch {
	case in.TargetID != c.TargetID:
		return nil, fmt.Errorf("review: %w: %s at %s resolves to target %s, the crown is for %s", ErrSourceMismatch, displayDir(req.Path), req.Commit, in.TargetID, c.TargetID)
	case in.TargetSpecDigest != c.TargetSpecDigest:
		return nil, fmt.Errorf("review: %w: target-spec digest %s, the crown's is %s", ErrSourceMismatch, in.TargetSpecDigest, c.TargetSpecDigest)
	case in.SelectedPayloadDigest != c.SelectedPayloadDigest:
		return nil, fmt.Errorf("review: %w: %s at %s selects payload %s, the crowned payload is %s", ErrSourceMismatch, displayDir(req.Path), req.Commit, in.SelectedPayloadDigest, c.SelectedPayloadDigest)
	}
	r := &Record{
		TargetID:                    c.TargetID,
		TargetSpecDigest:            c.TargetSpecDigest,
		ProposalContributionDigest:  c.ProposalContributionDigest,
		SettlementCandidateDigest:   c.SettlementCandidateDigest,
		SettlementEvidenceDigest:    c.SettlementEvidenceDigest,
		CrownEventDigest:            c.CrownEventDigest,
		PrimaryAttemptDigest:        art.PrimaryAttempt.SHA256,
		ReproductionAttemptDigest:   art.ReproductionAttempt.SHA256,
		IntegratedSourceTreeDigest:  treeDigest.String(),
		SelectedPayloadDigest:       c.SelectedPayloadDigest,
		AttributionDigest:           c.AttributionDigest,
		LicenseEvidenceDigest:       art.LicenseEvidence.SHA256,
		ProvenanceEvidenceDigest:    art.ProvenanceEvidence.SHA256,
		SecurityReviewDigest:        art.SecurityReview.SHA256,
		CompatibilityEvidenceDigest: art.CompatibilityEvidence.SHA256,
		TestEvidenceDigest:          art.TestEvidence.SHA256,
		Artifacts:                   art,
		Reviewer:                    req.Reviewer,
		ReviewCommit:                req.Commit,
		Approved:                    true,
		SchemaVersion:               SchemaVersion,
	}
	if err := r.Validate(); err != nil {
		return nil, fmt.Errorf("review: %w", err)
	}
	return r, nil
}

// CheckSource re-derives the integrated source tree digest of a record
// from its commit, for auditors and the release builder: the record's
// digest must be what the commit holds.
func CheckSource(r *Record, repo, subdir string) error {
	got, err := SourceTreeAtCommit(repo, r.ReviewCommit, subdir)
	if err != nil {
		return err
	}
	if got.String() != r.IntegratedSourceTreeDigest {
		return fmt.Errorf("%w: %s at %s has integrated source tree digest %s, the record says %s", ErrSourceMismatch, displayDir(subdir), r.ReviewCommit, got, r.IntegratedSourceTreeDigest)
	}
	return nil
}
