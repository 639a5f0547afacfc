package store

import (
	"bytes"
	"encoding/json"
	"fmt"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// cosign's legacy tag scheme, from before registries had the referrers
// API: the signatures of image sha256:<hex> live under the tag
// sha256-<hex>.sig and its attestations under sha256-<hex>.att, the
// attestations as an image whose layers are DSSE envelopes.
const (
	LegacySignatureSuffix   = "sig"
	LegacyAttestationSuffix = "att"
	// MediaTypeDSSE is a layer holding one DSSE envelope (JSON).
	MediaTypeDSSE = "application/vnd.dsse.envelope.v1+json"
	// annotationLegacyPredicate is the layer annotation cosign's legacy
	// attestations name their predicate type with.
	annotationLegacyPredicate = "predicateType"
	// annotationLegacySignature holds a legacy signature layer's
	// signature; an attestation's is inside its envelope, so the
	// annotation is there and empty (cosign refuses a layer without it).
	annotationLegacySignature = "dev.cosignproject.cosign/signature"
)

// LegacyTag is the legacy tag for image digest d with suffix "sig" or
// "att": sha256-<hex>.<suffix>.
func LegacyTag(d v1.Hash, suffix string) string {
	return d.Algorithm + "-" + d.Hex + "." + suffix
}

// Envelope is one DSSE envelope for a legacy attestation manifest.
type Envelope struct {
	Data          []byte // the envelope JSON
	PredicateType string
	// Name is what the envelope attests ("provenance", "sbom"): its
	// layer's title is Name.dsse.json, numbered when several share it.
	// Empty means "provenance".
	Name string
}

// LegacyAttestation returns the manifest of cosign's legacy attestation
// image for envelopes (in the order given): an OCI image manifest with
// the empty config and one layer per envelope, each titled and annotated
// with its predicate type. It has no subject: the tag names the image.
// The bytes depend only on the envelopes, so publishing twice writes the
// same manifest. It returns the manifest, its descriptor and the layers'.
func LegacyAttestation(envelopes []Envelope) (raw []byte, desc v1.Descriptor, layers []v1.Descriptor, err error) {
	if len(envelopes) == 0 {
		return nil, v1.Descriptor{}, nil, fmt.Errorf("a legacy attestation manifest needs at least one envelope")
	}
	nameOf := func(e Envelope) string {
		if e.Name == "" {
			return "provenance"
		}
		return e.Name
	}
	count, seen := map[string]int{}, map[string]int{}
	for _, e := range envelopes {
		count[nameOf(e)]++
	}
	for _, e := range envelopes {
		h, n, err := v1.SHA256(bytes.NewReader(e.Data))
		if err != nil {
			return nil, v1.Descriptor{}, nil, err
		}
		name := nameOf(e)
		seen[name]++
		title := name + ".dsse.json"
		if count[name] > 1 {
			title = fmt.Sprintf("%s-%d.dsse.json", name, seen[name])
		}
		if err := CheckTitle(title); err != nil {
			return nil, v1.Descriptor{}, nil, err
		}
		layers = append(layers, v1.Descriptor{MediaType: MediaTypeDSSE, Digest: h, Size: n,
			Annotations: map[string]string{annotationLegacyPredicate: e.PredicateType, annotationLegacySignature: "", AnnotationTitle: title}})
	}
	m := struct {
		SchemaVersion int64           `json:"schemaVersion"`
		MediaType     types.MediaType `json:"mediaType"`
		Config        v1.Descriptor   `json:"config"`
		Layers        []v1.Descriptor `json:"layers"`
	}{2, types.OCIManifestSchema1, emptyDescriptor(), layers}
	m.Config.Data = nil
	if raw, err = json.Marshal(m); err != nil {
		return nil, v1.Descriptor{}, nil, err
	}
	h, n, err := v1.SHA256(bytes.NewReader(raw))
	if err != nil {
		return nil, v1.Descriptor{}, nil, err
	}
	return raw, v1.Descriptor{MediaType: types.OCIManifestSchema1, Digest: h, Size: n}, layers, nil
}
