package verify

import (
	"bytes"
	"fmt"

	"github.com/cacheon/engine/release/descriptor"
	"github.com/cacheon/engine/release/provenance"
	"github.com/cacheon/engine/release/store"
)

// checkAttachedProvenance (CheckProvenance) requires the attached
// provenance to be the statement signed: only a candidate whose blob
// descriptor names the signed bytes is read.
func (v *verification) checkAttachedProvenance() error {
	signed := v.signed.Statement
	stmtSum := descriptor.SHA256(signed)
	var attached []byte
	var firstProv string
	err := v.att.each(store.ArtifactProvenance, func(p *store.Referrer) (bool, error) {
		if firstProv == "" {
			firstProv = p.Blob.Digest.String()
		}
		if p.Blob.Digest.Hex != stmtSum || p.Blob.Size != int64(len(signed)) {
			return false, nil
		}
		if ok, err := v.att.load(p); err != nil || !ok {
			return false, err
		}
		if bytes.Equal(p.Data, signed) {
			attached = p.Data
			v.rel.Attachments = append(v.rel.Attachments, *p)
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		return err
	}
	if attached == nil {
		return failf(CheckProvenance, "no readable attached provenance statement is the statement the bundle signs (first attached: %s)%s", firstProv, v.att.passedOver())
	}
	return nil
}

// checkProvenance (CheckProvenance) regenerates the provenance from the
// image's contents with the release projection the builder uses: it must
// be the signed bytes.
func (v *verification) checkProvenance() error {
	var layers []provenance.Layer
	for i, role := range ourLayers {
		l := v.m.Layers[v.ours()+i]
		layers = append(layers, provenance.Layer{Role: role, Digest: l.Digest.String(), DiffID: v.contents[role].diffID, MediaType: string(l.MediaType)})
	}
	regen, err := provenance.ForRelease(provenance.ReleaseInput{
		Descriptor: v.d, DescriptorDigest: v.descDigest, DescriptorSHA256: descriptor.SHA256(v.rel.ReleaseJSON),
		ImageName: v.imgSubject.Name, ImageDigest: v.desc.Digest.String(), SBOMSHA256: descriptor.SHA256(v.rel.SBOM),
		Layers: layers, Builder: v.prov.BuilderVersion,
	}).Statement()
	if err != nil {
		return fail(CheckProvenance, err)
	}
	if !bytes.Equal(regen, v.signed.Statement) {
		return failf(CheckProvenance, "the signed provenance is not the one this image's contents give: %s", firstDifference(regen, v.signed.Statement))
	}
	v.rep.pass(CheckProvenance, "resolved dependencies, byproducts and parameters match the image")
	return nil
}

// firstDifference describes where two JSON documents first differ.
func firstDifference(want, got []byte) string {
	i := 0
	for i < len(want) && i < len(got) && want[i] == got[i] {
		i++
	}
	lo := max(0, i-40)
	clip := func(b []byte) string { return string(b[lo:min(len(b), i+40)]) }
	return fmt.Sprintf("at byte %d: expected …%s… found …%s…", i, clip(want), clip(got))
}
