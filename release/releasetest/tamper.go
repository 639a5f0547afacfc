package releasetest

import (
	"bytes"
	"compress/gzip"
	"crypto"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/cacheon/engine/internal/canonjson"
	"github.com/cacheon/engine/release/build"
	"github.com/cacheon/engine/release/descriptor"
	"github.com/cacheon/engine/release/key"
	"github.com/cacheon/engine/release/provenance"
	"github.com/cacheon/engine/release/sbom"
	"github.com/cacheon/engine/release/sign"
	"github.com/cacheon/engine/release/store"
	"github.com/cacheon/engine/release/verify"
)

// Tamper is one change an attacker makes to a signed release layout,
// and what verification must make of it. The table is shared by the
// verifier's tests (which check the failed check by name) and the
// command line's (which check exit 2 and the check in the JSON report),
// so that every class is held to both.
type Tamper struct {
	Name string
	// Check rejects the tamper; "" when the genuine release must still
	// verify (the tamper is an extra an attacker attached).
	Check string
	// Want is in the failure's message, or, for Check "", in a note of
	// the report.
	Want  string
	Apply func(t testing.TB, dir string, r *Release)
}

// Signed builds r and signs it with r.Signer.
func (r *Release) Signed(t testing.TB) string {
	t.Helper()
	return r.SignedFrom(t, nil)
}

// SignedFrom builds r, its descriptor recording that the entrypoint is
// built from src (nil: nothing recorded), and signs it with r.Signer.
func (r *Release) SignedFrom(t testing.TB, src *descriptor.EntrypointSource) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "release")
	in := r.Inputs(dir)
	in.EntrypointSource = src
	if _, err := build.Build(in, nil); err != nil {
		t.Fatalf("build release: %v", err)
	}
	l, err := store.OpenLayout(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sign.Release(l, r.Signer); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Tampers is the table of attacker-controlled changes to a signed layout:
// extras a genuine release survives, and faults that fail a named check
// (exit 2, never 1).
func Tampers() []Tamper {
	return []Tamper{
		// Extras: a genuine release still verifies, with a note.
		{Name: "replayed bundle of another image, tried first", Want: "signed image subject",
			Apply: func(t testing.TB, dir string, r *Release) {
				replayed := replayedBundle(t, dir, r.Signer)
				attachBefore(t, dir, store.ArtifactBundle, replayed, bundleDigest(t, dir))
			}},
		{Name: "bundle by an untrusted key, tried first", Want: "not in the trusted key policy",
			Apply: func(t testing.TB, dir string, r *Release) {
				other, _, _ := Keys(t, t.TempDir(), "attacker", key.Ed25519)
				b, _, err := sign.Statement(Attached(t, dir, store.ArtifactProvenance), other)
				if err != nil {
					t.Fatal(err)
				}
				attachBefore(t, dir, store.ArtifactBundle, b, bundleDigest(t, dir))
			}},
		{Name: "bundle whose blob is missing, tried first", Want: "is missing",
			Apply: func(t testing.TB, dir string, r *Release) {
				b := append(Attached(t, dir, store.ArtifactBundle), '\n')
				blob := attachBefore(t, dir, store.ArtifactBundle, b, bundleDigest(t, dir))
				removeBlob(t, dir, blob)
			}},
		{Name: "referrer of an unknown artifact type", Want: `artifact type "application/vnd.example.junk"`,
			Apply: func(t testing.TB, dir string, r *Release) {
				Attach(t, dir, store.Artifact{ArtifactType: "application/vnd.example.junk", Data: []byte("junk")})
			}},
		{Name: "referrer of an unknown type whose blob is missing", Want: `listed as artifact type "application/vnd.example.junk"`,
			Apply: func(t testing.TB, dir string, r *Release) {
				_, blob := Attach(t, dir, store.Artifact{ArtifactType: "application/vnd.example.junk", Data: []byte("junk with no blob")})
				removeBlob(t, dir, blob)
			}},
		{Name: "untyped listing, first referrer's manifest is missing", Want: "is missing",
			Apply: func(t testing.TB, dir string, r *Release) {
				untypeAll(t, dir)
				addIndexEntry(t, dir, v1.Descriptor{MediaType: types.OCIManifestSchema1, Digest: firstDigest(), Size: 500})
			}},
		{Name: "referrer listed with an oversized descriptor", Want: "too large",
			Apply: func(t testing.TB, dir string, r *Release) {
				addIndexEntry(t, dir, v1.Descriptor{MediaType: types.OCIManifestSchema1, ArtifactType: store.ArtifactBundle, Digest: randomDigest(), Size: 1 << 40})
			}},
		{Name: "untyped listing, first referrer's manifest is over the limit", Want: "too large",
			Apply: func(t testing.TB, dir string, r *Release) {
				untypeAll(t, dir)
				d := firstDigest()
				WriteBlob(t, dir, d, bytes.Repeat([]byte(" "), store.MaxManifestSize+1))
				addIndexEntry(t, dir, v1.Descriptor{MediaType: types.OCIManifestSchema1, Digest: d, Size: 1000})
			}},

		{Name: "SBOM attestation by an untrusted key, tried first", Want: "not in the trusted key policy",
			Apply: func(t testing.TB, dir string, r *Release) {
				other, _, _ := Keys(t, t.TempDir(), "attacker", key.Ed25519)
				attachSBOMBundleBefore(t, dir, SBOMBundle(t, dir, other, nil))
			}},
		{Name: "SBOM attestation replayed from another image, tried first", Want: "the SBOM attestation signed by key",
			Apply: func(t testing.TB, dir string, r *Release) {
				attachSBOMBundleBefore(t, dir, SBOMBundle(t, dir, r.Signer, otherSubject))
			}},

		// Faults: a named check fails.
		{Name: "the SBOM attestation is missing", Check: verify.CheckSBOMAttestation, Want: "missing attestation: no signed SBOM attestation",
			Apply: func(t testing.TB, dir string, r *Release) { ReplaceSBOMAttestation(t, dir, nil) }},
		{Name: "the SBOM attestation is signed by another key", Check: verify.CheckSBOMAttestation, Want: "not in the trusted key policy",
			Apply: func(t testing.TB, dir string, r *Release) {
				other, _, _ := Keys(t, t.TempDir(), "attacker", key.Ed25519)
				ReplaceSBOMAttestation(t, dir, SBOMBundle(t, dir, other, nil))
			}},
		{Name: "the SBOM attestation's predicate is another SBOM", Check: verify.CheckSBOMAttestation, Want: `is not the release's SBOM`,
			Apply: func(t testing.TB, dir string, r *Release) {
				ReplaceSBOMAttestation(t, dir, SBOMBundle(t, dir, r.Signer, func(doc map[string]any) {
					doc["predicate"].(map[string]any)["name"] = "cacheon-engine-release-something-else"
				}))
			}},
		{Name: "the SBOM attestation is about another image", Check: verify.CheckSBOMAttestation, Want: "not image",
			Apply: func(t testing.TB, dir string, r *Release) {
				ReplaceSBOMAttestation(t, dir, SBOMBundle(t, dir, r.Signer, otherSubject))
			}},
		{Name: "the SBOM attestation has another predicate type", Check: verify.CheckSBOMAttestation, Want: "is not an SBOM attestation",
			Apply: func(t testing.TB, dir string, r *Release) {
				ReplaceSBOMAttestation(t, dir, SBOMBundle(t, dir, r.Signer, func(doc map[string]any) {
					doc["predicateType"] = "https://cyclonedx.org/bom"
				}))
			}},
		{Name: "the only bundle is replayed from another image", Check: verify.CheckSubjects, Want: "signed image subject",
			Apply: func(t testing.TB, dir string, r *Release) {
				replayed := replayedBundle(t, dir, r.Signer)
				Detach(t, dir, store.ArtifactBundle)
				Attach(t, dir, store.Artifact{ArtifactType: store.ArtifactBundle, Data: replayed})
			}},
		{Name: "two bundles, neither binds: replayed and by an untrusted key", Check: verify.CheckSubjects, Want: "none of the 2 signature bundles binds image",
			Apply: func(t testing.TB, dir string, r *Release) {
				replayed := replayedBundle(t, dir, r.Signer)
				other, _, _ := Keys(t, t.TempDir(), "attacker", key.Ed25519)
				foreign, _, err := sign.Statement(Attached(t, dir, store.ArtifactProvenance), other)
				if err != nil {
					t.Fatal(err)
				}
				Detach(t, dir, store.ArtifactBundle)
				Attach(t, dir, store.Artifact{ArtifactType: store.ArtifactBundle, Data: replayed})
				Attach(t, dir, store.Artifact{ArtifactType: store.ArtifactBundle, Data: foreign})
			}},
		{Name: "the only bundle's blob is missing", Check: verify.CheckAttestations, Want: "no readable signature bundle",
			Apply: func(t testing.TB, dir string, r *Release) {
				removeBlob(t, dir, artifactBlob(t, dir, store.ArtifactBundle))
			}},
		{Name: "the only bundle's manifest is missing", Check: verify.CheckAttestations, Want: "no signature bundle",
			Apply: func(t testing.TB, dir string, r *Release) { removeBlob(t, dir, bundleDigest(t, dir)) }},
		{Name: "the provenance blob is missing", Check: verify.CheckProvenance, Want: "is missing",
			Apply: func(t testing.TB, dir string, r *Release) {
				removeBlob(t, dir, artifactBlob(t, dir, store.ArtifactProvenance))
			}},
		{Name: "the SBOM blob is missing", Check: verify.CheckSBOM, Want: "is missing",
			Apply: func(t testing.TB, dir string, r *Release) {
				removeBlob(t, dir, artifactBlob(t, dir, store.ArtifactSBOM))
			}},
		{Name: "the SBOM blob is larger than its descriptor", Check: verify.CheckSBOM, Want: "do not match the descriptor",
			Apply: func(t testing.TB, dir string, r *Release) {
				d := artifactBlob(t, dir, store.ArtifactSBOM)
				WriteBlob(t, dir, d, append(Attached(t, dir, store.ArtifactSBOM), make([]byte, 1<<20)...))
			}},
		{Name: "the image manifest is missing", Check: verify.CheckImage, Want: "is missing",
			Apply: func(t testing.TB, dir string, r *Release) { removeBlob(t, dir, ImageManifest(t, dir).digest) }},
		{Name: "a layer blob is missing", Check: verify.CheckBlobs, Want: "is missing",
			Apply: func(t testing.TB, dir string, r *Release) {
				removeBlob(t, dir, ImageManifest(t, dir).m.Layers[0].Digest)
			}},
		{Name: "the config blob is missing", Check: verify.CheckBlobs, Want: "is missing",
			Apply: func(t testing.TB, dir string, r *Release) { removeBlob(t, dir, ImageManifest(t, dir).m.Config.Digest) }},
		{Name: "a layer blob is larger than its descriptor", Check: verify.CheckBlobs, Want: "do not match the descriptor",
			Apply: func(t testing.TB, dir string, r *Release) {
				l := ImageManifest(t, dir).m.Layers[0]
				p := filepath.Join(dir, "blobs", "sha256", l.Digest.Hex)
				b, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				WriteBlob(t, dir, l.Digest, append(b, make([]byte, 1<<20)...))
			}},
		{Name: "a signed layer that is not gzip", Check: verify.CheckBlobs, Want: "invalid compressed stream",
			Apply: func(t testing.TB, dir string, r *Release) {
				junk := make([]byte, 4096)
				rand.Read(junk)
				ResignWithLayer(t, dir, r.Signer, "release", junk)
			}},
		{Name: "a signed layer whose tar is broken", Check: verify.CheckBlobs, Want: "malformed tar stream",
			Apply: func(t testing.TB, dir string, r *Release) {
				var buf bytes.Buffer
				zw := gzip.NewWriter(&buf)
				zw.Write(bytes.Repeat([]byte("not a tar header "), 200))
				zw.Close()
				ResignWithLayer(t, dir, r.Signer, "release", buf.Bytes())
			}},
		{Name: "an index over the entry limit", Check: verify.CheckImage, Want: "too many entries",
			Apply: func(t testing.TB, dir string, r *Release) {
				im := ReadIndex(t, dir)
				for i := 0; i <= store.MaxIndexEntries; i++ {
					im.Manifests = append(im.Manifests, v1.Descriptor{MediaType: types.OCIManifestSchema1, Digest: randomDigest(), Size: 100})
				}
				WriteIndex(t, dir, im)
			}},
	}
}

// --- layout surgery ------------------------------------------------------

// ReadIndex reads the layout's index.json.
func ReadIndex(t testing.TB, dir string) *v1.IndexManifest {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	im, err := v1.ParseIndexManifest(f)
	if err != nil {
		t.Fatal(err)
	}
	return im
}

// WriteIndex replaces the layout's index.json.
func WriteIndex(t testing.TB, dir string, im *v1.IndexManifest) {
	t.Helper()
	b, err := json.Marshal(im)
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(dir, "index.json"), b)
}

// WriteBlob writes data as the blob named d, whatever it hashes to.
func WriteBlob(t testing.TB, dir string, d v1.Hash, data []byte) {
	t.Helper()
	mustWrite(t, filepath.Join(dir, "blobs", "sha256", d.Hex), data)
}

func removeBlob(t testing.TB, dir string, d v1.Hash) {
	t.Helper()
	if err := os.Remove(filepath.Join(dir, "blobs", "sha256", d.Hex)); err != nil {
		t.Fatal(err)
	}
}

func addIndexEntry(t testing.TB, dir string, d v1.Descriptor) {
	t.Helper()
	im := ReadIndex(t, dir)
	im.Manifests = append(im.Manifests, d)
	WriteIndex(t, dir, im)
}

// untypeAll lists every artifact without its type, as registries that
// do not record artifactType do: a verifier must open candidates to learn
// what they are.
func untypeAll(t testing.TB, dir string) {
	t.Helper()
	im := ReadIndex(t, dir)
	for i := range im.Manifests {
		im.Manifests[i].ArtifactType = ""
	}
	WriteIndex(t, dir, im)
}

// firstDigest is a random digest that sorts before any real one (in
// practice), so a verifier trying candidates in digest order meets it
// first.
func firstDigest() v1.Hash {
	d := randomDigest()
	d.Hex = "0000000000" + d.Hex[10:]
	return d
}

func randomDigest() v1.Hash {
	b := make([]byte, 32)
	rand.Read(b)
	return v1.Hash{Algorithm: "sha256", Hex: fmt.Sprintf("%x", b)}
}

type imageManifest struct {
	desc   v1.Descriptor
	digest v1.Hash
	m      *v1.Manifest
}

// ImageManifest reads the release image's manifest.
func ImageManifest(t testing.TB, dir string) imageManifest {
	t.Helper()
	desc, m := ReadImageManifest(t, dir)
	return imageManifest{desc: desc, digest: desc.Digest, m: m}
}

// ReadImageManifest reads the release image's descriptor and manifest
// from the layout at dir.
func ReadImageManifest(t testing.TB, dir string) (v1.Descriptor, *v1.Manifest) {
	t.Helper()
	l, desc := OpenResolved(t, dir)
	raw, err := store.ReadManifest(l, desc)
	if err != nil {
		t.Fatal(err)
	}
	m, err := v1.ParseManifest(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	return desc, m
}

// attached returns every artifact attached to the layout's image.
func attached(t testing.TB, dir string) []store.Referrer {
	t.Helper()
	l, desc := OpenResolved(t, dir)
	refs, err := store.Referrers(l, desc.Digest)
	if err != nil {
		t.Fatal(err)
	}
	return refs
}

// referrer returns the one attached artifact of type typ; for bundles,
// the provenance's (the SBOM attestation's is SBOMAttestation).
func referrer(t testing.TB, dir, typ string) store.Referrer {
	t.Helper()
	for _, r := range attached(t, dir) {
		if r.ArtifactType == typ && (typ != store.ArtifactBundle || r.Annotations[store.AnnotationPredicateType] != sbom.PredicateType) {
			return r
		}
	}
	t.Fatalf("no %s attached", typ)
	return store.Referrer{}
}

// SBOMAttestation returns the attached bundle of the signed SBOM
// attestation.
func SBOMAttestation(t testing.TB, dir string) store.Referrer {
	t.Helper()
	for _, r := range attached(t, dir) {
		if r.ArtifactType == store.ArtifactBundle && r.Annotations[store.AnnotationPredicateType] == sbom.PredicateType {
			return r
		}
	}
	t.Fatal("no SBOM attestation attached")
	return store.Referrer{}
}

// SBOMBundle signs, with signer, the SBOM attestation of the attached
// SBOM after edit has changed its statement (nil: as sign.Release does).
func SBOMBundle(t testing.TB, dir string, signer crypto.Signer, edit func(doc map[string]any)) []byte {
	t.Helper()
	p, err := provenance.Parse(Attached(t, dir, store.ArtifactProvenance))
	if err != nil {
		t.Fatal(err)
	}
	statement, err := sbom.Statement(Attached(t, dir, store.ArtifactSBOM), p.Subjects[0].Name, ImageManifest(t, dir).digest.String())
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		statement = editCanonical(t, statement, edit)
	}
	b, _, err := sign.Statement(statement, signer)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sbomBundleArtifact is bundle attached as sign.Release attaches the SBOM
// attestation.
func sbomBundleArtifact(bundle []byte) store.Artifact {
	return store.Artifact{ArtifactType: store.ArtifactBundle, Data: bundle, Title: store.TitleSBOMBundle,
		Annotations: map[string]string{store.AnnotationPredicateType: sbom.PredicateType}}
}

// ReplaceSBOMAttestation detaches the genuine SBOM attestation and, when
// bundle is not nil, attaches bundle in its place.
func ReplaceSBOMAttestation(t testing.TB, dir string, bundle []byte) {
	t.Helper()
	detachDigest(t, dir, SBOMAttestation(t, dir).Descriptor.Digest)
	if bundle != nil {
		Attach(t, dir, sbomBundleArtifact(bundle))
	}
}

// attachSBOMBundleBefore attaches bundle as an SBOM attestation whose
// manifest sorts before the genuine one's, so that a verifier meets it
// first.
func attachSBOMBundleBefore(t testing.TB, dir string, bundle []byte) {
	t.Helper()
	_, desc := OpenResolved(t, dir)
	before := SBOMAttestation(t, dir).Descriptor.Digest.String()
	for i := 0; i < 10000; i++ {
		a := sbomBundleArtifact(bundle)
		a.Annotations["org.example.nonce"] = fmt.Sprint(i)
		_, md, _, err := a.Manifest(desc)
		if err != nil {
			t.Fatal(err)
		}
		if md.Digest.String() < before {
			Attach(t, dir, a)
			return
		}
	}
	t.Fatal("no nonce sorts the SBOM attestation first")
}

// DetachBundle removes the provenance's signature bundle, leaving the
// SBOM attestation's.
func DetachBundle(t testing.TB, dir string) { detachDigest(t, dir, bundleDigest(t, dir)) }

// detachDigest removes the index entry of manifest d.
func detachDigest(t testing.TB, dir string, d v1.Hash) {
	t.Helper()
	im := ReadIndex(t, dir)
	var keep []v1.Descriptor
	for _, m := range im.Manifests {
		if m.Digest != d {
			keep = append(keep, m)
		}
	}
	if len(keep) == len(im.Manifests) {
		t.Fatalf("%s is not in the index", d)
	}
	im.Manifests = keep
	WriteIndex(t, dir, im)
}

// Attached returns the data of the attached artifact of type typ.
func Attached(t testing.TB, dir, typ string) []byte { return referrer(t, dir, typ).Data }

func bundleDigest(t testing.TB, dir string) v1.Hash {
	return referrer(t, dir, store.ArtifactBundle).Descriptor.Digest
}

func artifactBlob(t testing.TB, dir, typ string) v1.Hash { return referrer(t, dir, typ).Blob.Digest }

// Attach attaches a to the layout's image and returns the digests of its
// manifest and blob.
func Attach(t testing.TB, dir string, a store.Artifact) (manifest, blob v1.Hash) {
	t.Helper()
	l, desc := OpenResolved(t, dir)
	d, err := l.Attach(desc, a)
	if err != nil {
		t.Fatal(err)
	}
	_, _, b, err := a.Manifest(desc)
	if err != nil {
		t.Fatal(err)
	}
	return d.Digest, b.Digest
}

// attachBefore attaches data as an artifact of type typ whose manifest
// digest sorts before before, so that a verifier trying candidates in
// digest order meets it first; it returns the blob's digest.
func attachBefore(t testing.TB, dir, typ string, data []byte, before v1.Hash) v1.Hash {
	t.Helper()
	_, desc := OpenResolved(t, dir)
	for i := 0; i < 10000; i++ {
		a := store.Artifact{ArtifactType: typ, Data: data, Annotations: map[string]string{"org.example.nonce": fmt.Sprint(i)}}
		_, md, _, err := a.Manifest(desc)
		if err != nil {
			t.Fatal(err)
		}
		if md.Digest.String() < before.String() {
			_, blob := Attach(t, dir, a)
			return blob
		}
	}
	t.Fatal("no nonce sorts the artifact first")
	return v1.Hash{}
}

// Detach removes every artifact of type typ from the layout's index.
func Detach(t testing.TB, dir, typ string) {
	t.Helper()
	im := ReadIndex(t, dir)
	var keep []v1.Descriptor
	for _, d := range im.Manifests {
		if d.ArtifactType != typ {
			keep = append(keep, d)
		}
	}
	im.Manifests = keep
	WriteIndex(t, dir, im)
}

// EditStatement edits the attached provenance statement and returns it,
// canonical, signed by signer: the bundle is not attached.
func EditStatement(t testing.TB, dir string, signer crypto.Signer, edit func(doc map[string]any)) (statement, bundle []byte) {
	t.Helper()
	statement = editCanonical(t, Attached(t, dir, store.ArtifactProvenance), edit)
	var err error
	if bundle, _, err = sign.Statement(statement, signer); err != nil {
		t.Fatal(err)
	}
	return statement, bundle
}

// editCanonical decodes a JSON document, edits it and re-encodes it as
// canonical JSON, as a signed statement is encoded.
func editCanonical(t testing.TB, b []byte, edit func(doc map[string]any)) []byte {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	edit(doc)
	raw, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	v, err := canonjson.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	out, err := canonjson.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// otherSubject makes a statement name another image.
func otherSubject(doc map[string]any) {
	doc["subject"].([]any)[0].(map[string]any)["digest"] = map[string]any{"sha256": randomDigest().Hex}
}

// replayedBundle is a bundle signed by signer, as of another release: its
// statement names another image.
func replayedBundle(t testing.TB, dir string, signer crypto.Signer) []byte {
	t.Helper()
	_, b := EditStatement(t, dir, signer, otherSubject)
	return b
}

// ResignWithLayer replaces our layer role (substrate, entrypoint,
// engine-tree, release) with data and re-signs everything with signer,
// as a compromised build would: the image manifest names the new layer,
// the statement names the new image and layer, and the old attestations
// are replaced. Only what comes after the signature can reject it.
func ResignWithLayer(t testing.TB, dir string, signer crypto.Signer, role string, data []byte) {
	t.Helper()
	im := ImageManifest(t, dir)
	i := len(im.m.Layers) - map[string]int{"substrate": 4, "entrypoint": 3, "engine-tree": 2, "release": 1}[role]
	h, n, err := v1.SHA256(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	WriteBlob(t, dir, h, data)
	im.m.Layers[i].Digest, im.m.Layers[i].Size = h, n
	raw, err := json.Marshal(im.m)
	if err != nil {
		t.Fatal(err)
	}
	mh, mn, _ := v1.SHA256(bytes.NewReader(raw))
	WriteBlob(t, dir, mh, raw)
	sbom := Attached(t, dir, store.ArtifactSBOM)
	statement, bundle := EditStatement(t, dir, signer, func(doc map[string]any) {
		doc["subject"].([]any)[0].(map[string]any)["digest"] = map[string]any{"sha256": mh.Hex}
		run := doc["predicate"].(map[string]any)["runDetails"].(map[string]any)
		for _, b := range run["byproducts"].([]any) {
			if m := b.(map[string]any); m["name"] == provenance.LayerByproduct(role) {
				m["digest"] = map[string]any{"sha256": h.Hex}
			}
		}
	})
	index := ReadIndex(t, dir)
	var keep []v1.Descriptor
	for _, d := range index.Manifests {
		switch {
		case d.ArtifactType != "":
		case d.Digest == im.digest:
			d.Digest, d.Size = mh, mn
			keep = append(keep, d)
		default:
			keep = append(keep, d)
		}
	}
	index.Manifests = keep
	WriteIndex(t, dir, index)
	for _, a := range []store.Artifact{
		{ArtifactType: store.ArtifactSBOM, Data: sbom},
		{ArtifactType: store.ArtifactProvenance, Data: statement},
		{ArtifactType: store.ArtifactBundle, Data: bundle},
	} {
		Attach(t, dir, a)
	}
}

// HasNote says whether a report's notes mention want.
func HasNote(rep *verify.Report, want string) bool {
	for _, n := range rep.Notes {
		if strings.Contains(n, want) {
			return true
		}
	}
	return false
}

// OpenResolved opens the layout at dir and resolves its release image,
// failing the test on either error.
func OpenResolved(t testing.TB, dir string) (*store.Layout, v1.Descriptor) {
	t.Helper()
	l, err := store.OpenLayout(dir)
	if err != nil {
		t.Fatal(err)
	}
	desc, err := l.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	return l, desc
}
