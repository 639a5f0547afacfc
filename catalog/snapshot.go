package catalog

import (
	"fmt"

	"github.com/cacheon/engine/internal/canonjson"
	"github.com/cacheon/engine/internal/identity"
)

// The types below are the canonical JSON projections every catalog
// identity is computed over. Their json tags are the wire keys; the
// canonical encoder sorts keys, so field order here is irrelevant. They
// never come from HCL directly: HCL formatting cannot reach an identity.

type contractProjection struct {
	SchemaVersion         int                   `json:"schema_version"`
	SlotID                string                `json:"slot_id"`
	Kind                  SlotKind              `json:"kind"`
	Entry                 string                `json:"entry"`
	Prepare               *string               `json:"prepare"`
	GraphDynamicInputs    []string              `json:"graph_dynamic_inputs"`
	InputABIID            string                `json:"input_abi_id"`
	OutputABIID           string                `json:"output_abi_id"`
	ReferenceID           string                `json:"reference_id"`
	VerificationProfileID string                `json:"verification_profile_id"`
	BindingFamilyID       string                `json:"binding_family_id"`
	Correctness           correctnessProjection `json:"correctness"`
	Tolerances            []toleranceProjection `json:"tolerances"`
	KLThreshold           *Decimal              `json:"kl_threshold"`
}

type correctnessProjection struct {
	Mode          CorrectnessMode `json:"mode"`
	TopK          int             `json:"top_k"`
	MinRatio      Decimal         `json:"min_ratio"`
	MinCosine     Decimal         `json:"min_cosine"`
	MaxRelNormErr Decimal         `json:"max_rel_norm_err"`
	MinOverlap    Decimal         `json:"min_overlap"`
}

type toleranceProjection struct {
	DType string  `json:"dtype"`
	ATol  Decimal `json:"atol"`
	RTol  Decimal `json:"rtol"`
}

type atomicContractProjection struct {
	SchemaVersion         int               `json:"schema_version"`
	TargetID              string            `json:"target_id"`
	AtomicSemanticsID     string            `json:"atomic_semantics_id"`
	MemberContractDigests []identity.Digest `json:"member_contract_digests"`
}

// targetRow is one target in the catalog snapshot, and the payload of its
// target-spec digest. Slot targets carry contract_ref; atomic targets
// carry atomic_semantics_id and member_contract_digests.
type targetRow struct {
	TargetID              string              `json:"target_id"`
	Kind                  TargetKind          `json:"kind"`
	Members               []string            `json:"members"`
	Displaces             []string            `json:"displaces"`
	CompatibleWith        []string            `json:"compatible_with"`
	Requires              []string            `json:"requires"`
	AllowedFeatures       []string            `json:"allowed_features"`
	ContractRef           *contractProjection `json:"contract_ref,omitempty"`
	AtomicSemanticsID     string              `json:"atomic_semantics_id,omitempty"`
	MemberContractDigests []identity.Digest   `json:"member_contract_digests,omitempty"`
	ContractDigest        identity.Digest     `json:"contract_digest"`
}

type bindingContractProjection struct {
	SchemaVersion   int      `json:"schema_version"`
	BindingFamilyID string   `json:"binding_family_id"`
	Precedence      []string `json:"precedence"`
	Mode            string   `json:"mode"`
}

type ruleRow struct {
	SchemaVersion         int             `json:"schema_version"`
	RuleID                string          `json:"rule_id"`
	TargetIDs             []string        `json:"target_ids"`
	Precedence            []string        `json:"precedence"`
	Mode                  string          `json:"mode"`
	BindingFamilyID       string          `json:"binding_family_id"`
	BindingContractDigest identity.Digest `json:"binding_contract_digest"`
}

type providerRow struct {
	ProviderID             string   `json:"provider_id"`
	ArtifactKind           string   `json:"artifact_kind"`
	Authoritative          bool     `json:"authoritative"`
	BindingABI             string   `json:"binding_abi"`
	BuildPatcherID         string   `json:"build_patcher_id"`
	BuildPhase             string   `json:"build_phase"`
	CompileProfileInputs   []string `json:"compile_profile_inputs"`
	Crownable              bool     `json:"crownable"`
	LoadPhase              string   `json:"load_phase"`
	ProviderCapabilities   []string `json:"provider_capabilities"`
	PublicationDirectory   string   `json:"publication_directory"`
	RebuildFeature         string   `json:"rebuild_feature"`
	RequiredTargetFeatures []string `json:"required_target_features"`
	RequiresCompileProfile bool     `json:"requires_compile_profile"`
	SupportsStaticSlots    bool     `json:"supports_static_slots"`
}

type registryProjection struct {
	SchemaVersion int           `json:"schema_version"`
	Providers     []providerRow `json:"providers"`
}

type snapshotProjection struct {
	SchemaVersion                  int                `json:"schema_version"`
	PolicyVersion                  string             `json:"policy_version"`
	ArtifactProviderRegistry       registryProjection `json:"artifact_provider_registry"`
	ArtifactProviderRegistryDigest identity.Digest    `json:"artifact_provider_registry_digest"`
	Targets                        []targetRow        `json:"targets"`
	CompositionRules               []ruleRow          `json:"composition_rules"`
}

// contractOf projects a slot's contract.
func contractOf(s Slot) *contractProjection {
	p := &contractProjection{
		SchemaVersion:         SchemaVersion,
		SlotID:                s.ID,
		Kind:                  s.Kind,
		Entry:                 s.Entry,
		GraphDynamicInputs:    s.GraphDynamicInputs,
		InputABIID:            s.InputABIID,
		OutputABIID:           s.OutputABIID,
		ReferenceID:           s.ReferenceID,
		VerificationProfileID: s.VerificationProfileID,
		BindingFamilyID:       s.BindingFamilyID,
		Correctness: correctnessProjection{
			Mode:          s.Correctness.Mode,
			TopK:          s.Correctness.TopK,
			MinRatio:      s.Correctness.MinRatio,
			MinCosine:     s.Correctness.MinCosine,
			MaxRelNormErr: s.Correctness.MaxRelNormErr,
			MinOverlap:    s.Correctness.MinOverlap,
		},
		KLThreshold: s.KLThreshold,
	}
	if s.Prepare != "" {
		prepare := s.Prepare
		p.Prepare = &prepare
	}
	for _, t := range s.Tolerances {
		p.Tolerances = append(p.Tolerances, toleranceProjection(t))
	}
	return p
}

// digests holds every identity of a catalog. The projections above carry
// them typed too: a Digest marshals as the bare hex a string held, so the
// snapshot bytes (and every digest over them) are those of upstream.
type digests struct {
	contract   map[string]identity.Digest // target id → contract digest
	targetSpec map[string]identity.Digest // target id → target-spec digest
	binding    map[string]identity.Digest // rule id → binding contract digest
	registry   identity.Digest
	catalog    identity.Digest
	snapshot   []byte // canonical JSON of the snapshot
	rows       map[string][]byte
}

// computeDigests projects the catalog and hashes every projection.
// Targets are processed slot targets first, since an atomic target's
// contract digest is computed over its members' contract digests.
func computeDigests(slots map[string]Slot, targets []Target, rules []CompositionRule, providers []ArtifactProvider) (*digests, error) {
	d := &digests{
		contract:   map[string]identity.Digest{},
		targetSpec: map[string]identity.Digest{},
		binding:    map[string]identity.Digest{},
		rows:       map[string][]byte{},
	}
	registry := registryProjection{SchemaVersion: SchemaVersion, Providers: []providerRow{}}
	for _, p := range providers {
		registry.Providers = append(registry.Providers, providerRow{
			ProviderID: p.ID, ArtifactKind: p.ArtifactKind, Authoritative: p.Authoritative,
			BindingABI: p.BindingABI, BuildPatcherID: p.BuildPatcherID, BuildPhase: p.BuildPhase,
			CompileProfileInputs: p.CompileProfileInputs, Crownable: p.Crownable, LoadPhase: p.LoadPhase,
			ProviderCapabilities: p.ProviderCapabilities, PublicationDirectory: p.PublicationDirectory,
			RebuildFeature: p.RebuildFeature, RequiredTargetFeatures: p.RequiredTargetFeatures,
			RequiresCompileProfile: p.RequiresCompileProfile, SupportsStaticSlots: p.SupportsStaticSlots,
		})
	}
	var err error
	if d.registry, err = identity.H(identity.DomainArtifactProviderRegistry, registry); err != nil {
		return nil, fmt.Errorf("artifact provider registry digest: %w", err)
	}

	rows := make(map[string]targetRow, len(targets))
	for _, kind := range []TargetKind{TargetSlot, TargetAtomic} {
		for _, t := range targets {
			if t.Kind != kind {
				continue
			}
			row := targetRow{
				TargetID: t.ID, Kind: t.Kind, Members: t.Members,
				Displaces: t.Displaces, CompatibleWith: t.CompatibleWith, Requires: t.Requires,
				AllowedFeatures: t.AllowedFeatures,
			}
			if kind == TargetSlot {
				row.ContractRef = contractOf(slots[t.Contract])
				row.ContractDigest, err = identity.H(identity.DomainTargetContract, row.ContractRef)
			} else {
				row.AtomicSemanticsID = t.AtomicSemanticsID
				row.MemberContractDigests = make([]identity.Digest, len(t.Members))
				for i, m := range t.Members {
					row.MemberContractDigests[i] = d.contract[m]
				}
				row.ContractDigest, err = identity.H(identity.DomainAtomicTargetContract, atomicContractProjection{
					SchemaVersion:         SchemaVersion,
					TargetID:              t.ID,
					AtomicSemanticsID:     t.AtomicSemanticsID,
					MemberContractDigests: row.MemberContractDigests,
				})
			}
			if err != nil {
				return nil, fmt.Errorf("contract digest of target %s: %w", t.ID, err)
			}
			d.contract[t.ID] = row.ContractDigest
			if d.targetSpec[t.ID], err = identity.H(identity.DomainTargetSpec, row); err != nil {
				return nil, fmt.Errorf("target-spec digest of target %s: %w", t.ID, err)
			}
			if d.rows[t.ID], err = canonjson.Marshal(row); err != nil {
				return nil, fmt.Errorf("target row %s: %w", t.ID, err)
			}
			rows[t.ID] = row
		}
	}

	snap := snapshotProjection{
		SchemaVersion:                  SchemaVersion,
		PolicyVersion:                  PolicyVersion,
		ArtifactProviderRegistry:       registry,
		ArtifactProviderRegistryDigest: d.registry,
		Targets:                        []targetRow{},
		CompositionRules:               []ruleRow{},
	}
	for _, t := range targets { // sorted by id
		snap.Targets = append(snap.Targets, rows[t.ID])
	}
	for _, r := range rules { // sorted by id
		binding, err := identity.H(identity.DomainBindingContract, bindingContractProjection{
			SchemaVersion: SchemaVersion, BindingFamilyID: r.BindingFamilyID, Precedence: r.Precedence, Mode: r.Mode,
		})
		if err != nil {
			return nil, fmt.Errorf("binding contract digest of rule %s: %w", r.ID, err)
		}
		d.binding[r.ID] = binding
		snap.CompositionRules = append(snap.CompositionRules, ruleRow{
			SchemaVersion: SchemaVersion, RuleID: r.ID, TargetIDs: r.TargetIDs(), Precedence: r.Precedence,
			Mode: r.Mode, BindingFamilyID: r.BindingFamilyID, BindingContractDigest: binding,
		})
	}
	if d.snapshot, err = canonjson.Marshal(snap); err != nil {
		return nil, fmt.Errorf("catalog snapshot: %w", err)
	}
	if d.catalog, err = identity.H(identity.DomainTargetCatalog, snap); err != nil {
		return nil, fmt.Errorf("catalog digest: %w", err)
	}
	return d, nil
}
