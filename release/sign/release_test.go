package sign_test

import (
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/cacheon/engine/internal/reject"
	fixture "github.com/cacheon/engine/release/releasetest"
	"github.com/cacheon/engine/release/sign"
	"github.com/cacheon/engine/release/store"
)

// Signing signs only the SBOM the provenance names: a layout whose SBOM
// is missing, or was swapped for another document, is refused, and no
// bundle is attached.
func TestReleaseSignsOnlyTheSBOMTheProvenanceNames(t *testing.T) {
	for _, c := range []struct {
		name    string
		replace []byte // nil: the SBOM is detached
	}{
		{"SBOM missing", nil},
		{"SBOM swapped", []byte(`{"spdxVersion":"SPDX-2.3"}`)},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := fixture.New(t)
			dir, _ := r.Build(t)
			fixture.Detach(t, dir, store.ArtifactSBOM)
			if c.replace != nil {
				fixture.Attach(t, dir, store.Artifact{ArtifactType: store.ArtifactSBOM, Data: c.replace})
			}
			before := len(fixture.ReadIndex(t, dir).Manifests)
			l, err := store.OpenLayout(dir)
			if err != nil {
				t.Fatal(err)
			}
			_, err = sign.Release(l, r.Signer)
			if !reject.Is(err) || !strings.Contains(err.Error(), "no attached SBOM with sha256:") {
				t.Fatalf("err = %v, want a rejection naming the SBOM the provenance names", err)
			}
			if after := len(fixture.ReadIndex(t, dir).Manifests); after != before {
				t.Errorf("a refused signing attached %d manifests", after-before)
			}
		})
	}
}

// Both bundles name the image, carry the key id, and say what they sign.
func TestReleaseAttachesBothBundles(t *testing.T) {
	r := fixture.New(t)
	dir, _ := r.Build(t)
	l, _ := store.OpenLayout(dir)
	res, err := sign.Release(l, r.Signer)
	if err != nil {
		t.Fatal(err)
	}
	att := fixture.SBOMAttestation(t, dir)
	var prov v1.Hash
	for _, d := range fixture.ReadIndex(t, dir).Manifests {
		if d.ArtifactType == store.ArtifactBundle && d.Digest != att.Descriptor.Digest {
			prov = d.Digest
		}
	}
	if res.SBOMBundleDigest != att.Descriptor.Digest.String() || res.BundleDigest != prov.String() || res.SBOMStatement == "" || res.SBOMStatement == res.Statement {
		t.Errorf("signed %+v; SBOM attestation %s, provenance bundle %s", res, att.Descriptor.Digest, prov)
	}
	if att.Annotations["dev.cacheon.release.key-id"] != res.KeyID {
		t.Errorf("SBOM attestation annotations %v", att.Annotations)
	}
}
