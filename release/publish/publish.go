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
// "sha256-<hex>" tag fallback (go-containerregistry writes it).
package publish

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	ggcr "github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/cacheon/engine/release/store"
	"github.com/cacheon/engine/release/store/remote"
)

// Result says what was published.
type Result struct {
	Reference   string   `json:"reference"`
	ImageDigest string   `json:"image_digest"`
	Artifacts   []string `json:"artifacts"` // artifact manifest digests, by type
	Bytes       int64    `json:"bytes"`
}

// ErrIncomplete is wrapped when a layout is not a complete release.
var ErrIncomplete = errors.New("release layout is incomplete")

// Check reads every byte of the release in l and returns its image
// descriptor and attestations: a layout with a blob that does not match
// its descriptor, or without a signature bundle, provenance and SBOM, is
// refused before anything is sent.
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
		total += r.Blob.Size + r.Descriptor.Size
	}
	for _, typ := range []string{store.ArtifactSBOM, store.ArtifactProvenance, store.ArtifactBundle} {
		if !have[typ] {
			hint := ""
			if typ == store.ArtifactBundle {
				hint = " (sign it first: cacheon release sign --key KEY LAYOUT)"
			}
			return v1.Descriptor{}, nil, 0, fmt.Errorf("%w: no %s attached to %s%s", ErrIncomplete, typ, desc.Digest, hint)
		}
	}
	return desc, refs, total, nil
}

// Layout publishes the release in l to target (a registry store opened
// with a tag reference, or a digest reference for no tag).
func Layout(l *store.Layout, target *remote.Registry, progress func(string)) (*Result, error) {
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
	opts := target.RemoteOptions()
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
		if err := ggcr.Write(repo.Digest(bd.Digest.String()), base, opts...); err != nil {
			return nil, fmt.Errorf("push base image %s to %s: %w", bd.Digest, repo, err)
		}
	}
	progress(fmt.Sprintf("pushing image %s", desc.Digest))
	if err := ggcr.Write(repo.Digest(desc.Digest.String()), img, opts...); err != nil {
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
		d, err := target.Attach(desc, store.Artifact{ArtifactType: r.ArtifactType, Data: r.Data, Annotations: r.Annotations})
		if err != nil {
			return nil, err
		}
		if d.Digest != r.Descriptor.Digest {
			return nil, fmt.Errorf("artifact %s was pushed as %s; the layout has %s", r.ArtifactType, d.Digest, r.Descriptor.Digest)
		}
		res.Artifacts = append(res.Artifacts, r.ArtifactType+"@"+d.Digest.String())
	}
	if tag, ok := ref.(name.Tag); ok {
		progress(fmt.Sprintf("tagging %s", tag))
		if err := ggcr.Tag(tag, img, opts...); err != nil {
			return nil, fmt.Errorf("tag %s: %w", tag, err)
		}
		got, err := ggcr.Head(tag, opts...)
		if err != nil {
			return nil, fmt.Errorf("read back %s: %w", tag, err)
		}
		if got.Digest != desc.Digest {
			return nil, fmt.Errorf("%s resolves to %s after publishing, want %s", tag, got.Digest, desc.Digest)
		}
	}
	return res, nil
}
