package verify

import (
	"bytes"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/cacheon/engine/release/store"
)

// checkImage (CheckImage) resolves the image and reads its manifest,
// which must be an OCI image manifest with an OCI config.
func (v *verification) checkImage() error {
	desc, err := v.s.Resolve()
	if err != nil {
		if store.IsRejection(err) {
			return fail(CheckImage, err)
		}
		return err
	}
	raw, err := store.ReadManifest(v.s, desc)
	if err != nil {
		return fail(CheckImage, err)
	}
	m, err := v1.ParseManifest(bytes.NewReader(raw))
	if err != nil {
		return failf(CheckImage, "parse manifest %s: %v", desc.Digest, err)
	}
	if m.MediaType != types.OCIManifestSchema1 || m.Config.MediaType != types.OCIConfigJSON {
		return failf(CheckImage, "manifest %s has media types %s / %s, want OCI", desc.Digest, m.MediaType, m.Config.MediaType)
	}
	v.desc, v.raw, v.m = desc, raw, m
	v.rel.Image, v.rel.Manifest = desc, m
	v.rep.ImageDigest = desc.Digest.String()
	v.rep.pass(CheckImage, "%s (%d layers)", desc.Digest, len(m.Layers))
	return nil
}
