package catalog

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/cacheon/engine/internal/identity"
)

// Competition modes a manifest's [competition] table may name.
const (
	ModeSlot   = "slot"
	ModeAtomic = "atomic"
	ModeSystem = "system" // legacy whole-system entries: never crownable
)

// Competition is a manifest's [competition] table.
type Competition struct {
	Target string
	Mode   string
}

// Request is what resolution needs from a parsed manifest and, when it
// exists, the trusted rebuild. It holds plain strings so that the
// manifest parser and the catalog stay independent.
type Request struct {
	// Competition is the [competition] table; nil when the manifest has none.
	Competition *Competition
	// Slots are the slot ids of the manifest's op rows. A slot repeated by
	// variants counts once.
	Slots []string
	// Declared are the features the manifest declares (step 1 of
	// resolution: entry, variants, prepare, setup, override, cuda_sources,
	// aot:<provider> per export, op_extra:<key> per unknown op key,
	// dep_patch:<dependency> per patch).
	Declared []string
	// Observed are the features the trusted rebuild observed (rebuild:*).
	Observed []string
	// EvidenceComplete is true when Observed comes from a complete
	// rebuild record; only then are the declared-versus-observed rules
	// checked.
	EvidenceComplete bool
	// CUDATranslationUnits counts the declared CUDA sources that are
	// translation units (.cu), headers excluded.
	CUDATranslationUnits int
}

// Resolution is the outcome of resolving a request.
type Resolution struct {
	// Registered is true when the contribution resolved to a target.
	Registered bool
	// Target and TargetSpecDigest identify the target when Registered.
	Target           Target
	TargetSpecDigest identity.Digest
	// Unregistered says why a contribution resolved to no target; it is
	// then classified for discovery and never crowned.
	Unregistered string
	// Features is the union of declared and observed features, sorted.
	Features []string
}

// ResolutionRule names the resolution step a request failed.
type ResolutionRule string

// The resolution rules, in the order resolution checks them.
const (
	ResolveCompetitionMode ResolutionRule = "competition-mode"     // mode is slot, atomic or system
	ResolveUnknownTarget   ResolutionRule = "unknown-target"       // the requested target is registered
	ResolveKindMismatch    ResolutionRule = "kind-mismatch"        // the mode equals the target's kind
	ResolveMemberSet       ResolutionRule = "member-set"           // the op slots equal the target's members
	ResolveFeature         ResolutionRule = "feature-not-allowed"  // every feature is admitted by the target
	ResolveDiscoveryLane   ResolutionRule = "discovery-lane"       // setup hooks never resolve to a target
	ResolveDepPatch        ResolutionRule = "dep-patch-evidence"   // a patch is declared iff the rebuild applied one
	ResolveCUDA            ResolutionRule = "cuda-evidence"        // CUDA sources are declared iff the rebuild built them
	ResolveAOT             ResolutionRule = "aot-evidence"         // AOT exports carry their provider's features
	ResolveAOTRebuild      ResolutionRule = "aot-rebuild-evidence" // a provider rebuild implies declared exports
	ResolveIncomplete      ResolutionRule = "evidence-incomplete"  // intake needs the rebuild record
	ResolveUnregistered    ResolutionRule = "unregistered"         // intake needs a registered target
)

// ResolutionError is a request that breaks a resolution rule.
type ResolutionError struct {
	Rule   ResolutionRule
	Reason string
}

func (e *ResolutionError) Error() string {
	return fmt.Sprintf("target resolution: %s (rule %s)", e.Reason, e.Rule)
}

func resolveErr(rule ResolutionRule, format string, args ...any) error {
	return &ResolutionError{Rule: rule, Reason: fmt.Sprintf(format, args...)}
}

// Resolve finds the target a contribution competes for. A request with
// mode "system", or without a [competition] table and with a member set
// no target has, resolves to an unregistered result (discovery). A
// request that names a target must match it exactly. In every case the
// features must be admitted by the target and, with complete evidence,
// agree with what the rebuild observed.
func (c *Catalog) Resolve(req Request) (Resolution, error) {
	res := Resolution{Features: uniqueSorted(append(slices.Clone(req.Declared), req.Observed...))}
	slots := uniqueSorted(req.Slots)
	if len(slots) == 0 {
		return res, resolveErr(ResolveMemberSet, "the manifest declares no op slots")
	}

	var target Target
	switch comp := req.Competition; {
	case comp != nil && comp.Mode == ModeSystem:
		res.Unregistered = "competition mode \"system\" is a legacy whole-system entry and is never crownable"
		return res, nil
	case comp == nil:
		t, ok := c.TargetForMembers(slots)
		if !ok {
			res.Unregistered = fmt.Sprintf("no registered target has exactly the member set %s; classified for discovery", quoteList(slots))
			return res, nil
		}
		target = t
	default:
		if comp.Mode != ModeSlot && comp.Mode != ModeAtomic {
			return res, resolveErr(ResolveCompetitionMode, "competition mode %q must be %q, %q or %q", comp.Mode, ModeSlot, ModeAtomic, ModeSystem)
		}
		t, ok := c.Target(comp.Target)
		if !ok {
			return res, resolveErr(ResolveUnknownTarget, "competition target %q is not registered%s", comp.Target, suggest(comp.Target, c.targetIDs))
		}
		if string(t.Kind) != comp.Mode {
			return res, resolveErr(ResolveKindMismatch, "competition mode %q does not match target %q, which is a %s target", comp.Mode, t.ID, t.Kind)
		}
		if members := uniqueSorted(t.Members); !slices.Equal(members, slots) {
			return res, resolveErr(ResolveMemberSet, "target %q has members %s but the manifest's ops fill %s", t.ID, quoteList(members), quoteList(slots))
		}
		target = t
	}

	if err := checkFeatures(target, res.Features); err != nil {
		return res, err
	}
	if req.EvidenceComplete {
		if err := c.checkEvidence(req, res.Features); err != nil {
			return res, err
		}
	}
	res.Registered = true
	res.Target = target
	res.TargetSpecDigest = c.digests.targetSpec[target.ID]
	return res, nil
}

// ResolveIntake is Resolve for the validator's intake, which accepts only
// a registered target with complete rebuild evidence.
func (c *Catalog) ResolveIntake(req Request) (Resolution, error) {
	if !req.EvidenceComplete {
		return Resolution{}, resolveErr(ResolveIncomplete, "intake needs the complete rebuild record before resolving")
	}
	res, err := c.Resolve(req)
	if err != nil {
		return res, err
	}
	if !res.Registered {
		return res, resolveErr(ResolveUnregistered, "%s", res.Unregistered)
	}
	return res, nil
}

func checkFeatures(t Target, features []string) error {
	var refused []string
	for _, f := range features {
		if !t.Admits(f) {
			refused = append(refused, f)
		}
	}
	if len(refused) == 0 {
		return nil
	}
	if slices.Contains(refused, FeatureSetup) {
		return resolveErr(ResolveDiscoveryLane, "target %q does not admit %s: engine setup hooks run outside every slot boundary, so a bundle with setup belongs to the discovery lane", t.ID, quoteList(refused))
	}
	return resolveErr(ResolveFeature, "target %q does not admit %s (it admits %s)", t.ID, quoteList(refused), quoteList(t.AllowedFeatures))
}

// checkEvidence compares declared features with what the trusted rebuild
// observed. A declaration the rebuild did not act on, or a rebuild action
// nothing declared, means the bundle is not what its manifest says.
func (c *Catalog) checkEvidence(req Request, features []string) error {
	has := func(f string) bool { _, ok := slices.BinarySearch(features, f); return ok }
	var errs []error

	var patches []string
	for _, f := range features {
		if strings.HasPrefix(f, depPatchPrefix) {
			patches = append(patches, f)
		}
	}
	switch applied := has(FeatureRebuildApplyDepPatch); {
	case len(patches) > 0 && !applied:
		errs = append(errs, resolveErr(ResolveDepPatch, "the manifest declares %s but the rebuild observed no %q", quoteList(patches), FeatureRebuildApplyDepPatch))
	case len(patches) == 0 && applied:
		errs = append(errs, resolveErr(ResolveDepPatch, "the rebuild observed %q but the manifest declares no dependency patch", FeatureRebuildApplyDepPatch))
	}

	switch built := has(FeatureRebuildCUDAExt); {
	case has(FeatureCUDASources) && !built:
		errs = append(errs, resolveErr(ResolveCUDA, "the manifest declares %q but the rebuild observed no %q", FeatureCUDASources, FeatureRebuildCUDAExt))
	case has(FeatureCUDASources) && req.CUDATranslationUnits == 0:
		errs = append(errs, resolveErr(ResolveCUDA, "the manifest declares %q but none of them is a .cu translation unit", FeatureCUDASources))
	case !has(FeatureCUDASources) && built:
		errs = append(errs, resolveErr(ResolveCUDA, "the rebuild observed %q but the manifest declares no %q", FeatureRebuildCUDAExt, FeatureCUDASources))
	}

	for _, p := range c.providers {
		exported := has(AOTFeature(p.ID))
		if exported {
			var missing []string
			for _, f := range p.RequiredTargetFeatures {
				if !has(f) {
					missing = append(missing, f)
				}
			}
			if len(missing) > 0 {
				errs = append(errs, resolveErr(ResolveAOT, "the manifest exports %s artifacts but lacks %s", p.ID, quoteList(missing)))
			}
		}
		if !exported && p.RebuildFeature != "" && has(p.RebuildFeature) {
			errs = append(errs, resolveErr(ResolveAOTRebuild, "the rebuild observed %q but the manifest declares no %q export", p.RebuildFeature, p.ID))
		}
	}
	return errors.Join(errs...)
}
