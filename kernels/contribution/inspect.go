package contribution

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cacheon/engine/catalog"
	"github.com/cacheon/engine/internal/identity"
	rejectroot "github.com/cacheon/engine/internal/reject"
	"github.com/cacheon/engine/kernels/bundle"
)

// Inspection stages, in the order Inspect runs them. A RejectedError
// names the stage that refused the bundle.
const (
	StageLoad      = "load"       // intake limits, manifest.toml, declared paths, metadata, patches, rebuild plan
	StageTree      = "tree"       // static tree rules: binaries, undeclared CUDA sources and patches, stray files
	StageResolve   = "resolve"    // target resolution against the catalog
	StageVariants  = "variants"   // variant eligibility domains
	StageDepPolicy = "dep-policy" // where a dependency patch may write
	StagePayload   = "payload"    // Python import closure, CUDA includes, selected payload
)

// RejectedError is a bundle refused by one inspection stage. Errors that
// are not a RejectedError are I/O or usage failures.
type RejectedError struct {
	Stage string
	Err   error
}

func (e *RejectedError) Error() string { return fmt.Sprintf("%s: %v", e.Stage, e.Err) }
func (e *RejectedError) Unwrap() error { return e.Err }

// Is makes every inspection refusal a rejection (rejectroot.ErrRejected).
func (e *RejectedError) Is(target error) bool { return target == rejectroot.ErrRejected }

func reject(stage string, err error) error { return &RejectedError{Stage: stage, Err: err} }

// Target is where a bundle resolved.
type Target struct {
	Registered       bool
	TargetID         string
	Kind             string // "slot" or "atomic"
	TargetSpecDigest identity.Digest
	// Unregistered says why the bundle resolved to no target (the
	// discovery lane); empty when Registered.
	Unregistered string
}

// Inspection is everything the validator derives from a bundle without
// running it.
type Inspection struct {
	Dir                  string
	Bundle               *bundle.Bundle
	ContentHash          identity.Digest // the proposal's artifact digest
	CommittedContentHash identity.Digest // without the top-level carrier receipt
	DeclaredFeatures     []string
	ObservedFeatures     []string // from the rebuild plan
	Features             []string // declared ∪ observed
	Target               Target
	Swappable            bool
	SwapReason           string // first reason it is not swappable; empty when it is

	SelectedPayload       *SelectedPayload
	SelectedPayloadDigest identity.Digest
	// SelectedDeltaDigest binds the payload to its target; empty when the
	// bundle is unregistered.
	SelectedDeltaDigest identity.Digest
}

// Registered reports whether the bundle resolved to a registered target.
func (in *Inspection) Registered() bool { return in.Target.Registered }

// Options are the validator-owned inputs of an inspection.
type Options struct {
	Catalog *catalog.Catalog // required
	Payload PayloadOptions
}

// Inspect loads the bundle at dir and derives its identities: content
// hashes, features, target, swappability, selected payload and delta. It
// never imports or runs bundle code. A bundle the rules refuse yields a
// *RejectedError naming the stage, together with what was derived before
// that stage (nil when the bundle did not load); an unregistered bundle (legacy system
// mode, or a member set no target has) is not an error: Target says why
// it is unregistered and SelectedDeltaDigest stays empty.
func Inspect(dir string, opts Options) (*Inspection, error) {
	if opts.Catalog == nil {
		return nil, errors.New("inspect: no target catalog")
	}
	s, err := bundle.Open(dir)
	if err != nil {
		if errors.Is(err, bundle.ErrInvalid) {
			return nil, reject(StageLoad, err)
		}
		return nil, err
	}
	return InspectSnapshot(s, opts)
}

// InspectSnapshot is Inspect of a bundle already read with bundle.Open:
// every identity is derived from the snapshot's bytes and nothing is read
// from disk again. The inspection keeps the snapshot (Bundle.Snapshot) and
// the Python closure (SelectedPayload.Closure), so later steps reuse both.
func InspectSnapshot(s *bundle.Snapshot, opts Options) (*Inspection, error) {
	if opts.Catalog == nil {
		return nil, errors.New("inspect: no target catalog")
	}
	dir := s.Root()
	b, err := s.Bundle()
	if err != nil {
		if errors.Is(err, bundle.ErrInvalid) {
			return nil, reject(StageLoad, err)
		}
		return nil, err
	}
	in := &Inspection{Dir: dir, Bundle: b}
	m := b.Manifest
	in.Swappable, in.SwapReason = m.Swappability()

	if v := b.TreeViolations(); len(v) > 0 {
		errs := make([]error, len(v))
		for i, e := range v {
			errs[i] = e
		}
		return in, reject(StageTree, errors.Join(errs...))
	}
	// Hash the bytes the snapshot read under the intake limits: a file
	// added since the walk is never read, and none is read twice.
	if in.ContentHash, in.CommittedContentHash, err = s.ContentHashes(); err != nil {
		return nil, err
	}

	res, err := Resolve(b, opts.Catalog)
	in.DeclaredFeatures, in.ObservedFeatures, in.Features = res.Declared, res.Observed, res.Features
	if err != nil {
		return in, reject(StageResolve, err)
	}
	in.Target = res.Target

	if err := bundle.CheckVariantDomains(m); err != nil {
		return in, reject(StageVariants, err)
	}
	if err := bundle.CheckDepPolicy(m); err != nil {
		return in, reject(StageDepPolicy, err)
	}
	p, err := ComputeSelectedPayload(b, opts.Payload)
	if err != nil {
		return in, reject(StagePayload, err)
	}
	in.SelectedPayload = p
	if in.SelectedPayloadDigest, err = p.Digest(); err != nil {
		return nil, err
	}
	if in.Target.Registered {
		if in.SelectedDeltaDigest, err = SelectedDelta(in.SelectedPayloadDigest, in.Target.TargetID, in.Target.TargetSpecDigest); err != nil {
			return nil, err
		}
	}
	return in, nil
}

// Resolution is a bundle's target resolution with the features it used.
type Resolution struct {
	Target   Target
	Declared []string // features the manifest declares
	Observed []string // features the rebuild plan proves
	Features []string // declared ∪ observed
}

// Resolve derives a loaded bundle's features (spec: resolution step 1) and
// resolves them against the catalog. The rebuild plan is read from the
// bundle itself, so the rebuild evidence counts as complete: declared
// CUDA sources need a build_cuda_ext step, declared patches an
// apply_dep_patch step, and the other way round.
func Resolve(b *bundle.Bundle, cat *catalog.Catalog) (Resolution, error) {
	m := b.Manifest
	out := Resolution{Declared: m.DeclaredFeatures(), Observed: b.Rebuild.ObservedFeatures()}
	if out.Observed == nil {
		out.Observed = []string{}
	}
	req := catalog.Request{
		Slots:                m.Slots(),
		Declared:             out.Declared,
		Observed:             out.Observed,
		EvidenceComplete:     true,
		CUDATranslationUnits: countTranslationUnits(m),
	}
	if m.Competition != nil {
		req.Competition = &catalog.Competition{Target: m.Competition.Target, Mode: m.Competition.Mode}
	}
	res, err := cat.Resolve(req)
	out.Features = res.Features
	if err != nil {
		return out, err
	}
	if res.Registered {
		out.Target = Target{Registered: true, TargetID: res.Target.ID, Kind: string(res.Target.Kind), TargetSpecDigest: res.TargetSpecDigest}
	} else {
		out.Target = Target{Unregistered: res.Unregistered}
	}
	return out, nil
}

func countTranslationUnits(m *bundle.Manifest) int {
	n := 0
	for _, p := range m.CUDASourcePaths() {
		if strings.HasSuffix(p, ".cu") {
			n++
		}
	}
	return n
}
