package stack

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/cacheon/engine/internal/canonjson"
	"github.com/cacheon/engine/internal/identity"
)

// Policies and type tags of the two stack manifests.
const (
	EvaluationPolicyVersion = "evaluation-stack.v1"
	ReleasePolicyVersion    = "engine-release.v1"
	evaluationType          = "evaluation_stack"
	releaseType             = "engine_release"
	manifestSchemaVersion   = 1
)

// Ref is a contribution reference a stack holds at one target: a proposal
// (a bundle as proposed, named by its content hash) or an integrated
// contribution (reviewed source, named by its source tree digest). Its
// canonical JSON (through json tags or MarshalJSON) is the entry's
// projection in the stack identity.
type Ref interface {
	// RefKind is ProposalKind or IntegratedKind.
	RefKind() string
	// RefTarget returns the target id and target-spec digest the
	// reference is bound to.
	RefTarget() (targetID string, targetSpecDigest identity.Digest)
	// RefDigest is the reference's own identity.
	RefDigest() (identity.Digest, error)
	// Validate checks the reference's fields alone.
	Validate() error
}

// header is what both stack manifests share.
type header struct {
	BaseEngineDigest identity.Digest
	RuntimeDigest    identity.Digest
	CatalogDigest    identity.Digest
	// CatalogSnapshot is the canonical JSON of the catalog snapshot the
	// stack was planned against; it must hash to CatalogDigest.
	CatalogSnapshot json.RawMessage
	Entries         map[string]Ref
}

// EvaluationStackManifest is the identity of an evaluation stack: the
// incumbent a candidate is measured against, or a candidate stack. It is
// bound to an arena and may hold proposals.
type EvaluationStackManifest struct {
	ArenaDigest identity.Digest
	header
}

// EngineReleaseManifest is the identity of a release stack: integrated
// contributions only, no arena.
type EngineReleaseManifest struct {
	header
}

// NewEvaluationStackManifest returns a validated evaluation manifest.
func NewEvaluationStackManifest(runtime, baseEngine, arena, catalogDigest identity.Digest, catalogSnapshot []byte, entries []Ref) (*EvaluationStackManifest, error) {
	catalogSnapshot, err := canonicalSnapshot(catalogSnapshot)
	if err != nil {
		return nil, fmt.Errorf("evaluation stack: %w", err)
	}
	m := &EvaluationStackManifest{ArenaDigest: arena, header: header{
		RuntimeDigest: runtime, BaseEngineDigest: baseEngine, CatalogDigest: catalogDigest,
		CatalogSnapshot: json.RawMessage(catalogSnapshot), Entries: map[string]Ref{},
	}}
	if err := m.header.addEntries(entries); err != nil {
		return nil, fmt.Errorf("evaluation stack: %w", err)
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return m, nil
}

// NewEngineReleaseManifest returns a validated release manifest.
func NewEngineReleaseManifest(runtime, baseEngine, catalogDigest identity.Digest, catalogSnapshot []byte, entries []Ref) (*EngineReleaseManifest, error) {
	catalogSnapshot, err := canonicalSnapshot(catalogSnapshot)
	if err != nil {
		return nil, fmt.Errorf("release stack: %w", err)
	}
	m := &EngineReleaseManifest{header: header{
		RuntimeDigest: runtime, BaseEngineDigest: baseEngine, CatalogDigest: catalogDigest,
		CatalogSnapshot: json.RawMessage(catalogSnapshot), Entries: map[string]Ref{},
	}}
	if err := m.header.addEntries(entries); err != nil {
		return nil, fmt.Errorf("release stack: %w", err)
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return m, nil
}

// canonicalSnapshot re-encodes a catalog snapshot canonically, so that
// manifests compare and serialize by bytes however the snapshot was given.
func canonicalSnapshot(b []byte) ([]byte, error) {
	if len(b) == 0 {
		return nil, fmt.Errorf("catalog_snapshot is missing")
	}
	if err := checkSnapshotSize(b); err != nil {
		return nil, err
	}
	c, err := canonjson.Marshal(json.RawMessage(b))
	if err != nil {
		return nil, fmt.Errorf("catalog_snapshot: %w", err)
	}
	return c, nil
}

func checkSnapshotSize(b []byte) error {
	if len(b) > MaxCatalogSnapshotBytes {
		return fmt.Errorf("catalog_snapshot: %w: %d bytes, the limit is %d", canonjson.ErrTooLarge, len(b), MaxCatalogSnapshotBytes)
	}
	return nil
}

func (h *header) addEntries(entries []Ref) error {
	for _, r := range entries {
		id, _ := r.RefTarget()
		if _, dup := h.Entries[id]; dup {
			return fmt.Errorf("two entries for target %s", id)
		}
		h.Entries[id] = r
	}
	return nil
}

func (h *header) validate(kind string) error {
	for _, f := range []struct {
		name  string
		value identity.Digest
	}{
		{"base_engine_digest", h.BaseEngineDigest},
		{"runtime_digest", h.RuntimeDigest},
		{"catalog_digest", h.CatalogDigest},
	} {
		if err := identity.CheckField(f.name, f.value, false); err != nil {
			return fmt.Errorf("%s stack: %w", kind, err)
		}
	}
	specs, err := snapshotSpecDigests(h.CatalogSnapshot, h.CatalogDigest)
	if err != nil {
		return fmt.Errorf("%s stack: %w", kind, err)
	}
	for _, id := range h.TargetIDs() {
		r := h.Entries[id]
		if r == nil {
			return fmt.Errorf("%s stack: entry %s is empty", kind, id)
		}
		if err := r.Validate(); err != nil {
			return fmt.Errorf("%s stack: entry %s: %w", kind, id, err)
		}
		refID, spec := r.RefTarget()
		if refID != id {
			return fmt.Errorf("%s stack: entry key %s holds a reference for target %s", kind, id, refID)
		}
		want, ok := specs[id]
		if !ok {
			return fmt.Errorf("%s stack: entry %s: target is not in the stack's catalog", kind, id)
		}
		if spec != want {
			return fmt.Errorf("%s stack: entry %s: stale target-spec digest %s, the catalog's is %s", kind, id, spec, want)
		}
	}
	return nil
}

// MaxCatalogSnapshotBytes bounds the catalog snapshot a manifest carries,
// checked before it is hashed or decoded. A catalog file is at most 1 MiB
// of HCL and its set references expand to a bounded number of entries;
// the default catalog's snapshot is about 23 KB.
const MaxCatalogSnapshotBytes = 32 << 20

// snapshotSpecDigests checks that snapshot hashes to catalogDigest and
// returns the target-spec digest of each of its targets.
func snapshotSpecDigests(snapshot json.RawMessage, catalogDigest identity.Digest) (map[string]identity.Digest, error) {
	if len(snapshot) == 0 {
		return nil, fmt.Errorf("catalog_snapshot is missing")
	}
	if err := checkSnapshotSize(snapshot); err != nil {
		return nil, err
	}
	got, err := identity.H(identity.DomainTargetCatalog, snapshot)
	if err != nil {
		return nil, fmt.Errorf("catalog_snapshot: %w", err)
	}
	if got != catalogDigest {
		return nil, fmt.Errorf("catalog_snapshot hashes to %s, catalog_digest says %s", got, catalogDigest)
	}
	var doc struct {
		Targets []json.RawMessage `json:"targets"`
	}
	if err := json.Unmarshal(snapshot, &doc); err != nil {
		return nil, fmt.Errorf("catalog_snapshot: %w", err)
	}
	specs := make(map[string]identity.Digest, len(doc.Targets))
	for i, row := range doc.Targets {
		var t struct {
			TargetID string `json:"target_id"`
		}
		if err := json.Unmarshal(row, &t); err != nil || t.TargetID == "" {
			return nil, fmt.Errorf("catalog_snapshot: targets[%d] has no target_id", i)
		}
		d, err := identity.H(identity.DomainTargetSpec, row)
		if err != nil {
			return nil, fmt.Errorf("catalog_snapshot: targets[%d]: %w", i, err)
		}
		specs[t.TargetID] = d
	}
	return specs, nil
}

// TargetIDs returns the targets with an entry, sorted.
func (h *header) TargetIDs() []string {
	ids := make([]string, 0, len(h.Entries))
	for id := range h.Entries {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

func joinTargets(entries map[string]Ref) string {
	h := header{Entries: entries}
	return strings.Join(h.TargetIDs(), ", ")
}

// Validate checks the manifest alone: digests, the embedded catalog
// snapshot against catalog_digest, and every entry against the snapshot's
// target-spec digests.
func (m *EvaluationStackManifest) Validate() error {
	if err := identity.CheckField("arena_digest", m.ArenaDigest, false); err != nil {
		return fmt.Errorf("evaluation stack: %w", err)
	}
	return m.header.validate("evaluation")
}

// Validate checks the manifest alone, and that every entry is integrated.
func (m *EngineReleaseManifest) Validate() error {
	for _, id := range m.TargetIDs() {
		if r := m.Entries[id]; r != nil && r.RefKind() != IntegratedKind {
			return fmt.Errorf("release stack: entry %s is a %s; a release ships integrated (reviewed) contributions only", id, r.RefKind())
		}
	}
	return m.header.validate("release")
}

type evaluationProjection struct {
	Type               string          `json:"type"`
	ArenaDigest        identity.Digest `json:"arena_digest"`
	BaseEngineDigest   identity.Digest `json:"base_engine_digest"`
	RuntimeDigest      identity.Digest `json:"runtime_digest"`
	CatalogDigest      identity.Digest `json:"catalog_digest"`
	CatalogSnapshot    json.RawMessage `json:"catalog_snapshot"`
	Entries            map[string]Ref  `json:"entries"`
	SchemaVersion      int             `json:"schema_version"`
	StackPolicyVersion string          `json:"stack_policy_version"`
}

type releaseProjection struct {
	Type               string          `json:"type"`
	BaseEngineDigest   identity.Digest `json:"base_engine_digest"`
	RuntimeDigest      identity.Digest `json:"runtime_digest"`
	CatalogDigest      identity.Digest `json:"catalog_digest"`
	CatalogSnapshot    json.RawMessage `json:"catalog_snapshot"`
	Entries            map[string]Ref  `json:"entries"`
	SchemaVersion      int             `json:"schema_version"`
	StackPolicyVersion string          `json:"stack_policy_version"`
}

// Projection is the canonical payload the digest covers.
func (m *EvaluationStackManifest) Projection() any {
	return evaluationProjection{
		Type: evaluationType, ArenaDigest: m.ArenaDigest, BaseEngineDigest: m.BaseEngineDigest,
		RuntimeDigest: m.RuntimeDigest, CatalogDigest: m.CatalogDigest, CatalogSnapshot: m.CatalogSnapshot,
		Entries: nonNil(m.Entries), SchemaVersion: manifestSchemaVersion, StackPolicyVersion: EvaluationPolicyVersion,
	}
}

// Projection is the canonical payload the digest covers.
func (m *EngineReleaseManifest) Projection() any {
	return releaseProjection{
		Type: releaseType, BaseEngineDigest: m.BaseEngineDigest,
		RuntimeDigest: m.RuntimeDigest, CatalogDigest: m.CatalogDigest, CatalogSnapshot: m.CatalogSnapshot,
		Entries: nonNil(m.Entries), SchemaVersion: manifestSchemaVersion, StackPolicyVersion: ReleasePolicyVersion,
	}
}

func nonNil(m map[string]Ref) map[string]Ref {
	if m == nil {
		return map[string]Ref{}
	}
	return m
}

// Digest is H(cacheon.stack.evaluation, projection).
func (m *EvaluationStackManifest) Digest() (identity.Digest, error) {
	if err := m.Validate(); err != nil {
		return identity.Digest{}, err
	}
	return identity.H(identity.DomainStackEvaluation, m.Projection())
}

// Digest is H(cacheon.stack.release, projection).
func (m *EngineReleaseManifest) Digest() (identity.Digest, error) {
	if err := m.Validate(); err != nil {
		return identity.Digest{}, err
	}
	return identity.H(identity.DomainStackRelease, m.Projection())
}

// CanonicalJSON returns the canonical JSON of the projection: the manifest
// document a build writes beside the engine tree.
func (m *EvaluationStackManifest) CanonicalJSON() ([]byte, error) {
	return canonjson.Marshal(m.Projection())
}

// CanonicalJSON returns the canonical JSON of the projection.
func (m *EngineReleaseManifest) CanonicalJSON() ([]byte, error) {
	return canonjson.Marshal(m.Projection())
}

// WithContribution returns a new manifest with ref active at its target
// and the targets in remove dropped. It applies no displacement rule
// itself: the planner decides what a transition removes.
func (m *EvaluationStackManifest) WithContribution(ref Ref, remove []string) (*EvaluationStackManifest, error) {
	next := &EvaluationStackManifest{ArenaDigest: m.ArenaDigest, header: m.header.with(ref, remove)}
	if err := next.Validate(); err != nil {
		return nil, err
	}
	return next, nil
}

// WithContribution returns a new release manifest with ref active at its
// target and the targets in remove dropped.
func (m *EngineReleaseManifest) WithContribution(ref Ref, remove []string) (*EngineReleaseManifest, error) {
	next := &EngineReleaseManifest{header: m.header.with(ref, remove)}
	if err := next.Validate(); err != nil {
		return nil, err
	}
	return next, nil
}

func (h header) with(ref Ref, remove []string) header {
	entries := make(map[string]Ref, len(h.Entries)+1)
	for id, r := range h.Entries {
		entries[id] = r
	}
	for _, id := range remove {
		delete(entries, id)
	}
	if ref != nil {
		id, _ := ref.RefTarget()
		entries[id] = ref
	}
	h.Entries = entries
	return h
}

// Context is what a stack manifest is checked against before use: the
// substrate and arena of the deployment and the catalog in force.
type Context struct {
	RuntimeDigest    identity.Digest
	BaseEngineDigest identity.Digest
	ArenaDigest      identity.Digest // zero for release stacks
	CatalogDigest    identity.Digest
	CatalogSnapshot  []byte // canonical JSON
}

// ValidateAgainst checks the manifest against ctx: same runtime, base
// engine and arena, and byte-identical catalog.
func (m *EvaluationStackManifest) ValidateAgainst(ctx Context) error {
	if m.ArenaDigest != ctx.ArenaDigest {
		return fmt.Errorf("evaluation stack: arena_digest %s, the deployment's is %s", m.ArenaDigest, ctx.ArenaDigest)
	}
	return m.header.validateAgainst("evaluation", ctx)
}

// ValidateAgainst checks the release manifest against ctx.
func (m *EngineReleaseManifest) ValidateAgainst(ctx Context) error {
	return m.header.validateAgainst("release", ctx)
}

func (h *header) validateAgainst(kind string, ctx Context) error {
	switch {
	case h.RuntimeDigest != ctx.RuntimeDigest:
		return fmt.Errorf("%s stack: runtime_digest %s, the deployment's is %s", kind, h.RuntimeDigest, ctx.RuntimeDigest)
	case h.BaseEngineDigest != ctx.BaseEngineDigest:
		return fmt.Errorf("%s stack: base_engine_digest %s, the deployment's is %s", kind, h.BaseEngineDigest, ctx.BaseEngineDigest)
	case h.CatalogDigest != ctx.CatalogDigest:
		return fmt.Errorf("%s stack: catalog_digest %s, the catalog in force is %s", kind, h.CatalogDigest, ctx.CatalogDigest)
	case string(h.CatalogSnapshot) != string(ctx.CatalogSnapshot):
		return fmt.Errorf("%s stack: the embedded catalog snapshot differs from the catalog in force", kind)
	}
	return nil
}

// Manifest is what the materializer and planner read of either stack
// manifest.
type Manifest interface {
	// Kind is Evaluation or Release.
	Kind() Kind
	Digest() (identity.Digest, error)
	Validate() error
	CanonicalJSON() ([]byte, error)
	// TargetIDs returns the targets with an entry, sorted.
	TargetIDs() []string
	// Entry returns the reference active at target.
	Entry(target string) (Ref, bool)
	// Catalog returns the catalog digest and canonical snapshot the stack
	// was built against.
	Catalog() (digest identity.Digest, snapshot []byte)
}

// Kind is Evaluation.
func (m *EvaluationStackManifest) Kind() Kind { return Evaluation }

// Kind is Release.
func (m *EngineReleaseManifest) Kind() Kind { return Release }

// Entry returns the reference active at target.
func (h *header) Entry(target string) (Ref, bool) {
	r, ok := h.Entries[target]
	return r, ok
}

// Catalog returns the catalog digest and canonical snapshot.
func (h *header) Catalog() (identity.Digest, []byte) { return h.CatalogDigest, h.CatalogSnapshot }

var (
	_ Manifest = (*EvaluationStackManifest)(nil)
	_ Manifest = (*EngineReleaseManifest)(nil)
)
