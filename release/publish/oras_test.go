package publish_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	ggcr "github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/cacheon/engine/release/envelope"
	"github.com/cacheon/engine/release/key"
	"github.com/cacheon/engine/release/provenance"
	"github.com/cacheon/engine/release/publish"
	"github.com/cacheon/engine/release/registrytest"
	"github.com/cacheon/engine/release/sbom"
	"github.com/cacheon/engine/release/store"
	"github.com/cacheon/engine/release/store/remote"
	"github.com/cacheon/engine/release/verify"
)

func publishTo(t *testing.T, reg *registrytest.Registry, l *store.Layout, opts publish.Options) *publish.Result {
	t.Helper()
	target, err := remote.Open(reg.Host+"/engine:1.0", false)
	if err != nil {
		t.Fatal(err)
	}
	res, err := publish.Publish(l, target, opts)
	if err != nil {
		t.Fatalf("publish: %v", err)
	}
	return res
}

func manifestAt(t *testing.T, ref name.Reference) (*v1.Manifest, v1.Hash) {
	t.Helper()
	d, err := ggcr.Get(ref)
	if err != nil {
		t.Fatalf("get %s: %v", ref, err)
	}
	m, err := v1.ParseManifest(bytes.NewReader(d.Manifest))
	if err != nil {
		t.Fatal(err)
	}
	return m, d.Digest
}

func blobAt(t *testing.T, repo name.Repository, h v1.Hash) []byte {
	t.Helper()
	l, err := ggcr.Layer(repo.Digest(h.String()))
	if err != nil {
		t.Fatal(err)
	}
	rc, err := l.Compressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// oras pull writes a blob under its org.opencontainers.image.title and
// skips blobs without one: every artifact the release publishes names
// its blob with a plain file name, in the layout and in the registry.
func TestPublishedArtifactsCarrySafeTitles(t *testing.T) {
	reg := registrytest.Start(t)
	_, l := signedLayout(t)
	res := publishTo(t, reg, l, publish.Options{})
	// A bundle's title says what it signs: the provenance or the SBOM.
	want := map[string]string{store.ArtifactSBOM: store.TitleSBOM, store.ArtifactProvenance: store.TitleProvenance,
		store.ArtifactBundle + provenance.PredicateType: store.TitleBundle, store.ArtifactBundle + sbom.PredicateType: store.TitleSBOMBundle}
	kind := func(typ string, annotations map[string]string) string {
		if typ == store.ArtifactBundle {
			return typ + annotations[store.AnnotationPredicateType]
		}
		return typ
	}
	repo, _ := name.NewRepository(reg.Host + "/engine")
	seen := map[string]bool{}
	for _, a := range res.Artifacts {
		typ, digest, _ := strings.Cut(a, "@")
		m, _ := manifestAt(t, repo.Digest(digest))
		if len(m.Layers) != 1 {
			t.Fatalf("%s: %d layers", a, len(m.Layers))
		}
		k := kind(typ, m.Annotations)
		title := m.Layers[0].Annotations[store.AnnotationTitle]
		if title != want[k] {
			t.Errorf("%s: blob title %q, want %q", a, title, want[k])
		}
		if err := store.CheckTitle(title); err != nil || strings.ContainsAny(title, `/\`) {
			t.Errorf("%s: unsafe title %q (%v)", a, title, err)
		}
		seen[k] = true
	}
	if len(seen) != 4 {
		t.Errorf("published %v, want the four attestations (SBOM, provenance, their two signed bundles)", res.Artifacts)
	}
	// The layout the registry got them from has the same manifests.
	desc := mustResolve(t, l)
	refs, err := store.Referrers(l, desc.Digest)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range refs {
		if k := kind(r.ArtifactType, r.Annotations); r.Title() != want[k] {
			t.Errorf("layout %s: title %q, want %q", k, r.Title(), want[k])
		}
	}
}

// --legacy-tags: sha256-<hex>.sig resolves to the provenance's signature
// bundle manifest, sha256-<hex>.att to an image whose layers are the two
// bundles' DSSE envelopes (each signed statement and its signature), the
// provenance's and the SBOM attestation's, annotated with their predicate
// types; the release still verifies from the registry.
func TestPublishLegacyTags(t *testing.T) {
	reg := registrytest.Start(t)
	r, l := signedLayout(t)
	plain := publishTo(t, reg, l, publish.Options{})
	if len(plain.LegacyTags) != 0 || strings.Contains(strings.Join(tags(t, reg.Host), " "), ".sig") {
		t.Fatalf("legacy tags written without the option: %v", plain.LegacyTags)
	}
	res := publishTo(t, reg, l, publish.Options{LegacyTags: true})
	repo, _ := name.NewRepository(reg.Host + "/engine")
	img, _ := v1.NewHash(res.ImageDigest)
	desc := mustResolve(t, l)
	var bundle, sbomBundle store.Referrer
	refs, _ := store.Referrers(l, desc.Digest)
	for _, ref := range refs {
		if ref.ArtifactType == store.ArtifactBundle {
			if ref.Annotations[store.AnnotationPredicateType] == sbom.PredicateType {
				sbomBundle = ref
			} else {
				bundle = ref
			}
		}
	}

	sigTag := repo.Tag("sha256-" + img.Hex + ".sig")
	sig, sigDigest := manifestAt(t, sigTag)
	if sigDigest != bundle.Descriptor.Digest || sig.Layers[0].Digest != bundle.Blob.Digest {
		t.Errorf("%s resolves to %s, the signature bundle's manifest is %s", sigTag, sigDigest, bundle.Descriptor.Digest)
	}

	attTag := repo.Tag("sha256-" + img.Hex + ".att")
	att, attDigest := manifestAt(t, attTag)
	if len(att.Layers) != 2 || att.Subject != nil {
		t.Fatalf("%s: manifest %+v, want two layers and no subject", attTag, att)
	}
	layerOf := map[string]v1.Descriptor{}
	for _, l := range att.Layers {
		_, sigAnnotation := l.Annotations["dev.cosignproject.cosign/signature"]
		if l.MediaType != store.MediaTypeDSSE || !sigAnnotation {
			t.Fatalf("%s: layer %+v", attTag, l)
		}
		layerOf[l.Annotations["predicateType"]] = l
	}
	if layerOf[sbom.PredicateType].Annotations[store.AnnotationTitle] != "sbom.dsse.json" || layerOf[provenance.PredicateType].Annotations[store.AnnotationTitle] != "provenance.dsse.json" {
		t.Errorf("%s: layers %+v, want provenance.dsse.json and sbom.dsse.json by predicate type", attTag, att.Layers)
	}
	sbomParsed, err := envelope.Parse(sbomBundle.Data)
	if err != nil {
		t.Fatal(err)
	}
	wantSBOMEnv, _ := sbomParsed.EnvelopeJSON()
	if got := blobAt(t, repo, layerOf[sbom.PredicateType].Digest); !bytes.Equal(got, wantSBOMEnv) {
		t.Errorf("the .att SBOM layer is not the SBOM attestation bundle's envelope:\n%s\n%s", got, wantSBOMEnv)
	}
	env := blobAt(t, repo, layerOf[provenance.PredicateType].Digest)
	parsed, err := envelope.Parse(bundle.Data)
	if err != nil {
		t.Fatal(err)
	}
	wantEnv, _ := parsed.EnvelopeJSON()
	if !bytes.Equal(env, wantEnv) {
		t.Errorf("the .att layer is not the bundle's envelope:\n%s\n%s", env, wantEnv)
	}
	var doc struct {
		PayloadType string `json:"payloadType"`
		Payload     string `json:"payload"`
		Signatures  []struct {
			Sig string `json:"sig"`
		} `json:"signatures"`
	}
	if err := json.Unmarshal(env, &doc); err != nil {
		t.Fatal(err)
	}
	payload, _ := base64.StdEncoding.DecodeString(doc.Payload)
	if doc.PayloadType != envelope.PayloadType || !bytes.Equal(payload, parsed.Payload) || len(doc.Signatures) != 1 || doc.Signatures[0].Sig == "" {
		t.Errorf("the envelope does not carry the signed statement and its signature: %s", env)
	}
	wantTags := []string{"sha256-" + img.Hex + ".sig@" + bundle.Descriptor.Digest.String(), "sha256-" + img.Hex + ".att@" + attDigest.String()}
	if strings.Join(res.LegacyTags, " ") != strings.Join(wantTags, " ") {
		t.Errorf("result legacy tags %v, want %v", res.LegacyTags, wantTags)
	}
	// Publishing again writes the same manifests.
	again := publishTo(t, reg, l, publish.Options{LegacyTags: true})
	if strings.Join(again.LegacyTags, " ") != strings.Join(res.LegacyTags, " ") {
		t.Errorf("republished legacy tags %v, first %v", again.LegacyTags, res.LegacyTags)
	}
	src, _ := remote.Open(reg.Host+"/engine:1.0", false)
	policy, _ := key.LoadPolicy(r.PublicKey)
	if _, err := verify.Run(src, verify.Options{Policy: policy}); err != nil {
		t.Fatalf("verify from the registry after the legacy tags: %v", err)
	}
}
