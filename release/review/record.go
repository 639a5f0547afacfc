// Package review implements integration review records: the evidence that
// binds a crowned selected payload to reviewed source at a full git
// commit, with the qualification and review evidence and the reviewer who
// approved it.
//
// A record derives exactly one integrated contribution reference
// (kernels/contribution.IntegratedRefFromRecord); a release stack accepts
// only integrated entries, each covered by exactly one approved record
// (CheckCoverage). Creating a record (New) re-derives the integrated
// source tree digest from the commit's git objects and refuses a review
// whose source does not reproduce the crowned payload.
package review

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/cacheon/engine/internal/canonjson"
	"github.com/cacheon/engine/internal/identity"
	"github.com/cacheon/engine/kernels/contribution"
)

// Wire identifiers.
const (
	SchemaVersion   = 1
	EvidenceMedia   = "application/json"
	maxReviewerRune = 256
)

// Role names one of the seven evidence artifacts of a review.
type Role string

const (
	RolePrimaryAttempt      Role = "primary_attempt"
	RoleReproductionAttempt Role = "reproduction_attempt"
	RoleLicense             Role = "license_evidence"
	RoleProvenance          Role = "provenance_evidence"
	RoleSecurityReview      Role = "security_review"
	RoleCompatibility       Role = "compatibility_evidence"
	RoleTests               Role = "test_evidence"
)

// Roles lists the seven roles in record order.
var Roles = []Role{RolePrimaryAttempt, RoleReproductionAttempt, RoleLicense, RoleProvenance, RoleSecurityReview, RoleCompatibility, RoleTests}

// evidenceKind is the domain and schema an artifact of a role must carry.
func evidenceKind(r Role) (domain, schema string) {
	switch r {
	case RolePrimaryAttempt, RoleReproductionAttempt:
		return "qualification.cohort-attempt", "cacheon.qualification.cohort-attempt.v1"
	case RoleLicense:
		return "integration.license", "cacheon.integration.license.v1"
	case RoleProvenance:
		return "integration.provenance", "cacheon.integration.provenance.v1"
	case RoleSecurityReview:
		return "integration.security-review", "cacheon.integration.security-review.v1"
	case RoleCompatibility:
		return "integration.compatibility", "cacheon.integration.compatibility.v1"
	case RoleTests:
		return "integration.tests", "cacheon.integration.tests.v1"
	}
	return "", ""
}

// ParseRole parses a role name as used on the command line.
func ParseRole(s string) (Role, error) {
	for _, r := range Roles {
		if string(r) == s {
			return r, nil
		}
	}
	names := make([]string, len(Roles))
	for i, r := range Roles {
		names[i] = string(r)
	}
	return "", fmt.Errorf("evidence role %q: want one of %s", s, strings.Join(names, ", "))
}

// EvidenceRef is an evidence store reference (closed schema).
type EvidenceRef struct {
	Domain    string `json:"domain"`
	SHA256    string `json:"sha256"`
	Size      int64  `json:"size"`
	MediaType string `json:"media_type"`
	Schema    string `json:"schema"`
}

// NewEvidenceRef describes data as the evidence artifact of role r.
func NewEvidenceRef(r Role, data []byte) EvidenceRef {
	domain, schema := evidenceKind(r)
	return EvidenceRef{Domain: domain, SHA256: sha256Hex(data), Size: int64(len(data)), MediaType: EvidenceMedia, Schema: schema}
}

// Artifacts are the seven evidence references of a review.
type Artifacts struct {
	PrimaryAttempt        EvidenceRef `json:"primary_attempt"`
	ReproductionAttempt   EvidenceRef `json:"reproduction_attempt"`
	LicenseEvidence       EvidenceRef `json:"license_evidence"`
	ProvenanceEvidence    EvidenceRef `json:"provenance_evidence"`
	SecurityReview        EvidenceRef `json:"security_review"`
	CompatibilityEvidence EvidenceRef `json:"compatibility_evidence"`
	TestEvidence          EvidenceRef `json:"test_evidence"`
}

func (a *Artifacts) byRole() map[Role]*EvidenceRef {
	return map[Role]*EvidenceRef{
		RolePrimaryAttempt: &a.PrimaryAttempt, RoleReproductionAttempt: &a.ReproductionAttempt,
		RoleLicense: &a.LicenseEvidence, RoleProvenance: &a.ProvenanceEvidence,
		RoleSecurityReview: &a.SecurityReview, RoleCompatibility: &a.CompatibilityEvidence,
		RoleTests: &a.TestEvidence,
	}
}

// Record is an IntegrationReviewRecord.
type Record struct {
	TargetID                    string    `json:"target_id"`
	TargetSpecDigest            string    `json:"target_spec_digest"`
	ProposalContributionDigest  string    `json:"proposal_contribution_digest"`
	SettlementCandidateDigest   string    `json:"settlement_candidate_digest"`
	SettlementEvidenceDigest    string    `json:"settlement_evidence_digest"`
	CrownEventDigest            string    `json:"crown_event_digest"`
	PrimaryAttemptDigest        string    `json:"primary_attempt_digest"`
	ReproductionAttemptDigest   string    `json:"reproduction_attempt_digest"`
	IntegratedSourceTreeDigest  string    `json:"integrated_source_tree_digest"`
	SelectedPayloadDigest       string    `json:"selected_payload_digest"`
	AttributionDigest           string    `json:"attribution_digest"`
	LicenseEvidenceDigest       string    `json:"license_evidence_digest"`
	ProvenanceEvidenceDigest    string    `json:"provenance_evidence_digest"`
	SecurityReviewDigest        string    `json:"security_review_digest"`
	CompatibilityEvidenceDigest string    `json:"compatibility_evidence_digest"`
	TestEvidenceDigest          string    `json:"test_evidence_digest"`
	Artifacts                   Artifacts `json:"artifacts"`
	Reviewer                    string    `json:"reviewer"`
	ReviewCommit                string    `json:"review_commit"`
	Approved                    bool      `json:"approved"`
	SchemaVersion               int       `json:"schema_version"`
}

var commitPattern = regexp.MustCompile(`^[0-9a-f]{40}$`)

// ErrInvalidRecord is wrapped by every validation failure.
var ErrInvalidRecord = errors.New("invalid integration review record")

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidRecord, fmt.Sprintf(format, args...))
}

// Validate checks the record alone.
func (r *Record) Validate() error {
	if r.SchemaVersion != SchemaVersion {
		return invalid("schema_version %d, want %d", r.SchemaVersion, SchemaVersion)
	}
	if strings.TrimSpace(r.TargetID) == "" || r.TargetID != strings.TrimSpace(r.TargetID) {
		return invalid("target_id %q: empty or padded", r.TargetID)
	}
	digests := []struct{ name, v string }{
		{"target_spec_digest", r.TargetSpecDigest},
		{"proposal_contribution_digest", r.ProposalContributionDigest},
		{"settlement_candidate_digest", r.SettlementCandidateDigest},
		{"settlement_evidence_digest", r.SettlementEvidenceDigest},
		{"crown_event_digest", r.CrownEventDigest},
		{"primary_attempt_digest", r.PrimaryAttemptDigest},
		{"reproduction_attempt_digest", r.ReproductionAttemptDigest},
		{"integrated_source_tree_digest", r.IntegratedSourceTreeDigest},
		{"selected_payload_digest", r.SelectedPayloadDigest},
		{"attribution_digest", r.AttributionDigest},
		{"license_evidence_digest", r.LicenseEvidenceDigest},
		{"provenance_evidence_digest", r.ProvenanceEvidenceDigest},
		{"security_review_digest", r.SecurityReviewDigest},
		{"compatibility_evidence_digest", r.CompatibilityEvidenceDigest},
		{"test_evidence_digest", r.TestEvidenceDigest},
	}
	for _, d := range digests {
		if err := identity.CheckDigest(d.name, d.v, false); err != nil {
			return invalid("%v", err)
		}
	}
	if r.PrimaryAttemptDigest == r.ReproductionAttemptDigest {
		return invalid("primary_attempt_digest and reproduction_attempt_digest are equal: a crown needs two independent qualifications")
	}
	fieldOf := map[Role]string{
		RolePrimaryAttempt: r.PrimaryAttemptDigest, RoleReproductionAttempt: r.ReproductionAttemptDigest,
		RoleLicense: r.LicenseEvidenceDigest, RoleProvenance: r.ProvenanceEvidenceDigest,
		RoleSecurityReview: r.SecurityReviewDigest, RoleCompatibility: r.CompatibilityEvidenceDigest,
		RoleTests: r.TestEvidenceDigest,
	}
	seen := map[string]Role{}
	refs := r.Artifacts.byRole()
	for _, role := range Roles {
		ref := refs[role]
		domain, schema := evidenceKind(role)
		switch {
		case ref.Domain != domain:
			return invalid("artifacts.%s.domain %q, want %q", role, ref.Domain, domain)
		case ref.Schema != schema:
			return invalid("artifacts.%s.schema %q, want %q", role, ref.Schema, schema)
		case ref.MediaType != EvidenceMedia:
			return invalid("artifacts.%s.media_type %q, want %q", role, ref.MediaType, EvidenceMedia)
		case ref.Size < 0:
			return invalid("artifacts.%s.size %d is negative", role, ref.Size)
		}
		if err := identity.CheckDigest(fmt.Sprintf("artifacts.%s.sha256", role), ref.SHA256, false); err != nil {
			return invalid("%v", err)
		}
		if ref.SHA256 != fieldOf[role] {
			return invalid("%s_digest is %s but artifacts.%s.sha256 is %s", strings.TrimSuffix(string(role), "_digest"), fieldOf[role], role, ref.SHA256)
		}
		if other, dup := seen[ref.SHA256]; dup {
			return invalid("artifacts.%s and artifacts.%s are the same bytes (%s); the seven evidence artifacts must be distinct", other, role, ref.SHA256)
		}
		seen[ref.SHA256] = role
	}
	reviewer := r.Reviewer
	if strings.TrimSpace(reviewer) != reviewer || reviewer == "" {
		return invalid("reviewer %q: empty or padded with whitespace", reviewer)
	}
	if n := utf8.RuneCountInString(reviewer); n > maxReviewerRune || !utf8.ValidString(reviewer) {
		return invalid("reviewer: %d characters or invalid UTF-8, want 1 to %d", n, maxReviewerRune)
	}
	if strings.ContainsAny(reviewer, "\x00\r\n") {
		return invalid("reviewer %q: NUL, CR and LF are not allowed", reviewer)
	}
	if !commitPattern.MatchString(r.ReviewCommit) {
		return invalid("review_commit %q: want the full 40-hex git commit id", r.ReviewCommit)
	}
	if !r.Approved {
		return invalid("approved is false: only approved reviews integrate a contribution")
	}
	return nil
}

// Digest is H(cacheon.contribution.integration-review, record).
func (r *Record) Digest() (string, error) {
	id, err := r.typedDigest()
	return id.String(), err
}

// typedDigest is Digest as the typed identity the contribution package
// reads (through recordView).
func (r *Record) typedDigest() (identity.Digest, error) {
	if err := r.Validate(); err != nil {
		return identity.Digest{}, err
	}
	return identity.H(identity.DomainIntegrationReview, r)
}

// IntegratedRef derives the one integrated reference the record names.
func (r *Record) IntegratedRef() (*contribution.IntegratedRef, error) {
	return contribution.IntegratedRefFromRecord(recordView{r})
}

// recordView adapts Record to contribution.IntegrationRecord, whose
// accessor methods would clash with the record's field names.
type recordView struct{ r *Record }

var _ contribution.IntegrationRecord = recordView{}

func (v recordView) Digest() (identity.Digest, error) { return v.r.typedDigest() }
func (v recordView) Approved() bool                   { return v.r.Approved }
func (v recordView) TargetID() string                 { return v.r.TargetID }
func (v recordView) TargetSpecDigest() identity.Digest {
	return digestOf(v.r.TargetSpecDigest)
}
func (v recordView) IntegratedSourceTreeDigest() identity.Digest {
	return digestOf(v.r.IntegratedSourceTreeDigest)
}
func (v recordView) SelectedPayloadDigest() identity.Digest {
	return digestOf(v.r.SelectedPayloadDigest)
}
func (v recordView) AttributionDigest() identity.Digest { return digestOf(v.r.AttributionDigest) }

// digestOf reads a digest field of a record. Readers call Digest first,
// which validates every field; a field that still does not parse gives
// the zero Digest, which the integrated reference's own validation
// refuses by name.
func digestOf(s string) identity.Digest {
	d, err := identity.Parse(s)
	if err != nil {
		return identity.Digest{}
	}
	return d
}

// Marshal returns the record file bytes: canonical JSON and a newline.
func (r *Record) Marshal() ([]byte, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	b, err := canonjson.Marshal(r)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Parse reads a record file: strict JSON (unknown fields rejected),
// validated, and in canonical form.
func Parse(b []byte) (*Record, error) {
	var r Record
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return nil, invalid("%v", err)
	}
	if dec.More() {
		return nil, invalid("trailing data after the record")
	}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	again, err := r.Marshal()
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(again, b) && !bytes.Equal(again[:len(again)-1], b) {
		return nil, invalid("not in canonical form (sorted keys, no spaces, one trailing newline)")
	}
	return &r, nil
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
