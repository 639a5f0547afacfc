package store

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

var fuzzSubject = v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("ab", 32)}

// FuzzParseIndex feeds arbitrary bytes to the index.json parser: they
// parse within the entry limit or are refused as malformed, never panic.
func FuzzParseIndex(f *testing.F) {
	sub := v1.Descriptor{MediaType: "application/vnd.oci.image.manifest.v1+json", Digest: fuzzSubject, Size: 100}
	art := sub
	art.Digest.Hex = strings.Repeat("cd", 32)
	art.ArtifactType = ArtifactBundle
	for _, im := range []v1.IndexManifest{
		{SchemaVersion: 2, MediaType: "application/vnd.oci.image.index.v1+json", Manifests: []v1.Descriptor{sub, art}},
		{SchemaVersion: 2, Manifests: []v1.Descriptor{{Digest: fuzzSubject, Size: -1}}},
	} {
		b, _ := json.Marshal(im)
		f.Add(b)
	}
	f.Add([]byte(`{"manifests":[{"digest":"sha256:zz","size":1e99}]}`))
	f.Add([]byte(`{"manifests":null,"annotations":{"a":"b"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		im, err := parseIndex("index.json", data)
		if err != nil {
			if !IsRejection(err) {
				t.Fatalf("error %v is not a rejection", err)
			}
			return
		}
		if len(im.Manifests) > MaxIndexEntries {
			t.Fatalf("%d entries passed", len(im.Manifests))
		}
		for _, d := range im.Manifests {
			CheckDescriptor(d, MaxManifestSize)
		}
	})
}

// FuzzParseArtifact feeds arbitrary bytes to the OCI manifest parsers the
// verifier uses: the artifact manifest of an attachment and the image
// manifest.
func FuzzParseArtifact(f *testing.F) {
	raw, _, _, _ := Artifact{ArtifactType: ArtifactSBOM, Data: []byte(`{}`)}.Manifest(v1.Descriptor{MediaType: "application/vnd.oci.image.manifest.v1+json", Digest: fuzzSubject, Size: 100})
	f.Add(raw)
	f.Add([]byte(`{"schemaVersion":2,"layers":[],"subject":{"digest":"sha256:` + fuzzSubject.Hex + `"}}`))
	f.Add([]byte(`{"schemaVersion":2,"config":{"size":-1},"layers":[{"size":-9223372036854775808}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if m, err := parseArtifact(data, fuzzSubject); err == nil {
			if m.Subject == nil || m.Subject.Digest != fuzzSubject || len(m.Layers) != 1 {
				t.Fatalf("parseArtifact accepted %s", data)
			}
			CheckDescriptor(m.Layers[0], MaxArtifactSize)
		}
		if m, err := v1.ParseManifest(bytes.NewReader(data)); err == nil {
			for _, l := range append([]v1.Descriptor{m.Config}, m.Layers...) {
				CheckDescriptor(l, MaxBlobSize)
			}
		}
	})
}
