package catalog

import (
	"slices"

	"github.com/cacheon/engine/internal/identity"
)

// Policy and schema versions this package implements. A catalog file
// names the policy version it was written for; a loader for another
// policy refuses it rather than guessing.
const (
	PolicyVersion = "target-catalog.v1"
	SchemaVersion = 1
)

// SlotKind is the execution kind of a slot.
type SlotKind string

// The slot kinds.
const (
	SlotOp         SlotKind = "op"         // a single elementwise or reduction op
	SlotBlock      SlotKind = "block"      // a model block (attention, MoE experts)
	SlotCollective SlotKind = "collective" // a cross-rank operation with a process group
)

// TargetKind is the reward kind of a target.
type TargetKind string

// The target kinds.
const (
	TargetSlot   TargetKind = "slot"   // one slot, rewarded alone
	TargetAtomic TargetKind = "atomic" // several slots rewarded only together
)

// CorrectnessMode is how a candidate's outputs are compared with the
// trusted reference.
type CorrectnessMode string

// The correctness modes.
const (
	// Every element within atol + rtol·|expected|; a non-finite actual fails.
	Allclose CorrectnessMode = "allclose"
	// The fraction of elements within that bound is at least MinRatio.
	MatchedRatio CorrectnessMode = "matched_ratio"
	// Flattened cosine similarity at least MinCosine, and, unless
	// MaxRelNormErr is zero, a relative norm error at most MaxRelNormErr.
	Cosine CorrectnessMode = "cosine"
	// Per row, the overlap of the top-TopK indices of actual and expected,
	// averaged over rows, is at least MinOverlap; NaN and +Inf scores fail.
	TopKOverlap CorrectnessMode = "topk_overlap"
)

// CompositionFirstApplicable is the only composition mode: at a call site
// shared by several active targets, the first one in precedence order
// that accepts the call runs.
const CompositionFirstApplicable = "first_applicable"

// Correctness is a slot's correctness policy. Thresholds a mode does not
// use hold their neutral values (MinRatio 1, the others 0), which is also
// how the contract projection carries them.
type Correctness struct {
	Mode          CorrectnessMode
	TopK          int
	MinRatio      Decimal
	MinCosine     Decimal
	MaxRelNormErr Decimal
	MinOverlap    Decimal
}

// Tolerance is the allclose bound for one dtype.
type Tolerance struct {
	DType string
	ATol  Decimal
	RTol  Decimal
}

// Slot is a registered slot: the validator-owned call boundary a
// contribution fills. Its contract fields feed the target contract
// digest; Summary, Call, Outputs, ShapeParams and Shapes guide the
// verifier and people but are not part of any identity.
type Slot struct {
	ID      string
	Kind    SlotKind
	Summary string

	Entry   string // name of the callable a contribution exports
	Prepare string // name of the optional weight-preparation callable; "" if none

	// Call lists the entry's arguments in semantic order; Outputs are the
	// arguments the validator allocates and the candidate fills.
	Call    []string
	Outputs []string

	// GraphDynamicInputs are the inputs that may change between CUDA-graph
	// replays; weights, prepared state and Python scalars are capture-static.
	GraphDynamicInputs []string

	BindingFamilyID       string
	InputABIID            string
	OutputABIID           string
	ReferenceID           string
	VerificationProfileID string

	Correctness Correctness
	Tolerances  []Tolerance // sorted by dtype name
	KLThreshold *Decimal    // nil when the slot carries none

	// ShapeParams name the values of each catalog shape; those listed in
	// ShapeFlags are 0/1 switches (the MSA prefill slot's causal_probe asks
	// the verifier for its causality probe), the others sizes.
	ShapeParams []string
	ShapeFlags  []string
	Shapes      [][]int64
}

// DTypes returns the dtypes the slot has tolerances for, sorted.
func (s Slot) DTypes() []string {
	out := make([]string, len(s.Tolerances))
	for i, t := range s.Tolerances {
		out[i] = t.DType
	}
	return out
}

// Tolerance returns the slot's tolerance for dtype. For a dtype the
// catalog does not list it returns the upstream fallback (2e-2 for the
// half types float16 and bfloat16, 1e-4 otherwise) and false. cacheon
// verify does not judge in such a dtype: the row is not applicable.
func (s Slot) Tolerance(dtype string) (Tolerance, bool) {
	for _, t := range s.Tolerances {
		if t.DType == dtype {
			return t, true
		}
	}
	bound := MustDecimal("0.0001")
	if dtype == "float16" || dtype == "bfloat16" {
		bound = MustDecimal("0.02")
	}
	return Tolerance{DType: dtype, ATol: bound, RTol: bound}, false
}

func (s Slot) clone() Slot {
	s.Call = slices.Clone(s.Call)
	s.Outputs = slices.Clone(s.Outputs)
	s.GraphDynamicInputs = slices.Clone(s.GraphDynamicInputs)
	s.Tolerances = slices.Clone(s.Tolerances)
	if s.KLThreshold != nil {
		kl := *s.KLThreshold
		s.KLThreshold = &kl
	}
	s.ShapeParams = slices.Clone(s.ShapeParams)
	s.ShapeFlags = slices.Clone(s.ShapeFlags)
	s.Shapes = slices.Clone(s.Shapes)
	for i := range s.Shapes {
		s.Shapes[i] = slices.Clone(s.Shapes[i])
	}
	return s
}

// Target is a registered reward unit. A slot target rewards one slot; an
// atomic target rewards several slots that only make sense replaced
// together, and displaces their singleton targets.
type Target struct {
	ID      string
	Kind    TargetKind
	Members []string // slot ids, in declared order

	// Relations to other targets, sorted.
	Displaces      []string
	CompatibleWith []string
	Requires       []string

	AllowedFeatures []string // sorted

	Contract          string // slot targets: the slot whose contract this target rewards
	AtomicSemanticsID string // atomic targets: the id of the combined semantics
}

func (t Target) clone() Target {
	t.Members = slices.Clone(t.Members)
	t.Displaces = slices.Clone(t.Displaces)
	t.CompatibleWith = slices.Clone(t.CompatibleWith)
	t.Requires = slices.Clone(t.Requires)
	t.AllowedFeatures = slices.Clone(t.AllowedFeatures)
	return t
}

// Admits reports whether the target allows feature.
func (t Target) Admits(feature string) bool {
	_, ok := slices.BinarySearch(t.AllowedFeatures, feature)
	return ok
}

// CompositionRule orders two compatible targets that bind at the same call
// site.
type CompositionRule struct {
	ID              string
	Precedence      []string // first applicable wins
	Mode            string
	BindingFamilyID string

	// BindingContractDigest is H(cacheon.binding-contract, {schema_version,
	// binding_family_id, precedence, mode}).
	BindingContractDigest identity.Digest
}

// TargetIDs returns the rule's targets, sorted.
func (r CompositionRule) TargetIDs() []string {
	ids := slices.Clone(r.Precedence)
	slices.Sort(ids)
	return ids
}

func (r CompositionRule) clone() CompositionRule {
	r.Precedence = slices.Clone(r.Precedence)
	return r
}

// ArtifactProvider is a registered producer of ahead-of-time compiled
// artifacts (for example CuTe DSL CUBINs) that a contribution may export
// instead of source compiled at load time.
type ArtifactProvider struct {
	ID                     string
	ArtifactKind           string
	Authoritative          bool
	BindingABI             string
	BuildPatcherID         string
	BuildPhase             string
	CompileProfileInputs   []string // sorted
	Crownable              bool
	LoadPhase              string
	ProviderCapabilities   []string // sorted
	PublicationDirectory   string
	RebuildFeature         string
	RequiredTargetFeatures []string // sorted
	RequiresCompileProfile bool
	SupportsStaticSlots    bool
}

func (p ArtifactProvider) clone() ArtifactProvider {
	p.CompileProfileInputs = slices.Clone(p.CompileProfileInputs)
	p.ProviderCapabilities = slices.Clone(p.ProviderCapabilities)
	p.RequiredTargetFeatures = slices.Clone(p.RequiredTargetFeatures)
	return p
}
