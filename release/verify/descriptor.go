package verify

import (
	"github.com/cacheon/engine/release/descriptor"
	"github.com/cacheon/engine/release/provenance"
)

// checkDescriptor (CheckDescriptor) requires the release layer's
// release.json to be the byproduct the signed provenance names, by its
// SHA-256 and by its descriptor digest.
func (v *verification) checkDescriptor() error {
	v.rel.Files = v.contents["release"].files
	descBytes := v.rel.Files[descriptor.DescriptorPath]
	bp, ok := provenance.Find(v.prov.Byproducts, provenance.ByproductRelease)
	if !ok {
		return failf(CheckDescriptor, "provenance lists no %s byproduct", provenance.ByproductRelease)
	}
	if descBytes == nil {
		return failf(CheckDescriptor, "/%s is missing from the release layer", descriptor.DescriptorPath)
	}
	if got := descriptor.SHA256(descBytes); got != bp.Digest["sha256"] {
		return failf(CheckDescriptor, "/%s hashes to sha256:%s, the signed provenance says sha256:%s", descriptor.DescriptorPath, got, bp.Digest["sha256"])
	}
	d, err := descriptor.Parse(descBytes)
	if err != nil {
		return fail(CheckDescriptor, err)
	}
	descDigest, _ := d.Digest()
	if descDigest != bp.Digest[descriptor.Domain] {
		return failf(CheckDescriptor, "descriptor digest %s, the signed provenance says %s", descDigest, bp.Digest[descriptor.Domain])
	}
	v.d, v.descDigest = d, descDigest
	v.rel.Descriptor, v.rel.ReleaseJSON = d, descBytes
	v.rep.DescriptorDigest, v.rep.ReleaseManifestDigest = descDigest, d.ReleaseManifestDigest
	v.rep.pass(CheckDescriptor, "%s", descDigest)
	return nil
}
