package verify

import (
	"github.com/cacheon/engine/release/provenance"
	"github.com/cacheon/engine/release/sbom"
	"github.com/cacheon/engine/release/store"
)

// checkSBOM (CheckSBOM) requires an attached SBOM that is the byproduct
// the signed provenance names and equals the SBOM regenerated from the
// image's contents with the release projection the builder uses.
func (v *verification) checkSBOM() error {
	sb, ok := provenance.Find(v.prov.Byproducts, provenance.ByproductSBOM)
	if !ok {
		return failf(CheckSBOM, "provenance lists no %s byproduct", provenance.ByproductSBOM)
	}
	var sbomBytes []byte
	var firstSBOM string
	err := v.att.each(store.ArtifactSBOM, func(r *store.Referrer) (bool, error) {
		if firstSBOM == "" {
			firstSBOM = r.Blob.Digest.Hex
		}
		if r.Blob.Digest.Hex != sb.Digest["sha256"] {
			return false, nil
		}
		if ok, err := v.att.load(r); err != nil || !ok {
			return false, err
		}
		sbomBytes = r.Data
		v.rel.Attachments = append(v.rel.Attachments, *r)
		return true, nil
	})
	if err != nil {
		return err
	}
	if sbomBytes == nil {
		return failf(CheckSBOM, "no attached SBOM hashes to sha256:%s, the SBOM the signed provenance names, and is readable (attached: sha256:%s)%s", sb.Digest["sha256"], firstSBOM, v.att.passedOver())
	}
	if _, err := sbom.Parse(sbomBytes); err != nil {
		return fail(CheckSBOM, err)
	}
	tree, sub, entry := v.contents["engine-tree"], v.contents["substrate"], v.contents["entrypoint"]
	want, err := sbom.Generate(sbom.ForRelease(v.d, v.descDigest, v.imgSubject.Name, v.desc.Digest.String(), tree.sbomFiles, sub.sbomFiles, entry.entryBytes))
	if err != nil {
		return fail(CheckSBOM, err)
	}
	if same, field := sbom.Equal(want, sbomBytes); !same {
		return failf(CheckSBOM, "the SBOM does not describe this image: field %q differs from the SBOM regenerated from the image's contents", field)
	}
	v.rel.SBOM = sbomBytes
	v.rep.pass(CheckSBOM, "SPDX 2.3, sha256:%s, consistent with the image", sb.Digest["sha256"])
	return nil
}
