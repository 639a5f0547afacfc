package verify

import (
	"github.com/cacheon/engine/internal/identity"
	"github.com/cacheon/engine/release/provenance"
)

// subjects are the two subjects of a release statement.
type subjects struct {
	img  provenance.Resource
	tree *provenance.Resource
}

// subjectsOf (CheckSubjects) requires exactly the two subjects a release
// statement has: the image, which must be the image in the store, and the
// engine tree, checked against the image's contents later. It is what
// binds a signature bundle to this image: checkSignature runs it on every
// bundle whose signature verifies, so a bundle of another release is
// passed over.
func (v *verification) subjectsOf(prov *provenance.Provenance) (*subjects, error) {
	if len(prov.Subjects) != 2 {
		return nil, failf(CheckSubjects, "statement has %d subjects, want 2 (the image and the engine tree)", len(prov.Subjects))
	}
	img := prov.Subjects[0]
	if img.Digest["sha256"] != v.desc.Digest.Hex {
		return nil, failf(CheckSubjects, "signed image subject %q is sha256:%s, but the image in %s is %s", img.Name, img.Digest["sha256"], v.s.Location(), v.desc.Digest)
	}
	tree, ok := provenance.Find(prov.Subjects, provenance.SubjectEngineTree)
	if !ok || tree.Digest[string(identity.DomainMaterializedEngineTree)] == "" {
		return nil, failf(CheckSubjects, "statement has no engine-tree subject")
	}
	return &subjects{img: img, tree: tree}, nil
}
