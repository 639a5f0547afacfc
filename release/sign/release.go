package sign

import (
	"bytes"
	"crypto"
	"fmt"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/cacheon/engine/release/provenance"
	"github.com/cacheon/engine/release/sbom"
	"github.com/cacheon/engine/release/store"

	"github.com/cacheon/engine/internal/reject"
)

// Signed is the outcome of signing a release.
type Signed struct {
	ImageDigest  string `json:"image_digest"`
	KeyID        string `json:"key_id"`
	BundleDigest string `json:"bundle_digest"` // the bundle artifact's manifest digest
	Statement    string `json:"statement_sha256"`
	// SBOMBundleDigest is the signed SBOM attestation's bundle artifact
	// (manifest digest), SBOMStatement the SHA-256 of its statement.
	SBOMBundleDigest string `json:"sbom_bundle_digest"`
	SBOMStatement    string `json:"sbom_statement_sha256"`
}

// Release signs the provenance statement attached to the release image in
// s and attaches the bundle to the image, next to the statement. The
// statement must name that image as its subject: a key never signs a
// statement about some other image.
//
// It also signs the SBOM attestation (sbom.Statement): the SPDX document
// the provenance names as its SBOM byproduct, as the predicate of an
// in-toto statement about the same image, attached as a second bundle
// annotated with SPDX's predicate type. Only the bundle is attached: the
// statement is inside it, and the plain document is already there.
func Release(s store.Store, signer crypto.Signer) (*Signed, error) {
	desc, err := s.Resolve()
	if err != nil {
		return nil, err
	}
	refs, err := store.Referrers(s, desc.Digest)
	if err != nil {
		return nil, err
	}
	var statement []byte
	for _, r := range refs {
		if r.ArtifactType != store.ArtifactProvenance {
			continue
		}
		if statement != nil && !bytes.Equal(statement, r.Data) {
			return nil, reject.Errorf("image %s in %s has two different provenance statements attached; refusing to choose", desc.Digest, s.Location())
		}
		statement = r.Data
	}
	if statement == nil {
		return nil, reject.Errorf("image %s in %s has no provenance statement attached (build it with `cacheon release build`)", desc.Digest, s.Location())
	}
	p, err := provenance.Parse(statement)
	if err != nil {
		return nil, reject.Errorf("provenance of %s: %w", desc.Digest, err)
	}
	if len(p.Subjects) == 0 || p.Subjects[0].Digest["sha256"] != desc.Digest.Hex {
		return nil, reject.Errorf("the provenance attached to %s is about another image; refusing to sign it", desc.Digest)
	}
	sbomStatement, err := sbomAttestation(refs, p, desc)
	if err != nil {
		return nil, err
	}
	bundle, keyID, err := Statement(statement, signer)
	if err != nil {
		return nil, err
	}
	sbomBundle, _, err := Statement(sbomStatement, signer)
	if err != nil {
		return nil, err
	}
	// The SBOM attestation goes first: a consumer that finds the
	// provenance's bundle finds everything the release signs.
	sd, err := s.Attach(desc, store.Artifact{
		ArtifactType: store.ArtifactBundle,
		Data:         sbomBundle,
		Title:        store.TitleSBOMBundle,
		Annotations:  map[string]string{store.AnnotationPredicateType: sbom.PredicateType, "dev.cacheon.release.key-id": keyID},
	})
	if err != nil {
		return nil, fmt.Errorf("attach SBOM attestation bundle to %s: %w", desc.Digest, err)
	}
	bd, err := s.Attach(desc, store.Artifact{
		ArtifactType: store.ArtifactBundle,
		Data:         bundle,
		Title:        store.TitleBundle,
		Annotations:  map[string]string{store.AnnotationPredicateType: provenance.PredicateType, "dev.cacheon.release.key-id": keyID},
	})
	if err != nil {
		return nil, fmt.Errorf("attach signature bundle to %s: %w", desc.Digest, err)
	}
	return &Signed{ImageDigest: desc.Digest.String(), KeyID: keyID, BundleDigest: bd.Digest.String(), Statement: sha256Hex(statement),
		SBOMBundleDigest: sd.Digest.String(), SBOMStatement: sha256Hex(sbomStatement)}, nil
}

// sbomAttestation is the SBOM attestation of the release: the attached
// SPDX document the provenance names (its SBOM byproduct, by SHA-256),
// about the provenance's image subject. An SBOM attached by anyone else
// is never signed.
func sbomAttestation(refs []store.Referrer, p *provenance.Provenance, desc v1.Descriptor) ([]byte, error) {
	named, ok := provenance.Find(p.Byproducts, provenance.ByproductSBOM)
	if !ok {
		return nil, reject.Errorf("the provenance of %s names no %s byproduct; refusing to sign an SBOM it does not vouch for", desc.Digest, provenance.ByproductSBOM)
	}
	for _, r := range refs {
		if r.ArtifactType == store.ArtifactSBOM && r.Blob.Digest.Hex == named.Digest["sha256"] {
			st, err := sbom.Statement(r.Data, p.Subjects[0].Name, desc.Digest.String())
			if err != nil {
				return nil, reject.Errorf("SBOM of %s: %w", desc.Digest, err)
			}
			return st, nil
		}
	}
	return nil, reject.Errorf("image %s has no attached SBOM with sha256:%s, the SBOM its provenance names (build it with `cacheon release build`)", desc.Digest, named.Digest["sha256"])
}

func sha256Hex(b []byte) string {
	h, _, _ := v1.SHA256(bytes.NewReader(b))
	return h.Hex
}
