package publish

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	ggcr "github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/cacheon/engine/release/image"
	"github.com/cacheon/engine/release/store"
	"github.com/cacheon/engine/release/store/remote"
)

// MirrorResult says what was mirrored.
type MirrorResult struct {
	Result
	Source string `json:"source"`
	// Base is the pinned base image copied beside the release ("" when
	// the image names none or the source repository lacks it).
	Base string `json:"base"`
	// Notes say what was not copied, and why: referrers of the image that
	// could not be read from the source, a base image the source lacks.
	Notes []string `json:"notes"`
}

// Mirror copies the release at src to dst, another repository of the
// same or another registry: the pinned base image (when the source
// repository has it), the image by digest, then every referrer of the
// image (SBOM, provenance, the SBOM attestation and the signature bundles
// last, and anything else attached) as the very manifests of the source,
// so each keeps its digest and its signature, and the tag in dst last.
//
// A plain image copy (crane copy, skopeo copy) moves the image alone: the
// attestations are referrers, other manifests whose subject is the
// image, and a copy by reference does not know them, so its copy fails
// verification (no signature bundle). Mirror is the copy that keeps them.
//
// Nothing is trusted on the way: every manifest and blob read from src is
// checked against its descriptor, a referrer that cannot be read is left
// out with a note (anyone who can push to the source can attach junk),
// and a source without the release's attestations is refused before
// anything is written. Verifying the mirror is the caller's (cacheon
// release mirror --key does it on both ends).
func Mirror(src, dst *remote.Registry, opts Options) (*MirrorResult, error) {
	progress := opts.Progress
	if progress == nil {
		progress = func(string) {}
	}
	progress("reading the source")
	desc, err := src.Resolve()
	if err != nil {
		return nil, err
	}
	ref := dst.Reference()
	repo := ref.Context()
	ropts := dst.RemoteOptions()
	if d, ok := ref.(name.Digest); ok && d.DigestStr() != desc.Digest.String() {
		return nil, fmt.Errorf("reference %s names digest %s, the source image is %s", ref, d.DigestStr(), desc.Digest)
	}
	raw, err := store.ReadManifest(src, desc)
	if err != nil {
		return nil, err
	}
	m, err := v1.ParseManifest(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("%w: parse manifest %s of %s: %v", store.ErrMalformed, desc.Digest, src.Location(), err)
	}
	arts, notes, err := mirrorReferrers(src, desc.Digest)
	if err != nil {
		return nil, err
	}
	have := map[string]bool{}
	for _, a := range arts {
		if a.referrer != nil {
			have[a.referrer.ArtifactType] = true
		}
	}
	for _, typ := range []string{store.ArtifactSBOM, store.ArtifactProvenance, store.ArtifactBundle} {
		if !have[typ] {
			return nil, fmt.Errorf("%w: no readable %s is attached to %s in %s; refusing to mirror it", ErrIncomplete, typ, desc.Digest, src.Location())
		}
	}
	res := &MirrorResult{Result: Result{Reference: ref.String(), ImageDigest: desc.Digest.String()}, Source: src.Location(), Notes: notes}
	if res.Notes == nil {
		res.Notes = []string{}
	}
	sopts := src.RemoteOptions()
	srcRepo := src.Reference().Context()
	if bd := m.Annotations[image.AnnotationBaseDigest]; bd != "" {
		base, err := ggcr.Image(srcRepo.Digest(bd), sopts...)
		if err == nil {
			progress(fmt.Sprintf("copying base image %s", bd))
			if err := ggcr.Write(repo.Digest(bd), base, ropts...); err != nil {
				return nil, fmt.Errorf("copy base image %s to %s: %w", bd, repo, err)
			}
			res.Base = bd
		} else {
			res.Notes = append(res.Notes, fmt.Sprintf("base image %s not copied: %s does not serve it (%v); a rebuild from the mirror needs it", bd, srcRepo, err))
		}
	}
	img, err := ggcr.Image(srcRepo.Digest(desc.Digest.String()), sopts...)
	if err != nil {
		return nil, fmt.Errorf("open image %s in %s: %w", desc.Digest, src.Location(), err)
	}
	progress(fmt.Sprintf("copying image %s", desc.Digest))
	// ggcr checks every layer against its digest as it streams it.
	if err := ggcr.Write(repo.Digest(desc.Digest.String()), img, ropts...); err != nil {
		return nil, fmt.Errorf("copy image %s to %s: %w", desc.Digest, repo, err)
	}
	res.Bytes = int64(len(raw)) + m.Config.Size
	for _, l := range m.Layers {
		res.Bytes += l.Size
	}
	var refs []store.Referrer
	for _, pass := range []bool{false, true} {
		for _, a := range arts {
			if a.bundle() != pass {
				continue
			}
			progress(fmt.Sprintf("copying referrer %s (%s)", a.desc.Digest, a.kind()))
			if err := a.copyTo(repo, ropts); err != nil {
				return nil, err
			}
			res.Bytes += a.size
			res.Artifacts = append(res.Artifacts, a.kind()+"@"+a.desc.Digest.String())
			if a.referrer != nil {
				refs = append(refs, *a.referrer)
			}
		}
	}
	if res.LegacyTags, err = finish(ref, img, desc, refs, opts.LegacyTags, ropts, progress, "mirroring"); err != nil {
		return nil, err
	}
	return res, nil
}

// mirrored is one referrer read from the source: its manifest bytes and
// every blob it names, checked, and the release artifact it is when it is
// one (a single-blob artifact manifest).
type mirrored struct {
	desc     v1.Descriptor
	raw      []byte
	mt       types.MediaType
	blobs    []blob
	size     int64
	referrer *store.Referrer
}

type blob struct {
	data []byte
	mt   types.MediaType
}

func (a *mirrored) bundle() bool {
	return a.referrer != nil && a.referrer.ArtifactType == store.ArtifactBundle
}

func (a *mirrored) kind() string {
	if a.referrer != nil {
		return a.referrer.ArtifactType
	}
	if a.desc.ArtifactType != "" {
		return a.desc.ArtifactType
	}
	return string(a.mt)
}

// copyTo uploads the blobs, then puts the manifest bytes by digest: the
// registry (or go-containerregistry's "sha256-<hex>" fallback tag, the
// same as for a publication) records the referrer.
func (a *mirrored) copyTo(repo name.Repository, ropts []ggcr.Option) error {
	for _, b := range a.blobs {
		if err := ggcr.WriteLayer(repo, static.NewLayer(b.data, b.mt), ropts...); err != nil {
			return fmt.Errorf("upload blob of referrer %s to %s: %w", a.desc.Digest, repo, err)
		}
	}
	if err := ggcr.Put(repo.Digest(a.desc.Digest.String()), rawManifest{raw: a.raw, mt: a.mt}, ropts...); err != nil {
		return fmt.Errorf("put referrer %s to %s: %w", a.desc.Digest, repo, err)
	}
	return nil
}

// mirrorReferrers reads every referrer of subject in src that can be
// read and checked; the others are notes.
func mirrorReferrers(src store.Store, subject v1.Hash) ([]*mirrored, []string, error) {
	cands, skipped, err := store.ListCandidates(src, subject)
	if err != nil {
		return nil, nil, err
	}
	var notes []string
	for _, sk := range skipped {
		notes = append(notes, fmt.Sprintf("referrer %s not copied: %v", sk.Descriptor.Digest, sk.Err))
	}
	var out []*mirrored
	for _, d := range cands {
		a, err := readReferrer(src, subject, d)
		if err != nil {
			if errors.Is(err, errNotReferrer) {
				continue
			}
			notes = append(notes, fmt.Sprintf("referrer %s not copied: %v", d.Digest, err))
			continue
		}
		out = append(out, a)
	}
	return out, notes, nil
}

var errNotReferrer = errors.New("not a referrer of the image")

func readReferrer(src store.Store, subject v1.Hash, d v1.Descriptor) (*mirrored, error) {
	raw, err := store.ReadManifest(src, d)
	if err != nil {
		return nil, err
	}
	m, err := v1.ParseManifest(bytes.NewReader(raw))
	if err != nil || m.Subject == nil || m.Subject.Digest != subject {
		// An index can list anything; only manifests whose subject is the
		// image are its referrers.
		return nil, errNotReferrer
	}
	mt := m.MediaType
	if mt == "" {
		mt = d.MediaType
	}
	a := &mirrored{desc: d, raw: raw, mt: mt, size: int64(len(raw))}
	for _, bd := range append([]v1.Descriptor{m.Config}, m.Layers...) {
		data, err := store.ReadBlob(src, bd, store.MaxArtifactSize)
		if err != nil {
			return nil, err
		}
		a.blobs = append(a.blobs, blob{data: data, mt: bd.MediaType})
		a.size += int64(len(data))
	}
	r, err := store.OpenReferrer(src, subject, d)
	if err != nil {
		return nil, err
	}
	if r != nil {
		r.Data = a.blobs[1].data
		a.referrer = r
	}
	return a, nil
}
