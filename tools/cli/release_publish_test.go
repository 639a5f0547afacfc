package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	ggcr "github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/cacheon/engine/release/key"
	"github.com/cacheon/engine/release/registrytest"
	fixture "github.com/cacheon/engine/release/releasetest"
	"github.com/cacheon/engine/release/store"
	"github.com/cacheon/engine/tools/cli/enginecli"
)

// release publish --legacy-tags writes the .sig and .att tags, reports
// them, and the release verifies from the registry.
func TestReleasePublishLegacyTags(t *testing.T) {
	reg := registrytest.Start(t)
	r := fixture.New(t)
	dir := r.Signed(t)
	ref := reg.Host + "/engine:1.0"
	code, out, errOut := run(t, "", "release", "publish", "--json", "--legacy-tags", "--key", r.PublicKey, dir, ref)
	if code != enginecli.ExitOK {
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
	if code, out, errOut := run(t, "", "release", "verify", "--key", r.PublicKey, ref); code != enginecli.ExitOK {
		t.Fatalf("verify from the registry: %d\n%s%s", code, out, errOut)
	}
}

// cosign, where it is installed, verifies the published SLSA attestation
// both ways the consumer guide gives: from the signature bundle found
// through referrers, and from the legacy .att tag (--new-bundle-format
// =false, as older clients read it).
func TestCosignVerifiesThePublishedAttestation(t *testing.T) {
	stockTool(t, "cosign")
	reg := registrytest.Start(t)
	r := fixture.New(t)
	dir := r.Signed(t)
	code, out, errOut := run(t, "", "release", "publish", "--json", "--legacy-tags", dir, reg.Host+"/engine:1.0")
	if code != enginecli.ExitOK {
		t.Fatalf("publish: %d\n%s%s", code, out, errOut)
	}
	var res struct {
		ImageDigest string `json:"image_digest"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	img := reg.Host + "/engine@" + res.ImageDigest
	home := t.TempDir()
	_, _, otherKey := fixture.Keys(t, t.TempDir(), "other", key.Ed25519)
	// slsaprovenance1 is the provenance, spdxjson the SBOM attestation.
	for _, typ := range []string{"slsaprovenance1", "spdxjson"} {
		for _, extra := range [][]string{nil, {"--new-bundle-format=false"}} {
			for _, c := range []struct {
				key string
				ok  bool
			}{{r.PublicKey, true}, {otherKey, false}} {
				args := append([]string{"verify-attestation", "--key", c.key, "--insecure-ignore-tlog", "--type", typ, "--allow-insecure-registry"}, extra...)
				cmd := exec.Command("cosign", append(args, img)...)
				cmd.Env = append(os.Environ(), "HOME="+home)
				b, err := cmd.CombinedOutput()
				verified := err == nil && strings.Contains(string(b), "The signatures were verified against the specified public key")
				if verified != c.ok {
					t.Errorf("cosign --type %s %v with key %s: verified %v, want %v (%v)\n%s", typ, extra, c.key, verified, c.ok, err, b)
				}
			}
		}
	}
}

// oras, where it is installed, lists every published artifact under the
// image's tag (the consumer guide's oras discover) and pulls each as the
// file its title names, with the bytes attached to the layout.
func TestOrasPullsThePublishedFiles(t *testing.T) {
	stockTool(t, "oras")
	reg := registrytest.Start(t)
	r := fixture.New(t)
	dir := r.Signed(t)
	code, out, errOut := run(t, "", "release", "publish", "--json", dir, reg.Host+"/engine:1.0")
	if code != enginecli.ExitOK {
		t.Fatalf("publish: %d\n%s%s", code, out, errOut)
	}
	var res struct {
		Artifacts []string `json:"artifacts"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	// Each blob comes out under its title; the two bundles are told apart
	// by theirs (the provenance's and the SBOM attestation's).
	files := map[string][]byte{
		store.TitleSBOM: fixture.Attached(t, dir, store.ArtifactSBOM), store.TitleProvenance: fixture.Attached(t, dir, store.ArtifactProvenance),
		store.TitleBundle: fixture.Attached(t, dir, store.ArtifactBundle), store.TitleSBOMBundle: fixture.SBOMAttestation(t, dir).Data,
	}
	pulled := t.TempDir()
	home := t.TempDir()
	// The guide's oras discover lists every artifact under the image's tag.
	discover := exec.Command("oras", "discover", "--plain-http", "--format", "tree", reg.Host+"/engine:1.0")
	discover.Env = append(os.Environ(), "HOME="+home)
	tree, err := discover.CombinedOutput()
	if err != nil {
		t.Fatalf("oras discover --format tree: %v\n%s", err, tree)
	}
	for _, a := range res.Artifacts {
		if _, digest, _ := strings.Cut(a, "@"); !strings.Contains(string(tree), digest) {
			t.Errorf("oras discover does not list %s:\n%s", a, tree)
		}
	}
	for _, a := range res.Artifacts {
		_, digest, _ := strings.Cut(a, "@")
		cmd := exec.Command("oras", "pull", "--plain-http", "-o", pulled, reg.Host+"/engine@"+digest)
		cmd.Env = append(os.Environ(), "HOME="+home)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("oras pull %s: %v\n%s", a, err, b)
		}
	}
	for title, want := range files {
		got, err := os.ReadFile(filepath.Join(pulled, title))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("oras pull: %s is not the attached artifact (%v)", title, err)
		}
	}
	if entries, _ := os.ReadDir(pulled); len(entries) != len(files) {
		t.Errorf("oras pulled %d files, want %d", len(entries), len(files))
	}
}

// stockTool skips a test that needs a consumer's tool (cosign, oras,
// skopeo) where it is not installed, and fails it where tools/test.sh
// requires it (the bootstrap builds cosign and oras into .cache/tools/bin
// and installs Debian's skopeo).
func stockTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CACHEON_REQUIRE_STOCK_TOOLS") != "" {
			t.Fatalf("%s is not on PATH and CACHEON_REQUIRE_STOCK_TOOLS is set (tools/bootstrap.sh test installs it)", name)
		}
		t.Skipf("%s is not installed: %v", name, err)
	}
	return p
}

// oras, where it is installed, addresses the release in its OCI layout by
// the image's tag, as it does any layout: index.json lists the image under
// "test" for cacheon-engine:test, not under the whole name.
func TestOrasAddressesTheLayoutByTag(t *testing.T) {
	stockTool(t, "oras")
	r := fixture.New(t)
	dir := r.Signed(t)
	l, err := store.OpenLayout(dir)
	if err != nil {
		t.Fatal(err)
	}
	img, err := l.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	want := img.Digest
	cmd := exec.Command("oras", "manifest", "fetch", "--descriptor", "--oci-layout", dir+":test")
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("oras manifest fetch --oci-layout %s:test: %v\n%s", dir, err, b)
	}
	var d struct {
		Digest string `json:"digest"`
	}
	if err := json.Unmarshal(b, &d); err != nil || d.Digest != want.String() {
		t.Errorf("oras fetched %s (%v), the release image is %s", b, err, want)
	}
}

// skopeo, where it is installed, addresses the layout by the image's tag
// too: its oci: transport looks the tag up in the same annotation, so
// `skopeo inspect oci:DIR:TAG` (and skopeo copy from there) finds the
// release image.
func TestSkopeoAddressesTheLayoutByTag(t *testing.T) {
	stockTool(t, "skopeo")
	r := fixture.New(t)
	dir := r.Signed(t)
	l, err := store.OpenLayout(dir)
	if err != nil {
		t.Fatal(err)
	}
	img, err := l.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("skopeo", "inspect", "oci:"+dir+":test")
	// skopeo reads its registries and policy configuration from HOME;
	// the test's is empty.
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	b, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if e, ok := err.(*exec.ExitError); ok {
			stderr = e.Stderr
		}
		t.Fatalf("skopeo inspect oci:%s:test: %v\n%s", dir, err, stderr)
	}
	var got struct {
		Digest string `json:"Digest"`
	}
	if err := json.Unmarshal(b, &got); err != nil || got.Digest != img.Digest.String() {
		t.Errorf("skopeo inspected %s (%v), the release image is %s", b, err, img.Digest)
	}
}
