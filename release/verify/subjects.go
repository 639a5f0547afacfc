package verify

import (
	"github.com/cacheon/engine/release/provenance"
	"github.com/cacheon/engine/tools/identity"
)

// checkSubjects (CheckSubjects) requires exactly the two subjects a
// release statement has: the image, which must be the image in the store,
// and the engine tree, checked against the image's contents later.
func (v *verification) checkSubjects() error {
	prov := v.prov
	if len(prov.Subjects) != 2 {
		return failf(CheckSubjects, "statement has %d subjects, want 2 (the image and the engine tree)", len(prov.Subjects))
	}
	img := prov.Subjects[0]
	if img.Digest["sha256"] != v.desc.Digest.Hex {
		return failf(CheckSubjects, "signed image subject %q is sha256:%s, but the image in %s is %s", img.Name, img.Digest["sha256"], v.s.Location(), v.desc.Digest)
	}
	tree, ok := provenance.Find(prov.Subjects, provenance.SubjectEngineTree)
	if !ok || tree.Digest[string(identity.DomainMaterializedEngineTree)] == "" {
		return failf(CheckSubjects, "statement has no engine-tree subject")
	}
	v.imgSubject, v.treeSubject = img, tree
	v.rep.Image = img.Name
	return nil
}
