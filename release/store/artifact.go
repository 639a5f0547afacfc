// Package store reads and writes release objects (the image, its
// attestations and signature bundles) wherever they live: an OCI image
// layout directory for offline use (Layout, here), or any OCI registry
// (remote.Registry, in release/store/remote, kept out of this package so
// that reading a layout links no HTTP client). Both backends implement
// Store; attestations are OCI 1.1 artifacts whose subject field
// refers to the image, found through the referrers API, the
// "sha256-<hex>" tag fallback, or the layout's index.json.
//
// Nothing a Store returns is trusted: Manifest and Blob hand back the bytes
// as served, and ReadManifest, ReadBlob and Referrers check them against
// their descriptors, so a registry or a directory that serves other bytes
// than it describes is caught with the digest it got and the one it wanted.
package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Artifact types of the release objects attached to an image.
const (
	ArtifactProvenance = "application/vnd.in-toto+json"
	ArtifactSBOM       = "application/spdx+json"
	ArtifactBundle     = "application/vnd.dev.sigstore.bundle.v0.3+json"
	// ArtifactInTotoLayout and ArtifactInTotoLink are the release's chain
	// of custody (release/intoto): the owner's signed in-toto layout and
	// each functionary's signed link, one artifact each.
	ArtifactInTotoLayout = "application/vnd.dev.cacheon.in-toto.layout+json"
	ArtifactInTotoLink   = "application/vnd.dev.cacheon.in-toto.link+json"

	// AnnotationPredicateType names the in-toto predicate inside a
	// statement or a signed bundle.
	AnnotationPredicateType = "dev.cacheon.release.predicate-type"

	// AnnotationTitle names a blob as a file (image-spec's
	// org.opencontainers.image.title): oras pull writes an artifact's
	// blob under this name, and skips blobs without one.
	AnnotationTitle = "org.opencontainers.image.title"
)

// emptyConfig is the OCI empty descriptor every artifact manifest uses as
// its config (image-spec 1.1 "guidance for an empty descriptor").
var emptyConfig = []byte("{}")

// EmptyConfig returns the bytes of the OCI empty descriptor, for a
// backend that uploads an artifact's config blob itself (a fresh slice,
// so no caller can change another's).
func EmptyConfig() []byte { return append([]byte(nil), emptyConfig...) }

func emptyDescriptor() v1.Descriptor {
	h, n, _ := v1.SHA256(bytes.NewReader(emptyConfig))
	return v1.Descriptor{MediaType: types.OCIEmptyJSON, Digest: h, Size: n, Data: emptyConfig}
}

// Titles of the release's artifact blobs, the file names a consumer gets
// from oras pull.
const (
	TitleSBOM       = "sbom.spdx.json"
	TitleProvenance = "provenance.intoto.json"
	TitleBundle     = "provenance.sigstore.json"
	// TitleSBOMBundle is the signed SBOM attestation's bundle.
	TitleSBOMBundle = "sbom.sigstore.json"
	// TitleLayout is the chain of custody's layout; each link is titled
	// <step>.<keyid>.link, as in-toto names it.
	TitleLayout = "root.layout"
)

// Artifact is one attachment: a single blob of a given artifact type.
type Artifact struct {
	ArtifactType string
	Data         []byte
	Annotations  map[string]string
	// Title, when set, is the blob's file name (AnnotationTitle); it must
	// be a safe one (CheckTitle).
	Title string
}

// CheckTitle refuses a blob title that is not a plain file name: empty,
// "." or "..", longer than 255 bytes, or holding a path separator, a
// control character or anything outside printable ASCII. A client writes
// the blob under this name, so anything else could place it outside the
// directory it pulls into.
func CheckTitle(title string) error {
	bad := title == "" || title == "." || title == ".." || len(title) > 255
	for _, r := range title {
		if r <= ' ' || r > '~' || r == '/' || r == '\\' || r == ':' {
			bad = true
		}
	}
	if bad {
		return fmt.Errorf("%w: artifact title %q is not a plain file name (printable ASCII without spaces, path separators or colons, not . or ..)", ErrBadDescriptor, title)
	}
	return nil
}

// manifest is an OCI 1.1 image manifest used as an artifact. It is its own
// type so the field order, and so the digest, is fixed here.
type manifest struct {
	SchemaVersion int64             `json:"schemaVersion"`
	MediaType     types.MediaType   `json:"mediaType"`
	ArtifactType  string            `json:"artifactType"`
	Config        v1.Descriptor     `json:"config"`
	Layers        []v1.Descriptor   `json:"layers"`
	Subject       *v1.Descriptor    `json:"subject,omitempty"`
	Annotations   map[string]string `json:"annotations,omitempty"`
}

// Manifest returns the artifact's manifest bytes referring to subject, the
// descriptor of those bytes and the descriptor of the data blob.
func (a Artifact) Manifest(subject v1.Descriptor) (raw []byte, desc, blob v1.Descriptor, err error) {
	if a.ArtifactType == "" {
		return nil, v1.Descriptor{}, v1.Descriptor{}, fmt.Errorf("artifact without an artifact type")
	}
	h, n, err := v1.SHA256(bytes.NewReader(a.Data))
	if err != nil {
		return nil, v1.Descriptor{}, v1.Descriptor{}, err
	}
	blob = v1.Descriptor{MediaType: types.MediaType(a.ArtifactType), Digest: h, Size: n}
	if a.Title != "" {
		if err := CheckTitle(a.Title); err != nil {
			return nil, v1.Descriptor{}, v1.Descriptor{}, err
		}
		blob.Annotations = map[string]string{AnnotationTitle: a.Title}
	}
	sub := v1.Descriptor{MediaType: subject.MediaType, Digest: subject.Digest, Size: subject.Size}
	m := manifest{
		SchemaVersion: 2,
		MediaType:     types.OCIManifestSchema1,
		ArtifactType:  a.ArtifactType,
		Config:        emptyDescriptor(),
		Layers:        []v1.Descriptor{blob},
		Subject:       &sub,
		Annotations:   a.Annotations,
	}
	raw, err = json.Marshal(m)
	if err != nil {
		return nil, v1.Descriptor{}, v1.Descriptor{}, err
	}
	mh, mn, err := v1.SHA256(bytes.NewReader(raw))
	if err != nil {
		return nil, v1.Descriptor{}, v1.Descriptor{}, err
	}
	desc = v1.Descriptor{
		MediaType:    types.OCIManifestSchema1,
		ArtifactType: a.ArtifactType,
		Digest:       mh,
		Size:         mn,
		Annotations:  a.Annotations,
	}
	return raw, desc, blob, nil
}

// Referrer is an attachment read back and checked: its manifest hashes to
// Descriptor.Digest, refers to the subject it was listed for, and its one
// blob hashes to the manifest's layer descriptor.
type Referrer struct {
	Descriptor   v1.Descriptor
	ArtifactType string
	Annotations  map[string]string
	Blob         v1.Descriptor
	Data         []byte
}

// Title is the file name the blob's descriptor gives it ("" for none).
func (r *Referrer) Title() string { return r.Blob.Annotations[AnnotationTitle] }

// parseArtifact checks raw as an artifact manifest referring to subject.
func parseArtifact(raw []byte, subject v1.Hash) (*manifest, error) {
	var m manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("parse artifact manifest: %w", err)
	}
	if m.Subject == nil || m.Subject.Digest != subject {
		got := "none"
		if m.Subject != nil {
			got = m.Subject.Digest.String()
		}
		return nil, fmt.Errorf("artifact manifest subject is %s, want %s", got, subject)
	}
	if len(m.Layers) != 1 {
		return nil, fmt.Errorf("artifact manifest has %d blobs, want 1", len(m.Layers))
	}
	if m.ArtifactType == "" {
		// Some writers put the type only on the blob.
		m.ArtifactType = string(m.Layers[0].MediaType)
	}
	return &m, nil
}

// Candidates lists what s says may be attached to subject, unread and so
// unchecked: image manifests other than subject, duplicates removed, in
// digest order. A list longer than MaxIndexEntries is refused rather than
// read, and so is a candidate whose descriptor could not be read
// (CheckDescriptor with MaxManifestSize). Callers open the candidates
// they need with OpenReferrer, as late as they can.
func Candidates(s Store, subject v1.Hash) ([]v1.Descriptor, error) {
	out, skipped, err := ListCandidates(s, subject)
	if err != nil {
		return nil, err
	}
	if len(skipped) > 0 {
		return nil, skipped[0].Err
	}
	return out, nil
}

// Skipped is a listed candidate passed over, and why.
type Skipped struct {
	Descriptor v1.Descriptor
	Err        error
}

// ListCandidates is Candidates for a reader that needs only some of the
// attachments (a verifier): a candidate whose descriptor could not be
// read is returned in skipped instead of refusing the whole list, so
// that anyone able to attach something to an image cannot make its
// genuine attestations unreadable. A list longer than MaxIndexEntries is
// still refused: it is bounded before anything is looked at.
func ListCandidates(s Store, subject v1.Hash) (cands []v1.Descriptor, skipped []Skipped, err error) {
	descs, err := s.Referrers(subject)
	if err != nil {
		return nil, nil, fmt.Errorf("list referrers of %s in %s: %w", subject, s.Location(), err)
	}
	if len(descs) > MaxIndexEntries {
		return nil, nil, fmt.Errorf("referrers of %s in %s: %w: %d listed, the limit is %d", subject, s.Location(), ErrTooManyEntries, len(descs), MaxIndexEntries)
	}
	seen := map[v1.Hash]bool{}
	for _, d := range descs {
		if seen[d.Digest] || !d.MediaType.IsImage() || d.Digest == subject {
			continue
		}
		seen[d.Digest] = true
		if err := CheckDescriptor(d, MaxManifestSize); err != nil {
			skipped = append(skipped, Skipped{Descriptor: d, Err: fmt.Errorf("referrer of %s in %s: %w", subject, s.Location(), err)})
			continue
		}
		cands = append(cands, d)
	}
	sort.Slice(cands, func(i, j int) bool { return cands[i].Digest.String() < cands[j].Digest.String() })
	return cands, skipped, nil
}

// OpenReferrer reads candidate d's manifest and checks it against d and
// as an artifact for subject; its blob is not read yet (Data is nil, see
// LoadReferrer). A candidate that is not an artifact for subject gives
// nil and no error (an index can list anything).
func OpenReferrer(s Store, subject v1.Hash, d v1.Descriptor) (*Referrer, error) {
	raw, err := ReadManifest(s, d)
	if err != nil {
		return nil, err
	}
	m, err := parseArtifact(raw, subject)
	if err != nil {
		return nil, nil
	}
	return &Referrer{Descriptor: d, ArtifactType: m.ArtifactType, Annotations: m.Annotations, Blob: m.Layers[0]}, nil
}

// LoadReferrer reads r's blob (at most MaxArtifactSize bytes) and checks
// it against r.Blob.
func LoadReferrer(s Store, r *Referrer) error {
	data, err := ReadBlob(s, r.Blob, MaxArtifactSize)
	if err != nil {
		return fmt.Errorf("artifact %s (%s): %w", r.Descriptor.Digest, r.ArtifactType, err)
	}
	r.Data = data
	return nil
}

// Referrers lists the artifacts attached to subject in s, checking every
// byte, and returns them sorted by artifact type and manifest digest.
// Candidates that are not artifacts for subject (an index can list
// anything) are skipped; bytes that do not match their digests are errors.
// It reads every attachment: a verifier reads only what it needs, through
// Candidates and OpenReferrer.
func Referrers(s Store, subject v1.Hash) ([]Referrer, error) {
	descs, err := Candidates(s, subject)
	if err != nil {
		return nil, err
	}
	var out []Referrer
	for _, d := range descs {
		r, err := OpenReferrer(s, subject, d)
		if err != nil {
			return nil, err
		}
		if r == nil {
			continue
		}
		if err := LoadReferrer(s, r); err != nil {
			return nil, err
		}
		out = append(out, *r)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].ArtifactType < out[j].ArtifactType })
	return out, nil
}
