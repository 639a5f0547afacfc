package verify

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/cacheon/engine/release/descriptor"
	"github.com/cacheon/engine/release/sbom"
	"github.com/cacheon/engine/release/store"
)

// checkSBOMAttestation (CheckSBOMAttestation) requires a signed SBOM
// attestation: a signature bundle, by a key the policy trusts at the
// verification time, of an in-toto statement with SPDX's predicate type
// (sbom.PredicateType) whose one subject is this image (the name and
// digest the provenance gives it) and whose predicate is, canonically,
// the SBOM the previous check established: the attached document the
// signed provenance names and the image's contents regenerate.
//
// The candidates are the bundles the signature check did not use or turn
// down. Like the provenance's, every one is tried, so an attestation an
// attacker attaches (of another image, by another key) is passed over
// with a note; when none holds, the verdict is the failure of the one
// that came closest, the first of those in digest order.
func (v *verification) checkSBOMAttestation() error {
	want := v.rel.SBOM
	var best *sbomFailure
	loaded := 0
	err := v.att.each(store.ArtifactBundle, func(b *store.Referrer) (bool, error) {
		if b.Descriptor.Digest == v.bundle || v.att.turnedDown(b.Descriptor.Digest) {
			return false, nil
		}
		ok, err := v.att.load(b)
		if err != nil || !ok {
			return false, err
		}
		loaded++
		keyID, err := v.bindSBOM(b.Data, want)
		if err == nil {
			v.rel.SBOMBundle = b.Data
			v.rel.Attachments = append(v.rel.Attachments, *b)
			v.rep.pass(CheckSBOMAttestation, "%s statement signed by key %s: subject %s, predicate is the SBOM sha256:%s", sbom.PredicateType, keyID, v.desc.Digest, descriptor.SHA256(want))
			return true, nil
		}
		v.att.reject(b, err)
		var f *sbomFailure
		if errors.As(err, &f) && (best == nil || f.stage > best.stage) {
			best = f
		}
		return false, nil
	})
	if err != nil || v.rel.SBOMBundle != nil {
		return err
	}
	switch {
	case best != nil && loaded == 1:
		return fail(CheckSBOMAttestation, best)
	case best != nil:
		return failf(CheckSBOMAttestation, "none of the %d candidate bundles is a signed SBOM attestation of image %s; the closest: %w%s", loaded, v.desc.Digest, best, v.att.passedOver())
	}
	return failf(CheckSBOMAttestation, "missing attestation: no signed SBOM attestation (a %s bundle of a %s statement) is attached to image %s%s", store.ArtifactBundle, sbom.PredicateType, v.desc.Digest, v.att.passedOver())
}

// sbomFailure is why one candidate is not the SBOM attestation, with how
// far it got (signature 0, statement 1, subject 2, predicate 3).
type sbomFailure struct {
	stage int
	err   error
}

func (f *sbomFailure) Error() string { return f.err.Error() }
func (f *sbomFailure) Unwrap() error { return f.err }

// bindSBOM checks one bundle as the SBOM attestation of this image with
// predicate want, and returns the key that signed it.
func (v *verification) bindSBOM(bundle, want []byte) (string, error) {
	st, err := Bundle(bundle, v.opts.Policy, v.now)
	if err != nil {
		return "", &sbomFailure{0, err}
	}
	a, err := sbom.ParseStatement(st.Statement)
	if err != nil {
		return "", &sbomFailure{1, fmt.Errorf("bundle signed by key %s is not an SBOM attestation: %w", st.KeyID, err)}
	}
	if len(a.Subjects) != 1 || a.Subjects[0].Digest["sha256"] != v.desc.Digest.Hex || a.Subjects[0].Name != v.imgSubject.Name {
		return "", &sbomFailure{2, fmt.Errorf("the SBOM attestation signed by key %s is about %s, not image %s@%s", st.KeyID, describeSubjects(a.Subjects), v.imgSubject.Name, v.desc.Digest)}
	}
	if !bytes.Equal(a.Predicate, want) {
		_, field := sbom.Equal(want, a.Predicate)
		return "", &sbomFailure{3, fmt.Errorf("the predicate of the SBOM attestation signed by key %s is not the release's SBOM sha256:%s (predicate sha256:%s; field %q differs)", st.KeyID, descriptor.SHA256(want), descriptor.SHA256(a.Predicate), field)}
	}
	return st.KeyID, nil
}

func describeSubjects(subs []sbom.Subject) string {
	if len(subs) != 1 {
		return fmt.Sprintf("%d subjects", len(subs))
	}
	return fmt.Sprintf("%s@sha256:%s", subs[0].Name, subs[0].Digest["sha256"])
}
