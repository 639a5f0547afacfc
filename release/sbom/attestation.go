package sbom

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/cacheon/engine/internal/canonjson"
)

// The SBOM attestation: an in-toto Statement v1 whose predicate is the
// release's SPDX document and whose subject is the image it describes.
// The plain document attached beside the image says what the image is
// made of; the attestation is the same document signed by the release
// key, the form cosign verify-attestation --type spdxjson and policy
// engines that read in-toto attestations consume.
const (
	// StatementType is the in-toto statement type.
	StatementType = "https://in-toto.io/Statement/v1"
	// PredicateType is SPDX's predicate type (cosign's spdxjson).
	PredicateType = "https://spdx.dev/Document"
)

// Subject is the one subject of an SBOM attestation: the image.
type Subject struct {
	Name   string            `json:"name"`
	Digest map[string]string `json:"digest"`
}

type statement struct {
	Type          string    `json:"_type"`
	Subject       []Subject `json:"subject"`
	PredicateType string    `json:"predicateType"`
	Predicate     any       `json:"predicate"`
}

// Statement returns the SBOM attestation of doc (an SBOM as Generate
// writes it) for the image name@imageDigest, as canonical JSON. doc is
// embedded as the predicate canonically: a release SBOM is canonical
// JSON already, so the predicate is byte for byte the attached document.
func Statement(doc []byte, name, imageDigest string) ([]byte, error) {
	hex, ok := strings.CutPrefix(imageDigest, "sha256:")
	if !ok || len(hex) != 64 {
		return nil, fmt.Errorf("sbom attestation: image digest %q is not sha256:<hex>", imageDigest)
	}
	if _, err := Parse(doc); err != nil {
		return nil, fmt.Errorf("sbom attestation: %w", err)
	}
	pred, err := canonjson.Parse(doc)
	if err != nil {
		return nil, fmt.Errorf("sbom attestation: the SBOM is not JSON: %w", err)
	}
	return canonjson.Marshal(statement{
		Type: StatementType, PredicateType: PredicateType, Predicate: pred,
		Subject: []Subject{{Name: name, Digest: map[string]string{"sha256": hex}}},
	})
}

// Attestation is a parsed SBOM attestation.
type Attestation struct {
	Subjects []Subject
	// Predicate is the predicate's bytes, canonical JSON.
	Predicate []byte
}

// ParseStatement reads an SBOM attestation: an in-toto Statement v1 with
// SPDX's predicate type, at least one subject, and a predicate that is a
// JSON object (returned canonical, for comparison with the document).
func ParseStatement(b []byte) (*Attestation, error) {
	var st struct {
		Type          string          `json:"_type"`
		Subject       []Subject       `json:"subject"`
		PredicateType string          `json:"predicateType"`
		Predicate     json.RawMessage `json:"predicate"`
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("parse in-toto statement: %w", err)
	}
	if st.Type != StatementType {
		return nil, fmt.Errorf("statement _type is %q, want %q", st.Type, StatementType)
	}
	if st.PredicateType != PredicateType {
		return nil, fmt.Errorf("predicateType is %q, want %q", st.PredicateType, PredicateType)
	}
	if len(st.Subject) == 0 {
		return nil, fmt.Errorf("statement has no subject")
	}
	raw := bytes.TrimSpace(st.Predicate)
	if len(raw) == 0 || raw[0] != '{' {
		return nil, fmt.Errorf("predicate is not a JSON object")
	}
	v, err := canonjson.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("predicate: %w", err)
	}
	pred, err := canonjson.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("predicate: %w", err)
	}
	return &Attestation{Subjects: st.Subject, Predicate: pred}, nil
}
