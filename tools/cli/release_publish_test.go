package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	ggcr "github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/cacheon/engine/release/registrytest"
	fixture "github.com/cacheon/engine/release/releasetest"
)

// release publish --legacy-tags writes the .sig and .att tags, reports
// them, and the release verifies from the registry.
func TestReleasePublishLegacyTags(t *testing.T) {
	reg := registrytest.Start(t)
	r := fixture.New(t)
	dir := r.Signed(t)
	ref := reg.Host + "/engine:1.0"
	code, out, errOut := run(t, "", "release", "publish", "--json", "--legacy-tags", "--key", r.PublicKey, dir, ref)
	if code != ExitOK {
		t.Fatalf("publish: %d\n%s%s", code, out, errOut)
	}
	var res struct {
		ImageDigest string   `json:"image_digest"`
		LegacyTags  []string `json:"legacy_tags"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	hex := strings.TrimPrefix(res.ImageDigest, "sha256:")
	if len(res.LegacyTags) != 2 || !strings.HasPrefix(res.LegacyTags[0], "sha256-"+hex+".sig@sha256:") || !strings.HasPrefix(res.LegacyTags[1], "sha256-"+hex+".att@sha256:") {
		t.Fatalf("legacy tags %v", res.LegacyTags)
	}
	for _, lt := range res.LegacyTags {
		tag, digest, _ := strings.Cut(lt, "@")
		tref, err := name.NewTag(reg.Host + "/engine:" + tag)
		if err != nil {
			t.Fatal(err)
		}
		d, err := ggcr.Head(tref)
		if err != nil || d.Digest.String() != digest {
			t.Errorf("%s: resolves to %v (%v), reported %s", tag, d, err, digest)
		}
	}
	if code, out, errOut := run(t, "", "release", "verify", "--key", r.PublicKey, ref); code != ExitOK {
		t.Fatalf("verify from the registry: %d\n%s%s", code, out, errOut)
	}
}
