package verify

import "github.com/cacheon/engine/release/provenance"

// checkLayerDigests (CheckLayers) requires the image to end in our four
// layers, each the one the signed provenance names, before any layer
// byte is read.
func (v *verification) checkLayerDigests() error {
	n := len(v.m.Layers)
	if n < len(ourLayers) {
		return failf(CheckLayers, "image has %d layers, a release has at least %d", n, len(ourLayers))
	}
	for i, role := range ourLayers {
		l := v.m.Layers[v.ours()+i]
		bp, ok := provenance.Find(v.prov.Byproducts, provenance.LayerByproduct(role))
		if !ok {
			return failf(CheckLayers, "provenance lists no %s layer", role)
		}
		if bp.Digest["sha256"] != l.Digest.Hex {
			return failf(CheckLayers, "%s layer: the image has %s, the signed provenance says sha256:%s", role, l.Digest, bp.Digest["sha256"])
		}
	}
	return nil
}

// checkBaseLayers (CheckLayers) requires the layers below ours to be the
// pinned base image's, as the signed descriptor lists them.
func (v *verification) checkBaseLayers() error {
	d, m := v.d, v.m
	if got := v.ours(); got != len(d.BaseImage.Layers) {
		return failf(CheckLayers, "image has %d base layers, the descriptor's base %s has %d", got, d.BaseImage.Digest, len(d.BaseImage.Layers))
	}
	for i, want := range d.BaseImage.Layers {
		if m.Layers[i].Digest.String() != want {
			return failf(CheckLayers, "base layer %d is %s, the pinned base %s has %s", i, m.Layers[i].Digest, d.BaseImage.Digest, want)
		}
	}
	if m.Annotations["org.opencontainers.image.base.digest"] != d.BaseImage.Digest {
		return failf(CheckLayers, "manifest base annotation %q, the descriptor's base is %s", m.Annotations["org.opencontainers.image.base.digest"], d.BaseImage.Digest)
	}
	v.rep.pass(CheckLayers, "%d base layers of %s, then substrate, entrypoint, engine tree and release layers", len(d.BaseImage.Layers), d.BaseImage.Digest)
	return nil
}
