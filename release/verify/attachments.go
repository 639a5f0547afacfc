package verify

import (
	"context"
	"errors"
	"fmt"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/cacheon/engine/release/sbom"
	"github.com/cacheon/engine/release/store"
)

// checkAttestations (CheckAttestations) lists the image's referrers and
// requires a signature bundle of the provenance, a provenance statement
// and an SBOM among them (the signed SBOM attestation, a bundle too, is
// CheckSBOMAttestation's).
//
// The attachments are read lazily, signature first: a bundle's manifest
// and blob are read only until one verifies, and only the provenance and
// SBOM the signed statement names are read after it. A layout or registry
// listing thousands of referrers costs their descriptors, not their bytes.
//
// Anyone who can push to a repository can attach referrers to its
// images, so no referrer may make a genuine release fail: one whose
// descriptor, manifest or blob is missing, oversized or does not match
// its digest is passed over with a note in the report, and so is one of
// a type the release does not use. Only when no usable candidate of a
// type the release needs remains does a check fail, naming what was
// passed over.
func (v *verification) checkAttestations() error {
	att, err := listAttachments(v.s, v.desc.Digest)
	if err != nil {
		return err
	}
	v.att = att
	found := map[string]bool{}
	for _, typ := range []string{store.ArtifactBundle, store.ArtifactProvenance, store.ArtifactSBOM} {
		if found[typ], err = att.exists(typ, func(r *store.Referrer) bool { return !isSBOMBundle(r) }); err != nil {
			return err
		}
	}
	if !found[store.ArtifactBundle] {
		return failf(CheckAttestations, "missing attestation: no signature bundle (%s) is attached to image %s: the release is unsigned%s", store.ArtifactBundle, v.desc.Digest, att.passedOver())
	}
	if !found[store.ArtifactProvenance] {
		return failf(CheckAttestations, "missing attestation: no provenance statement (%s) is attached to image %s%s", store.ArtifactProvenance, v.desc.Digest, att.passedOver())
	}
	if !found[store.ArtifactSBOM] {
		return failf(CheckAttestations, "missing attestation: no SBOM (%s) is attached to image %s%s", store.ArtifactSBOM, v.desc.Digest, att.passedOver())
	}
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
	// skipped are the candidates passed over because their descriptor,
	// manifest or blob could not be read or checked, in the order met.
	skipped []store.Skipped
	bad     map[v1.Hash]bool
	// rejected are candidates read and checked that a check turned down
	// (a bundle that does not verify or binds another image), and why.
	rejected []store.Skipped
	// read are the artifact types a check after the verification read
	// (Release.Attached), which the notes do not call skipped.
	read map[string]bool
}

func listAttachments(s store.Store, subject v1.Hash) (*attachments, error) {
	cands, skipped, err := store.ListCandidates(s, subject)
	if err != nil {
		return nil, classify(CheckAttestations, err)
	}
	a := &attachments{s: s, subject: subject, cands: cands, opened: map[v1.Hash]*store.Referrer{}, bad: map[v1.Hash]bool{}, read: map[string]bool{}}
	for _, sk := range skipped {
		a.skip(sk.Descriptor, sk.Err)
	}
	return a, nil
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

// stopped says whether err ends the verification rather than one
// candidate: the command was cancelled or ran out of time.
func stopped(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

func (a *attachments) skip(d v1.Descriptor, err error) {
	a.bad[d.Digest] = true
	a.skipped = append(a.skipped, store.Skipped{Descriptor: d, Err: err})
}

// reject records that a candidate was read and turned down by a check.
func (a *attachments) reject(r *store.Referrer, err error) {
	a.rejected = append(a.rejected, store.Skipped{Descriptor: r.Descriptor, Err: err})
}

// each calls fn with the artifacts of type typ in digest order until fn
// says done. The type the index or referrers list gives a candidate is
// only an order: the candidates it says are of typ come first, then those
// it gives no type, then the others (registries disagree on what they
// list as artifactType); the type that counts is the manifest's, read
// when the candidate is opened. A store that lists types truthfully costs
// one manifest read per artifact asked for. A candidate whose manifest
// cannot be read or checked is skipped (see skip); only a cancellation
// stops the walk.
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
			if rank(d) != pass || a.bad[d.Digest] {
				continue
			}
			r, ok := a.opened[d.Digest]
			if !ok {
				var err error
				if r, err = store.OpenReferrer(a.s, a.subject, d); err != nil {
					if stopped(err) {
						return err
					}
					a.skip(d, err)
					continue
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

// exists says whether an artifact of type typ that keep accepts is
// attached, reading manifests only until the first.
func (a *attachments) exists(typ string, keep func(*store.Referrer) bool) (bool, error) {
	found := false
	err := a.each(typ, func(r *store.Referrer) (bool, error) {
		found = keep(r)
		return found, nil
	})
	return found, err
}

// isSBOMBundle says whether a bundle's manifest annotates it as the SBOM
// attestation's (sign.Release does). The annotation is unsigned: it only
// sorts the bundles between the signature check and the SBOM attestation
// check, and each still checks the signed statement's predicate type. A
// bundle without it is the signature check's first.
func isSBOMBundle(r *store.Referrer) bool {
	return r.Annotations[store.AnnotationPredicateType] == sbom.PredicateType
}

// turnedDown says whether a check has already read and turned down the
// candidate d.
func (a *attachments) turnedDown(d v1.Hash) bool {
	for _, sk := range a.rejected {
		if sk.Descriptor.Digest == d {
			return true
		}
	}
	return false
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

// load reads r's blob, checked against its descriptor. A blob that is
// missing, oversized or does not match is skipped: load says false and
// the caller goes on to the next candidate. The error is a cancellation
// only.
func (a *attachments) load(r *store.Referrer) (bool, error) {
	if r.Data != nil {
		return true, nil
	}
	if err := store.LoadReferrer(a.s, r); err != nil {
		if stopped(err) {
			return false, err
		}
		a.skip(r.Descriptor, err)
		return false, nil
	}
	return true, nil
}

// passedOver explains, for a failure, the candidates skipped so far.
func (a *attachments) passedOver() string {
	if len(a.skipped) == 0 && len(a.rejected) == 0 {
		return ""
	}
	var parts []string
	for _, sk := range append(append([]store.Skipped(nil), a.skipped...), a.rejected...) {
		parts = append(parts, fmt.Sprintf("%s: %v", sk.Descriptor.Digest, sk.Err))
	}
	return " (passed over: " + strings.Join(parts, "; ") + ")"
}

// ours are the artifact types a release verification reads.
var ours = map[string]bool{store.ArtifactBundle: true, store.ArtifactProvenance: true, store.ArtifactSBOM: true}

// custody are the artifact types of the release's chain of custody, read
// only by the in-toto layout check (release verify --layout-key).
var custody = map[string]bool{store.ArtifactInTotoLayout: true, store.ArtifactInTotoLink: true}

// notes says, for the report, which referrers the verification passed
// over and why: unreadable ones, ones turned down by a check, and ones of
// types a release does not use. Candidates of the release's types that
// were not needed (a second SBOM, say) are not read and not noted.
func (a *attachments) notes() []string {
	var out []string
	for _, sk := range a.skipped {
		out = append(out, fmt.Sprintf("skipped referrer %s: %v", sk.Descriptor.Digest, sk.Err))
	}
	for _, sk := range a.rejected {
		out = append(out, fmt.Sprintf("skipped referrer %s: %v", sk.Descriptor.Digest, sk.Err))
	}
	unchecked := 0
	for _, d := range a.cands {
		if a.bad[d.Digest] {
			continue
		}
		r, opened := a.opened[d.Digest]
		typ := d.ArtifactType
		if opened && r != nil {
			typ = r.ArtifactType
		}
		if a.read[typ] {
			continue
		}
		if custody[typ] {
			unchecked++
			continue
		}
		switch {
		case opened && r == nil:
			out = append(out, fmt.Sprintf("skipped referrer %s: not an artifact manifest with one blob attached to %s", d.Digest, a.subject))
		case opened && !ours[r.ArtifactType]:
			out = append(out, fmt.Sprintf("skipped referrer %s: artifact type %q is not one a release verification reads (manifest read within %d bytes, blob not read)", d.Digest, r.ArtifactType, store.MaxManifestSize))
		case !opened && d.ArtifactType != "" && !ours[d.ArtifactType]:
			out = append(out, fmt.Sprintf("skipped referrer %s: listed as artifact type %q, which a release verification does not read (not read)", d.Digest, d.ArtifactType))
		}
	}
	if unchecked > 0 {
		out = append(out, fmt.Sprintf("the release carries a chain of custody (%d in-toto layout and link artifact(s)), not checked: verify with --layout-key to check it", unchecked))
	}
	return out
}
