package verify

import (
	"crypto"
	"errors"
	"fmt"
	"time"

	"github.com/cacheon/engine/release/envelope"
	"github.com/cacheon/engine/release/key"
	"github.com/cacheon/engine/release/provenance"
	"github.com/cacheon/engine/release/store"
)

// checkSignature (CheckSignature, CheckKeyPolicy, CheckPredicate,
// CheckBuilder, CheckSubjects) opens the attached signature bundles one
// at a time until one verifies with a key the policy trusts at the
// verification time and binds this very image: its statement is the
// release's SLSA provenance, by the project's builder, with this image as
// its subject. Every candidate is tried, so a bundle an attacker
// attaches (one of another release, replayed: validly signed by the
// trusted key, about another image) is passed over with a note instead
// of deciding the verdict. When none binds, the verdict is the failure of
// the bundle that came closest (the one whose failing check comes
// latest), the first of those in digest order.
func (v *verification) checkSignature() error {
	var best *Failure
	loaded := 0
	err := v.att.each(store.ArtifactBundle, func(b *store.Referrer) (bool, error) {
		if isSBOMBundle(b) {
			return false, nil // the SBOM attestation's (sbomattestation.go)
		}
		ok, err := v.att.load(b)
		if err != nil || !ok {
			return false, err
		}
		loaded++
		st, prov, bound, err := v.bind(b.Data)
		if err == nil {
			v.signed, v.rel.Bundle, v.bundle = st, b.Data, b.Descriptor.Digest
			v.prov, v.rel.Provenance = prov, prov
			v.imgSubject, v.treeSubject = bound.img, bound.tree
			v.rel.Attachments = append(v.rel.Attachments, *b)
			return true, nil
		}
		v.att.reject(b, err)
		var f *Failure
		if !errors.As(err, &f) {
			// A bundle is the attacker's input: whatever is wrong with
			// it fails the signature check, never the run.
			f = &Failure{Check: CheckSignature, Err: err}
		}
		if best == nil || stage[f.Check] > stage[best.Check] {
			best = f
		}
		return false, nil
	})
	if err != nil {
		return err
	}
	if v.signed == nil {
		switch {
		case best != nil && loaded == 1:
			return best
		case best != nil:
			return &Failure{Check: best.Check, Err: fmt.Errorf("none of the %d signature bundles binds image %s; the closest: %w%s", loaded, v.desc.Digest, best.Err, v.att.passedOver())}
		default:
			return failf(CheckAttestations, "no readable signature bundle is attached to image %s%s", v.desc.Digest, v.att.passedOver())
		}
	}
	prov := v.prov
	v.rep.KeyID = v.signed.KeyID
	v.rel.SignerPublic = v.signed.Public
	v.rep.pass(CheckKeyPolicy, "key %s is trusted and valid at %s", v.signed.KeyID, v.now.UTC().Format(time.RFC3339))
	v.rep.pass(CheckSignature, "DSSE signature by key %s verifies", v.signed.KeyID)
	v.rel.Statement = v.signed.Statement
	v.rep.pass(CheckPredicate, "%s", provenance.PredicateType)
	v.rep.pass(CheckBuilder, "builder %s, build type %s, go %s", prov.BuilderID, prov.BuildType, prov.BuilderVersion["go"])
	v.rep.GoVersion = prov.BuilderVersion["go"]
	v.rep.Image = v.imgSubject.Name
	return nil
}

// stage orders the checks a bundle goes through, for choosing the
// failure of the bundle that came closest.
var stage = map[string]int{CheckSignature: 0, CheckKeyPolicy: 0, CheckPredicate: 1, CheckBuilder: 2, CheckSubjects: 3}

// bind checks one bundle: signature and key policy, then the statement's
// predicate, builder and subjects against this image. It changes nothing
// in the verification: the caller keeps the result of the bundle that
// binds.
func (v *verification) bind(bundle []byte) (*SignedStatement, *provenance.Provenance, *subjects, error) {
	st, err := Bundle(bundle, v.opts.Policy, v.now)
	if err != nil {
		return nil, nil, nil, err
	}
	prov, err := parsePredicate(st.Statement)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := checkBuilder(prov); err != nil {
		return nil, nil, nil, err
	}
	sub, err := v.subjectsOf(prov)
	if err != nil {
		return nil, nil, nil, err
	}
	return st, prov, sub, nil
}

// SignedStatement is a statement whose signature verified.
type SignedStatement struct {
	Statement []byte // the exact DSSE payload that was signed
	KeyID     string
	Public    crypto.PublicKey
}

// Bundle verifies a sigstore bundle offline: it must be a v0.3 DSSE
// bundle of an in-toto statement, signed by a key the policy trusts and
// that is valid at now. No transparency log, timestamp authority or
// certificate is consulted (none is reachable offline); key validity is
// the policy's. The statement's subjects are the caller's to check
// (CheckSubjects names the one that differs).
func Bundle(bundleJSON []byte, policy *key.Policy, now time.Time) (*SignedStatement, error) {
	b, err := envelope.Parse(bundleJSON)
	if err != nil {
		return nil, fail(CheckSignature, err)
	}
	trusted, err := policy.Lookup(b.Hint, now)
	if err != nil {
		if errors.Is(err, key.ErrKeyExpired) || errors.Is(err, key.ErrKeyNotTrusted) {
			return nil, fail(CheckKeyPolicy, err)
		}
		return nil, err
	}
	if err := b.Verify(trusted.Public); err != nil {
		return nil, fail(CheckSignature, fmt.Errorf("bundle claiming key %s does not verify: %w", b.Hint, err))
	}
	return &SignedStatement{Statement: b.Payload, KeyID: b.Hint, Public: trusted.Public}, nil
}
