package publish_test

import (
	"errors"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	ggcr "github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/cacheon/engine/release/key"
	"github.com/cacheon/engine/release/publish"
	"github.com/cacheon/engine/release/registrytest"
	"github.com/cacheon/engine/release/store"
	"github.com/cacheon/engine/release/store/remote"
	"github.com/cacheon/engine/release/verify"
)

func open(t *testing.T, ref string) *remote.Registry {
	t.Helper()
	r, err := remote.Open(ref, false)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// referrerDigests lists the manifests attached to the image at ref.
func referrerDigests(t *testing.T, ref string) []string {
	t.Helper()
	s := open(t, ref)
	desc, err := s.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	refs, err := store.Referrers(s, desc.Digest)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range refs {
		out = append(out, r.Descriptor.Digest.String())
	}
	sort.Strings(out)
	return out
}

// A release mirrored to another repository of the same registry and to a
// second registry keeps every referrer, digest for digest, and verifies
// from each mirror; the base image comes along for rebuilds.
func TestMirrorKeepsSignatureAndAttestations(t *testing.T) {
	regA, regB := registrytest.Start(t), registrytest.Start(t)
	r, l := signedLayout(t)
	srcRef := regA.Host + "/engine:1.0"
	pub, err := publish.Publish(l, open(t, srcRef), publish.Options{})
	if err != nil {
		t.Fatal(err)
	}
	policy, _ := key.LoadPolicy(r.PublicKey)
	want := referrerDigests(t, srcRef)
	if len(want) != 4 {
		t.Fatalf("source referrers %v, want SBOM, provenance and two bundles", want)
	}
	for _, c := range []struct{ name, dst string }{
		{"another repository", regA.Host + "/mirror/engine:1.0"},
		{"another registry", regB.Host + "/engine:1.0"},
	} {
		dst := c.dst
		t.Run(c.name, func(t *testing.T) {
			res, err := publish.Mirror(open(t, srcRef), open(t, dst), publish.Options{LegacyTags: true})
			if err != nil {
				t.Fatalf("mirror: %v", err)
			}
			if res.ImageDigest != pub.ImageDigest || len(res.Artifacts) != 4 || len(res.LegacyTags) != 2 || res.Base == "" {
				t.Errorf("mirror result %+v", res)
			}
			if got := referrerDigests(t, dst); strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("mirror referrers\n got %v\nwant %v", got, want)
			}
			rel, err := verify.Run(open(t, dst), verify.Options{Policy: policy})
			if err != nil {
				t.Fatalf("verify the mirror: %v", err)
			}
			if rel.Report.ImageDigest != pub.ImageDigest || rel.SBOMBundle == nil {
				t.Errorf("verified %s (SBOM attestation %v), published %s", rel.Report.ImageDigest, rel.SBOMBundle != nil, pub.ImageDigest)
			}
			if _, err := ggcr.Head(parseRef(t, strings.TrimSuffix(dst, ":1.0")+"@"+res.Base)); err != nil {
				t.Errorf("base image %s not in the mirror: %v", res.Base, err)
			}
			// Mirroring again changes nothing.
			if _, err := publish.Mirror(open(t, srcRef), open(t, dst), publish.Options{}); err != nil {
				t.Fatalf("mirror again: %v", err)
			}
			if got := referrerDigests(t, dst); strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("referrers after mirroring twice %v", got)
			}
		})
	}
}

// A copy of the image alone (what a plain image copy does: the referrers
// are other manifests it does not know) fails verification, naming the
// attestations check; and Mirror refuses such a copy as its source.
func TestImageOnlyCopyFailsVerification(t *testing.T) {
	reg := registrytest.Start(t)
	r, l := signedLayout(t)
	srcRef := reg.Host + "/engine:1.0"
	if _, err := publish.Publish(l, open(t, srcRef), publish.Options{}); err != nil {
		t.Fatal(err)
	}
	img, err := ggcr.Image(parseRef(t, srcRef))
	if err != nil {
		t.Fatal(err)
	}
	copyRef := reg.Host + "/copy/engine:1.0"
	if err := ggcr.Write(parseRef(t, copyRef), img); err != nil {
		t.Fatal(err)
	}
	policy, _ := key.LoadPolicy(r.PublicKey)
	_, err = verify.Run(open(t, copyRef), verify.Options{Policy: policy})
	var f *verify.Failure
	if !errors.As(err, &f) || f.Check != verify.CheckAttestations || !strings.Contains(err.Error(), "no signature bundle") {
		t.Fatalf("verify an image-only copy: %v, want a failed %s check", err, verify.CheckAttestations)
	}
	_, err = publish.Mirror(open(t, copyRef), open(t, reg.Host+"/again/engine:1.0"), publish.Options{})
	if !errors.Is(err, publish.ErrIncomplete) {
		t.Fatalf("mirror from an image-only copy: %v, want ErrIncomplete", err)
	}
	if ts := tagsOf(t, reg.Host+"/again/engine"); len(ts) != 0 {
		t.Errorf("a refused mirror wrote tags %v", ts)
	}
}

func tagsOf(t *testing.T, repo string) []string {
	t.Helper()
	rp, _ := name.NewRepository(repo)
	ts, err := ggcr.List(rp)
	if err != nil {
		return nil
	}
	return ts
}

func parseRef(t *testing.T, ref string) name.Reference {
	t.Helper()
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
