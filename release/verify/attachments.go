package verify

import (
	"errors"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/cacheon/engine/release/store"
)

// checkAttestations (CheckAttestations) lists the image's referrers and
// requires a signature bundle, a provenance statement and an SBOM among
// them.
//
// The attachments are read lazily, signature first: a bundle's manifest
// and blob are read only until one verifies, and only the provenance and
// SBOM the signed statement names are read after it. A layout or registry
// listing thousands of referrers costs their descriptors, not their bytes.
func (v *verification) checkAttestations() error {
	att, err := listAttachments(v.s, v.desc.Digest)
	if err != nil {
		return err
	}
	found := map[string]bool{}
	for _, typ := range []string{store.ArtifactBundle, store.ArtifactProvenance, store.ArtifactSBOM} {
		if found[typ], err = att.exists(typ); err != nil {
			return err
		}
	}
	if !found[store.ArtifactBundle] {
		return failf(CheckAttestations, "missing attestation: no signature bundle (%s) is attached to image %s: the release is unsigned", store.ArtifactBundle, v.desc.Digest)
	}
	if !found[store.ArtifactProvenance] {
		return failf(CheckAttestations, "missing attestation: no provenance statement (%s) is attached to image %s", store.ArtifactProvenance, v.desc.Digest)
	}
	if !found[store.ArtifactSBOM] {
		return failf(CheckAttestations, "missing attestation: no SBOM (%s) is attached to image %s", store.ArtifactSBOM, v.desc.Digest)
	}
	v.att = att
	v.rep.pass(CheckAttestations, "%d signature bundle(s), %d provenance statement(s), %d SBOM(s) listed", att.listed(store.ArtifactBundle), att.listed(store.ArtifactProvenance), att.listed(store.ArtifactSBOM))
	return nil
}

// attachments are the candidate referrers of the image, opened one at a
// time and only when a check needs them.
type attachments struct {
	s       store.Store
	subject v1.Hash
	cands   []v1.Descriptor
	opened  map[v1.Hash]*store.Referrer // nil: not an artifact for subject
}

func listAttachments(s store.Store, subject v1.Hash) (*attachments, error) {
	cands, err := store.Candidates(s, subject)
	if err != nil {
		return nil, classify(CheckAttestations, err)
	}
	return &attachments{s: s, subject: subject, cands: cands, opened: map[v1.Hash]*store.Referrer{}}, nil
}

// classify turns a rejection of the store's contents into a failure of
// check (exit 2), and passes I/O errors on.
func classify(check string, err error) error {
	var mm *store.DigestMismatchError
	if errors.As(err, &mm) || store.IsRejection(err) {
		return fail(check, err)
	}
	return err
}

// each calls fn with the artifacts of type typ in digest order until fn
// says done. The type the index or referrers list gives a candidate is
// only an order: the candidates it says are of typ come first, then those
// it gives no type, then the others (registries disagree on what they
// list as artifactType); the type that counts is the manifest's, read
// when the candidate is opened. A store that lists types truthfully costs
// one manifest read per artifact asked for.
func (a *attachments) each(typ string, fn func(*store.Referrer) (done bool, err error)) error {
	rank := func(d v1.Descriptor) int {
		switch d.ArtifactType {
		case typ:
			return 0
		case "":
			return 1
		}
		return 2
	}
	for pass := 0; pass < 3; pass++ {
		for _, d := range a.cands {
			if rank(d) != pass {
				continue
			}
			r, ok := a.opened[d.Digest]
			if !ok {
				var err error
				if r, err = store.OpenReferrer(a.s, a.subject, d); err != nil {
					return classify(CheckAttestations, err)
				}
				a.opened[d.Digest] = r
			}
			if r == nil || r.ArtifactType != typ {
				continue
			}
			done, err := fn(r)
			if err != nil || done {
				return err
			}
		}
	}
	return nil
}

// exists says whether an artifact of type typ is attached, reading
// manifests only until the first.
func (a *attachments) exists(typ string) (bool, error) {
	found := false
	err := a.each(typ, func(*store.Referrer) (bool, error) { found = true; return true, nil })
	return found, err
}

// listed counts the candidates the store lists as of type typ, unread.
func (a *attachments) listed(typ string) int {
	n := 0
	for _, d := range a.cands {
		if d.ArtifactType == typ {
			n++
		}
	}
	return n
}

// load reads r's blob, checked against its descriptor.
func (a *attachments) load(r *store.Referrer) error {
	if r.Data != nil {
		return nil
	}
	if err := store.LoadReferrer(a.s, r); err != nil {
		return classify(CheckAttestations, err)
	}
	return nil
}
