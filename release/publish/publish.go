// Package publish pushes a release from an OCI layout to any OCI
// registry: the image, then its attestations (SBOM, provenance, signature
// bundles) as OCI 1.1 referrers, and only then the tag.
//
// Nothing is published half-way: the layout is checked completely before
// the first request (every blob against its descriptor, the attestations
// present), blobs go before the manifests that name them, the image is
// pushed by digest, and the tag a consumer pulls by is written last, so
// an interrupted or refused publication leaves no tag pointing at an
// incomplete release. Registries without the referrers API get the
// "sha256-<hex>" tag fallback (go-containerregistry writes it). With
// Options.LegacyTags the release is also published under cosign's legacy
// tag scheme, for clients that predate referrers (see legacyTags).
package publish

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	ggcr "github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/cacheon/engine/release/envelope"
	"github.com/cacheon/engine/release/provenance"
	"github.com/cacheon/engine/release/sbom"
	"github.com/cacheon/engine/release/store"
	"github.com/cacheon/engine/release/store/remote"
)

// Result says what was published.
type Result struct {
	Reference   string   `json:"reference"`
	ImageDigest string   `json:"image_digest"`
	Artifacts   []string `json:"artifacts"` // artifact manifest digests, by type
	// LegacyTags are the legacy scheme's tags written, each as
	// tag@manifest digest (with Options.LegacyTags).
	LegacyTags []string `json:"legacy_tags"`
	Bytes      int64    `json:"bytes"`
}

// Options configure a publication.
type Options struct {
	Progress func(string)
	// LegacyTags also writes cosign's legacy tags sha256-<hex>.sig and
	// sha256-<hex>.att (see legacyTags).
	LegacyTags bool
}

// ErrIncomplete is wrapped when a layout is not a complete release.
var ErrIncomplete = errors.New("release layout is incomplete")

// Check reads every byte of the release in l and returns its image
// descriptor and attestations: a layout with a blob that does not match
// its descriptor, or without a signature bundle, provenance, SBOM and
// signed SBOM attestation, is refused before anything is sent.
func Check(l *store.Layout) (v1.Descriptor, []store.Referrer, int64, error) {
	desc, err := l.Resolve()
	if err != nil {
		return v1.Descriptor{}, nil, 0, err
	}
	raw, err := store.ReadManifest(l, desc)
	if err != nil {
		return v1.Descriptor{}, nil, 0, err
	}
	m, err := v1.ParseManifest(bytes.NewReader(raw))
	if err != nil {
		return v1.Descriptor{}, nil, 0, fmt.Errorf("parse manifest %s: %w", desc.Digest, err)
	}
	total := int64(len(raw))
	for _, d := range append([]v1.Descriptor{m.Config}, m.Layers...) {
		if err := store.CheckBlob(l, d, io.Discard); err != nil {
			return v1.Descriptor{}, nil, 0, err
		}
		total += d.Size
	}
	if bd, ok, err := l.Base(); err != nil {
		return v1.Descriptor{}, nil, 0, err
	} else if ok {
		braw, err := store.ReadManifest(l, bd)
		if err != nil {
			return v1.Descriptor{}, nil, 0, err
		}
		bm, err := v1.ParseManifest(bytes.NewReader(braw))
		if err != nil {
			return v1.Descriptor{}, nil, 0, fmt.Errorf("parse base manifest %s: %w", bd.Digest, err)
		}
		if err := store.CheckBlob(l, bm.Config, io.Discard); err != nil {
			return v1.Descriptor{}, nil, 0, err
		}
	}
	refs, err := store.Referrers(l, desc.Digest)
	if err != nil {
		return v1.Descriptor{}, nil, 0, err
	}
	have := map[string]bool{}
	for _, r := range refs {
		have[r.ArtifactType] = true
		if r.ArtifactType == store.ArtifactBundle && r.Annotations[store.AnnotationPredicateType] == sbom.PredicateType {
			have[sbom.PredicateType] = true
		}
		total += r.Blob.Size + r.Descriptor.Size
	}
	for _, typ := range []string{store.ArtifactSBOM, store.ArtifactProvenance, store.ArtifactBundle, sbom.PredicateType} {
		if !have[typ] {
			hint, what := "", typ
			switch typ {
			case store.ArtifactBundle:
				hint = " (sign it first: cacheon release sign --key KEY LAYOUT)"
			case sbom.PredicateType:
				// Signed by a tool that predates the SBOM attestation:
				// verification would refuse it.
				what = "signed SBOM attestation (" + typ + ")"
				hint = " (sign it again: cacheon release sign --key KEY LAYOUT)"
			}
			return v1.Descriptor{}, nil, 0, fmt.Errorf("%w: no %s attached to %s%s", ErrIncomplete, what, desc.Digest, hint)
		}
	}
	return desc, refs, total, nil
}

// Layout publishes the release in l to target (a registry store opened
// with a tag reference, or a digest reference for no tag).
func Layout(l *store.Layout, target *remote.Registry, progress func(string)) (*Result, error) {
	return Publish(l, target, Options{Progress: progress})
}

// Publish publishes the release in l to target with opts.
func Publish(l *store.Layout, target *remote.Registry, opts Options) (*Result, error) {
	progress := opts.Progress
	if progress == nil {
		progress = func(string) {}
	}
	progress("checking the layout")
	desc, refs, total, err := Check(l)
	if err != nil {
		return nil, err
	}
	lp, err := layout.FromPath(l.Dir())
	if err != nil {
		return nil, err
	}
	img, err := lp.Image(desc.Digest)
	if err != nil {
		return nil, fmt.Errorf("open image %s in %s: %w", desc.Digest, l.Dir(), err)
	}
	ref := target.Reference()
	repo := ref.Context()
	ropts := target.RemoteOptions()
	if d, ok := ref.(name.Digest); ok && d.DigestStr() != desc.Digest.String() {
		return nil, fmt.Errorf("reference %s names digest %s, the layout's image is %s", ref, d.DigestStr(), desc.Digest)
	}

	// The pinned base image goes first, by digest, so that a rebuild
	// needs nothing but this repository. Its layers are the image's.
	if bd, ok, err := l.Base(); err != nil {
		return nil, err
	} else if ok {
		base, err := lp.Image(bd.Digest)
		if err != nil {
			return nil, fmt.Errorf("open base image %s in %s: %w", bd.Digest, l.Dir(), err)
		}
		progress(fmt.Sprintf("pushing base image %s", bd.Digest))
		if err := ggcr.Write(repo.Digest(bd.Digest.String()), base, ropts...); err != nil {
			return nil, fmt.Errorf("push base image %s to %s: %w", bd.Digest, repo, err)
		}
	}
	progress(fmt.Sprintf("pushing image %s", desc.Digest))
	if err := ggcr.Write(repo.Digest(desc.Digest.String()), img, ropts...); err != nil {
		return nil, fmt.Errorf("push image %s to %s: %w", desc.Digest, repo, err)
	}
	res := &Result{Reference: ref.String(), ImageDigest: desc.Digest.String(), Bytes: total}
	// The signature goes last among the attestations: a consumer that sees
	// a bundle finds everything it signs already there.
	ordered := make([]store.Referrer, 0, len(refs))
	for _, pass := range []bool{false, true} {
		for _, r := range refs {
			if (r.ArtifactType == store.ArtifactBundle) == pass {
				ordered = append(ordered, r)
			}
		}
	}
	for _, r := range ordered {
		progress(fmt.Sprintf("pushing %s", r.ArtifactType))
		d, err := target.Attach(desc, store.Artifact{ArtifactType: r.ArtifactType, Data: r.Data, Annotations: r.Annotations, Title: r.Title()})
		if err != nil {
			return nil, err
		}
		if d.Digest != r.Descriptor.Digest {
			return nil, fmt.Errorf("artifact %s was pushed as %s; the layout has %s", r.ArtifactType, d.Digest, r.Descriptor.Digest)
		}
		res.Artifacts = append(res.Artifacts, r.ArtifactType+"@"+d.Digest.String())
	}
	if res.LegacyTags, err = finish(ref, img, desc, refs, opts.LegacyTags, ropts, progress, "publishing"); err != nil {
		return nil, err
	}
	return res, nil
}

// finish writes cosign's legacy tags when legacy is set, then the tag of
// ref, last of all, and checks that it reads back as desc; verb says what
// was done ("publishing", "mirroring"). It returns the legacy tags.
func finish(ref name.Reference, img ggcr.Taggable, desc v1.Descriptor, refs []store.Referrer, legacy bool, ropts []ggcr.Option, progress func(string), verb string) ([]string, error) {
	var tags []string
	if legacy {
		progress("writing the legacy .sig and .att tags")
		var err error
		if tags, err = legacyTags(ref.Context(), desc, refs, ropts); err != nil {
			return nil, err
		}
	}
	if tag, ok := ref.(name.Tag); ok {
		progress(fmt.Sprintf("tagging %s", tag))
		if err := ggcr.Tag(tag, img, ropts...); err != nil {
			return nil, fmt.Errorf("tag %s: %w", tag, err)
		}
		got, err := ggcr.Head(tag, ropts...)
		if err != nil {
			return nil, fmt.Errorf("read back %s: %w", tag, err)
		}
		if got.Digest != desc.Digest {
			return nil, fmt.Errorf("%s resolves to %s after %s, want %s", tag, got.Digest, verb, desc.Digest)
		}
	}
	return tags, nil
}

// legacyTags writes cosign's legacy tags for the image desc, for clients
// that look for signatures and attestations by tag rather than through
// referrers:
//
//   - sha256-<hex>.sig names the provenance's signature bundle manifest,
//     the one published as a referrer (the first in digest order when the
//     release has several);
//   - sha256-<hex>.att names an image whose layers are the DSSE envelopes
//     of every signature bundle (in digest order), the provenance's and
//     the SBOM attestation's, each annotated with its predicate type: the
//     layout of cosign's legacy attestations. The
//     envelopes are the bundles' own, byte for byte the signed payload
//     and signature; the manifest has no subject, so it is no referrer.
//
// Each tag is read back and must name the manifest written.
func legacyTags(repo name.Repository, desc v1.Descriptor, refs []store.Referrer, ropts []ggcr.Option) ([]string, error) {
	var bundles []store.Referrer
	for _, r := range refs {
		if r.ArtifactType == store.ArtifactBundle {
			bundles = append(bundles, r)
		}
	}
	sort.Slice(bundles, func(i, j int) bool {
		return bundles[i].Descriptor.Digest.String() < bundles[j].Descriptor.Digest.String()
	})
	sigBundle := -1
	for i, b := range bundles {
		if b.Annotations[store.AnnotationPredicateType] != sbom.PredicateType {
			sigBundle = i
			break
		}
	}
	if sigBundle < 0 {
		return nil, fmt.Errorf("%w: no signature bundle of the provenance for the legacy tags", ErrIncomplete)
	}
	var envelopes []store.Envelope
	for _, b := range bundles {
		parsed, err := envelope.Parse(b.Data)
		if err != nil {
			return nil, fmt.Errorf("signature bundle %s: %w", b.Descriptor.Digest, err)
		}
		env, err := parsed.EnvelopeJSON()
		if err != nil {
			return nil, err
		}
		pt := b.Annotations[store.AnnotationPredicateType]
		if pt == "" {
			pt = provenance.PredicateType
		}
		name := "provenance"
		if pt == sbom.PredicateType {
			name = "sbom"
		}
		envelopes = append(envelopes, store.Envelope{Data: env, PredicateType: pt, Name: name})
	}
	raw, attDesc, layers, err := store.LegacyAttestation(envelopes)
	if err != nil {
		return nil, err
	}
	blobs := [][]byte{store.EmptyConfig()}
	mts := []types.MediaType{types.OCIEmptyJSON}
	for i, e := range envelopes {
		blobs, mts = append(blobs, e.Data), append(mts, layers[i].MediaType)
	}
	for i, b := range blobs {
		if err := ggcr.WriteLayer(repo, static.NewLayer(b, mts[i]), ropts...); err != nil {
			return nil, fmt.Errorf("upload legacy attestation blob to %s: %w", repo, err)
		}
	}
	sigTag := repo.Tag(store.LegacyTag(desc.Digest, store.LegacySignatureSuffix))
	attTag := repo.Tag(store.LegacyTag(desc.Digest, store.LegacyAttestationSuffix))
	sig, err := ggcr.Get(repo.Digest(bundles[sigBundle].Descriptor.Digest.String()), ropts...)
	if err != nil {
		return nil, fmt.Errorf("read back signature bundle %s: %w", bundles[sigBundle].Descriptor.Digest, err)
	}
	if err := ggcr.Tag(sigTag, sig, ropts...); err != nil {
		return nil, fmt.Errorf("tag %s: %w", sigTag, err)
	}
	if err := ggcr.Put(attTag, rawManifest{raw: raw, mt: types.OCIManifestSchema1}, ropts...); err != nil {
		return nil, fmt.Errorf("put %s: %w", attTag, err)
	}
	var out []string
	for _, w := range []struct {
		tag  name.Tag
		want v1.Hash
	}{{sigTag, bundles[sigBundle].Descriptor.Digest}, {attTag, attDesc.Digest}} {
		got, err := ggcr.Head(w.tag, ropts...)
		if err != nil {
			return nil, fmt.Errorf("read back %s: %w", w.tag, err)
		}
		if got.Digest != w.want {
			return nil, fmt.Errorf("%s resolves to %s after publishing, want %s", w.tag, got.Digest, w.want)
		}
		out = append(out, w.tag.TagStr()+"@"+w.want.String())
	}
	return out, nil
}

// rawManifest is a manifest pushed as the exact bytes given.
type rawManifest struct {
	raw []byte
	mt  types.MediaType
}

func (m rawManifest) RawManifest() ([]byte, error)        { return m.raw, nil }
func (m rawManifest) MediaType() (types.MediaType, error) { return m.mt, nil }
