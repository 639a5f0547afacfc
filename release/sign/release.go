package sign

import (
	"bytes"
	"crypto"
	"fmt"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/cacheon/engine/release/provenance"
	"github.com/cacheon/engine/release/store"

	"github.com/cacheon/engine/tools/reject"
)

// Signed is the outcome of signing a release.
type Signed struct {
	ImageDigest  string `json:"image_digest"`
	KeyID        string `json:"key_id"`
	BundleDigest string `json:"bundle_digest"` // the bundle artifact's manifest digest
	Statement    string `json:"statement_sha256"`
}

// Release signs the provenance statement attached to the release image in
// s and attaches the bundle to the image, next to the statement. The
// statement must name that image as its subject: a key never signs a
// statement about some other image.
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
	bundle, keyID, err := Statement(statement, signer)
	if err != nil {
		return nil, err
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
	return &Signed{ImageDigest: desc.Digest.String(), KeyID: keyID, BundleDigest: bd.Digest.String(), Statement: sha256Hex(statement)}, nil
}

func sha256Hex(b []byte) string {
	h, _, _ := v1.SHA256(bytes.NewReader(b))
	return h.Hex
}
