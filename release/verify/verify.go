// Package verify checks a release offline, with nothing but the store
// that holds it (an OCI layout directory or a registry) and a trusted
// public key: no chain, wallet, miner URL, referee database, transparency
// log or timestamp authority.
//
// Every check has a stable name (the Check* constants) and a failure
// names it, says what was expected and what was found: the signature and
// the key policy, the statement's predicate type, builder and subjects,
// every blob of the image against its descriptor, the layers against the
// provenance, the engine tree, substrate, entrypoint and model receipt
// shipped in the image against the signed release descriptor, integrated
// -only coverage of the release stack by its review records, the SBOM
// and provenance regenerated from what the image holds, and the SBOM
// signed as an in-toto attestation about the image.
//
// Each check is a method of one verification in the file named for it
// (image.go, attachments.go, signature.go, layers.go, blobs.go,
// descriptor.go, enginetree.go, integrations.go, substrate.go,
// entrypoint.go, modelreceipt.go, sbom.go, sbomattestation.go,
// provenance.go, layout.go;
// predicate.go, builder.go and subjects.go hold the checks signature.go
// runs on every candidate bundle); run lists them in the order they run.
// Referrers the verification does not need are skipped and listed in the
// report's notes, so no extra anyone attaches can fail a genuine release
// (attachments.go). The
// package imports nothing of the producer: the SBOM and provenance it
// regenerates come from the release projections in release/sbom and
// release/provenance, the release stack from stacks/stack, and it links
// no HTTP client and no TUF client (tools/fences).
package verify

import (
	"crypto"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/cacheon/engine/release/descriptor"
	"github.com/cacheon/engine/release/key"
	"github.com/cacheon/engine/release/provenance"
	"github.com/cacheon/engine/release/review"
	"github.com/cacheon/engine/release/store"
)

// Names of the checks, in the order they run.
const (
	CheckImage        = "image-manifest"
	CheckAttestations = "attestations"
	CheckSignature    = "signature"
	CheckKeyPolicy    = "key-policy"
	CheckPredicate    = "predicate-type"
	CheckBuilder      = "builder"
	CheckSubjects     = "subjects"
	CheckLayers       = "layers"
	CheckBlobs        = "image-blobs"
	CheckDescriptor   = "release-descriptor"
	CheckEngineTree   = "engine-tree"
	CheckIntegrations = "integrations"
	CheckSubstrate    = "substrate"
	CheckEntrypoint   = "entrypoint"
	CheckModelReceipt = "model-receipt"
	CheckSBOM         = "sbom"
	// CheckSBOMAttestation requires the SBOM signed as an in-toto
	// attestation about the image (sbomattestation.go).
	CheckSBOMAttestation = "sbom-attestation"
	CheckProvenance      = "provenance"
	CheckLayout          = "in-toto-layout"
	// CheckChannel is run by callers that also check the release against
	// a signed release channel (release/channel, which this package does
	// not link): it names the channel's refusals in the same report.
	CheckChannel = "channel"
)

// FormatVersion of the JSON report.
const FormatVersion = 1

// Failure is a failed check.
type Failure struct {
	Check string
	Err   error
}

func (f *Failure) Error() string { return fmt.Sprintf("%s check failed: %v", f.Check, f.Err) }
func (f *Failure) Unwrap() error { return f.Err }

func fail(check string, err error) error { return &Failure{Check: check, Err: err} }

func failf(check, format string, args ...any) error {
	return &Failure{Check: check, Err: fmt.Errorf(format, args...)}
}

// Options configure a verification.
type Options struct {
	Policy   *key.Policy
	Now      time.Time // when the key policy is evaluated; zero means now
	Progress func(string)
	// Layout, when set, also checks the release against a signed in-toto
	// supply-chain layout (see CheckLayout).
	Layout LayoutCheck
}

// LayoutCheck checks a verified release against a supply-chain layout.
type LayoutCheck func(r *Release) error

// CheckResult is one check in a report.
type CheckResult struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// Report is the outcome of a verification.
type Report struct {
	FormatVersion         int           `json:"format_version"`
	Location              string        `json:"location"`
	Image                 string        `json:"image"`
	ImageDigest           string        `json:"image_digest"`
	EngineTreeDigest      string        `json:"engine_tree_digest"`
	DescriptorDigest      string        `json:"descriptor_digest"`
	ReleaseManifestDigest string        `json:"release_manifest_digest"`
	KeyID                 string        `json:"key_id"`
	GoVersion             string        `json:"go_version"`
	Contributions         []string      `json:"contributions"`
	BytesVerified         int64         `json:"bytes_verified"`
	Verified              bool          `json:"verified"`
	Checks                []CheckResult `json:"checks"`
	// Notes say what the verification passed over without failing: the
	// referrers it skipped (unreadable, of another type, or a bundle that
	// does not bind this image) and why.
	Notes []string `json:"notes"`
	// Error is why the verification stopped, when it did (a failed check
	// also names itself in Checks).
	Error string `json:"error,omitempty"`
	// Channel is what the release channel said (the selected record and
	// the channel's versions and freshness), when the caller checked one.
	Channel json.RawMessage `json:"channel,omitempty"`
}

// AddCheck records a check run outside this package (CheckChannel).
func (r *Report) AddCheck(name string, ok bool, detail string) {
	r.Checks = append(r.Checks, CheckResult{Name: name, OK: ok, Detail: detail})
}

func (r *Report) pass(name, format string, args ...any) {
	r.Checks = append(r.Checks, CheckResult{Name: name, OK: true, Detail: fmt.Sprintf(format, args...)})
}

// Release is what a successful verification established, for callers that
// go on (rebuild, the in-toto layout check).
type Release struct {
	Report      *Report
	Image       v1.Descriptor
	Manifest    *v1.Manifest
	Statement   []byte
	Provenance  *provenance.Provenance
	Descriptor  *descriptor.Descriptor
	Files       map[string][]byte // the release layer's files
	Records     []*review.Record
	ReleaseJSON []byte
	SBOM        []byte
	// Entrypoint is the entrypoint binary the image ships, checked
	// against the descriptor (a rebuild builds from it).
	Entrypoint []byte
	// Bundle is the signature bundle that verified, SignerPublic its key.
	Bundle       []byte
	SignerPublic crypto.PublicKey
	// SBOMBundle is the bundle of the signed SBOM attestation.
	SBOMBundle []byte
	// Attachments are the verified artifacts the verification used: the
	// signature bundle, the provenance statement, the SBOM and the SBOM
	// attestation's bundle.
	Attachments []store.Referrer

	// attached are the image's referrers as the verification listed
	// them, for a check run after it (Attached).
	attached *attachments
}

// Attached reads every artifact of type typ attached to the verified
// image, each checked against its descriptor, in digest order: what a
// check run after the verification (the in-toto layout check, reading
// the chain of custody the release carries) needs beside what the
// verification used. Referrers that cannot be read are passed over and
// noted in the report, as the verification's own are; artifacts of a
// type read here are not noted as skipped. A release that did not come
// from a verification has no attachments to read.
func (r *Release) Attached(typ string) ([]store.Referrer, error) {
	a := r.attached
	if a == nil {
		return nil, errors.New("the release's attachments were not listed by a verification")
	}
	a.read[typ] = true
	var out []store.Referrer
	err := a.each(typ, func(ref *store.Referrer) (bool, error) {
		ok, err := a.load(ref)
		if err != nil {
			return true, err
		}
		if ok {
			out = append(out, *ref)
		}
		return false, nil
	})
	return out, err
}

// Our layers, in image order, after the base image's.
var ourLayers = []string{"substrate", "entrypoint", "engine-tree", "release"}

const maxReleaseFile = 16 << 20

// Run verifies the release in s.
func Run(s store.Store, opts Options) (*Release, error) {
	rep := &Report{FormatVersion: FormatVersion, Location: s.Location(), Contributions: []string{}, Checks: []CheckResult{}, Notes: []string{}}
	rel, err := run(s, opts, rep)
	if err != nil {
		rep.Error = err.Error()
		var f *Failure
		if errors.As(err, &f) {
			rep.Checks = append(rep.Checks, CheckResult{Name: f.Check, OK: false, Detail: f.Err.Error()})
		}
		return &Release{Report: rep}, err
	}
	rep.Verified = true
	return rel, nil
}

func run(s store.Store, opts Options, rep *Report) (*Release, error) {
	progress := opts.Progress
	if progress == nil {
		progress = func(string) {}
	}
	if opts.Policy == nil {
		return nil, errors.New("verify: no trusted key")
	}
	now := opts.Now
	if now.IsZero() {
		now = time.Now()
	}
	v := &verification{s: s, opts: opts, now: now, rep: rep, rel: &Release{Report: rep}}
	defer func() {
		if v.att != nil {
			rep.Notes = append(rep.Notes, v.att.notes()...)
		}
	}()
	// The checks run in this order, each in its own file, and each may use
	// what the ones before it established. A check that needs bytes reads
	// only what an earlier check has tied to the signed statement.
	steps := []struct {
		progress string // "" continues the stage before
		check    func() error
	}{
		{"reading the image manifest", v.checkImage},
		{"reading attestations", v.checkAttestations},
		{"checking the signature", v.checkSignature},
		{"", v.checkAttachedProvenance},
		{"checking the layers against the provenance", v.checkLayerDigests},
		{"hashing the image blobs", v.checkBlobs},
		{"", v.checkDescriptor},
		{"", v.checkBaseLayers},
		{"", v.checkEngineTree},
		{"", v.checkIntegrations},
		{"", v.checkSubstrate},
		{"", v.checkEntrypoint},
		{"", v.checkModelReceipt},
		{"", v.checkSBOM},
		{"", v.checkSBOMAttestation},
		{"", v.checkProvenance},
		{"", v.checkLayout},
	}
	for _, st := range steps {
		if st.progress != "" {
			progress(st.progress)
		}
		if err := st.check(); err != nil {
			return nil, err
		}
	}
	return v.rel, nil
}

// verification is one run of the checks: the store and options, the
// report and release being filled in, and what each check established for
// the checks after it.
type verification struct {
	s    store.Store
	opts Options
	now  time.Time
	rep  *Report
	rel  *Release

	desc        v1.Descriptor // the image, resolved
	raw         []byte        // its manifest bytes
	m           *v1.Manifest
	att         *attachments
	signed      *SignedStatement
	bundle      v1.Hash // the manifest digest of the bundle that bound
	prov        *provenance.Provenance
	imgSubject  provenance.Resource
	treeSubject *provenance.Resource
	contents    map[string]*layerContents // our layers by role
	d           *descriptor.Descriptor
	descDigest  string
	records     []*review.Record
	targets     []string
}

// ours is the index of the first of our layers in the image manifest.
func (v *verification) ours() int { return len(v.m.Layers) - len(ourLayers) }

// ReportJSON renders a report as indented JSON.
func ReportJSON(r *Report) ([]byte, error) { return json.MarshalIndent(r, "", "  ") }
