package catalog

import (
	_ "embed"
	"fmt"
	"io/fs"
	"slices"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/cacheon/engine/internal/hclload"
	"github.com/cacheon/engine/internal/identity"
)

// DefaultFile is the name the embedded default catalog reports in
// diagnostics.
const DefaultFile = "catalog/targets.hcl"

//go:embed targets.hcl
var defaultSource []byte

// DefaultSource returns the HCL source of the default catalog compiled
// into this binary.
func DefaultSource() []byte { return slices.Clone(defaultSource) }

// Default loads the default catalog compiled into this binary. It fails
// only if the embedded file is broken, which the package tests prevent.
func Default() (*Catalog, error) {
	c, diags := Parse(defaultSource, DefaultFile)
	if diags.HasErrors() {
		return nil, fmt.Errorf("default catalog: %w", diags)
	}
	return c, nil
}

// Catalog is a loaded, validated target catalog with its identities. It
// is immutable: accessors return copies.
type Catalog struct {
	slots     map[string]Slot
	slotIDs   []string // sorted
	targets   map[string]Target
	targetIDs []string // sorted
	rules     []CompositionRule
	providers []ArtifactProvider

	vocabulary   []string
	observedOnly []string

	// byMembers maps the sorted member set of each target to its id.
	byMembers map[string]string
	// displaceClosure and requiresClosure hold each target's transitive
	// relations, which active-set validation consults.
	displaceClosure map[string]map[string]bool
	requiresClosure map[string]map[string]bool

	digests *digests
}

// Load reads, decodes and validates the catalog file name in fsys.
// Diagnostics name the file, line and column of each problem; the
// catalog is nil whenever they hold an error.
func Load(fsys fs.FS, name string) (*Catalog, hcl.Diagnostics) {
	src, err := hclload.ReadFile(fsys, name)
	if err != nil {
		return nil, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Cannot read catalog",
			Detail:   err.Error(),
		}}
	}
	return Parse(src, name)
}

// Parse decodes and validates catalog source; filename is used in
// diagnostics. Decoding reports every problem a block shows by itself;
// the rules that span blocks (relations, composition, features) run once
// every block decodes, so their diagnostics never stem from an earlier
// error.
func Parse(src []byte, filename string) (*Catalog, hcl.Diagnostics) {
	// hclsyntax has no nesting limit of its own: the size and depth are
	// checked before it runs, the expressions before any is evaluated.
	if limits := hclload.Check(src, filename); limits.HasErrors() {
		return nil, asRule(RuleSourceLimits, limits)
	}
	file, diags := hclsyntax.ParseConfig(src, filename, hcl.InitialPos)
	if diags.HasErrors() {
		return nil, diags
	}
	if exprs := hclload.CheckExpressions(file.Body, "concat"); exprs.HasErrors() {
		return nil, append(diags, asRule(RuleStaticExpressions, exprs)...)
	}
	doc, moreDiags := decodeFile(file)
	diags = append(diags, moreDiags...)
	if diags.HasErrors() {
		return nil, diags
	}
	diags = append(diags, validate(doc)...)
	if diags.HasErrors() {
		return nil, diags
	}
	c, err := build(doc)
	if err != nil {
		return nil, append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Cannot compute catalog identity",
			Detail:   err.Error(),
			Subject:  doc.fileRange.Ptr(),
		})
	}
	return c, diags
}

// build turns a validated document into a Catalog and computes its digests.
func build(doc *document) (*Catalog, error) {
	c := &Catalog{
		slots:           map[string]Slot{},
		targets:         map[string]Target{},
		vocabulary:      sortedValues(doc.vocabulary),
		observedOnly:    sortedValues(doc.observedOnly),
		byMembers:       map[string]string{},
		displaceClosure: map[string]map[string]bool{},
		requiresClosure: map[string]map[string]bool{},
	}
	for _, s := range doc.slots {
		c.slots[s.ID] = s.Slot
		c.slotIDs = append(c.slotIDs, s.ID)
	}
	slices.Sort(c.slotIDs)

	displaces, requires := map[string][]string{}, map[string][]string{}
	for _, d := range doc.targets {
		t := Target{
			ID:              d.id.Value,
			Kind:            TargetKind(d.kind.Value),
			Members:         itemValues(d.members),
			Displaces:       sortedValues(d.displaces),
			CompatibleWith:  sortedValues(d.compat),
			Requires:        sortedValues(d.requires),
			AllowedFeatures: sortedValues(d.features),
		}
		if d.contract != nil {
			t.Contract = d.contract.Value
		}
		if d.atomicID != nil {
			t.AtomicSemanticsID = d.atomicID.Value
		}
		c.targets[t.ID] = t
		c.targetIDs = append(c.targetIDs, t.ID)
		c.byMembers[memberSetKey(d.members)] = t.ID
		displaces[t.ID], requires[t.ID] = t.Displaces, t.Requires
	}
	slices.Sort(c.targetIDs)
	for _, id := range c.targetIDs {
		c.displaceClosure[id] = closure(displaces, id)
		c.requiresClosure[id] = closure(requires, id)
	}

	for _, r := range doc.rules {
		c.rules = append(c.rules, CompositionRule{
			ID:              r.id.Value,
			Precedence:      itemValues(r.precedence),
			Mode:            r.mode.Value,
			BindingFamilyID: r.family.Value,
		})
	}
	slices.SortFunc(c.rules, func(a, b CompositionRule) int { return compareStrings(a.ID, b.ID) })
	for _, p := range doc.providers {
		c.providers = append(c.providers, p.ArtifactProvider)
	}
	slices.SortFunc(c.providers, func(a, b ArtifactProvider) int { return compareStrings(a.ID, b.ID) })

	targets := make([]Target, len(c.targetIDs))
	for i, id := range c.targetIDs {
		targets[i] = c.targets[id]
	}
	d, err := computeDigests(c.slots, targets, c.rules, c.providers)
	if err != nil {
		return nil, err
	}
	c.digests = d
	for i := range c.rules {
		c.rules[i].BindingContractDigest = d.binding[c.rules[i].ID]
	}
	return c, nil
}

// Digest returns the catalog digest, H(cacheon.target-catalog, snapshot).
func (c *Catalog) Digest() identity.Digest { return c.digests.catalog }

// Snapshot returns the canonical JSON of the catalog snapshot: the exact
// bytes whose H(cacheon.target-catalog, ·) is Digest.
func (c *Catalog) Snapshot() []byte { return slices.Clone(c.digests.snapshot) }

// ArtifactProviderRegistryDigest returns
// H(cacheon.artifact-provider-registry, registry snapshot).
func (c *Catalog) ArtifactProviderRegistryDigest() identity.Digest { return c.digests.registry }

// TargetSpecDigest returns H(cacheon.target-spec, target row) of a target.
func (c *Catalog) TargetSpecDigest(id string) (identity.Digest, bool) {
	d, ok := c.digests.targetSpec[id]
	return d, ok
}

// TargetSpec returns the canonical JSON of a target's snapshot row, the
// payload of its target-spec digest.
func (c *Catalog) TargetSpec(id string) ([]byte, bool) {
	b, ok := c.digests.rows[id]
	return slices.Clone(b), ok
}

// ContractDigest returns a target's contract digest: H(cacheon.target-
// contract, contract projection) for a slot target, H(cacheon.atomic-
// target-contract, …) over its members' contract digests for an atomic one.
func (c *Catalog) ContractDigest(id string) (identity.Digest, bool) {
	d, ok := c.digests.contract[id]
	return d, ok
}

// Target returns the target with id.
func (c *Catalog) Target(id string) (Target, bool) {
	t, ok := c.targets[id]
	return t.clone(), ok
}

// Targets returns every target, sorted by id.
func (c *Catalog) Targets() []Target {
	out := make([]Target, len(c.targetIDs))
	for i, id := range c.targetIDs {
		out[i] = c.targets[id].clone()
	}
	return out
}

// TargetIDs returns every target id, sorted.
func (c *Catalog) TargetIDs() []string { return slices.Clone(c.targetIDs) }

// TargetForMembers returns the target whose member set is exactly slots
// (order and repetition ignored).
func (c *Catalog) TargetForMembers(slots []string) (Target, bool) {
	set := uniqueSorted(slots)
	items := make([]item, len(set))
	for i, s := range set {
		items[i] = item{Value: s}
	}
	id, ok := c.byMembers[memberSetKey(items)]
	if !ok {
		return Target{}, false
	}
	return c.Target(id)
}

// Slot returns the registered slot with id.
func (c *Catalog) Slot(id string) (Slot, bool) {
	s, ok := c.slots[id]
	return s.clone(), ok
}

// Slots returns every registered slot, sorted by id.
func (c *Catalog) Slots() []Slot {
	out := make([]Slot, len(c.slotIDs))
	for i, id := range c.slotIDs {
		out[i] = c.slots[id].clone()
	}
	return out
}

// CompositionRules returns the composition rules, sorted by id.
func (c *Catalog) CompositionRules() []CompositionRule {
	out := make([]CompositionRule, len(c.rules))
	for i, r := range c.rules {
		out[i] = r.clone()
	}
	return out
}

// ArtifactProvider returns the registered artifact provider with id.
func (c *Catalog) ArtifactProvider(id string) (ArtifactProvider, bool) {
	for _, p := range c.providers {
		if p.ID == id {
			return p.clone(), true
		}
	}
	return ArtifactProvider{}, false
}

// ArtifactProviders returns the artifact-provider registry, sorted by id.
func (c *Catalog) ArtifactProviders() []ArtifactProvider {
	out := make([]ArtifactProvider, len(c.providers))
	for i, p := range c.providers {
		out[i] = p.clone()
	}
	return out
}

// FeatureVocabulary returns every feature the catalog knows, sorted.
func (c *Catalog) FeatureVocabulary() []string { return slices.Clone(c.vocabulary) }

// ObservedOnlyFeatures returns the features no target may admit, sorted.
func (c *Catalog) ObservedOnlyFeatures() []string { return slices.Clone(c.observedOnly) }

// DisplacementClosure returns every target id transitively displaced by
// id, sorted.
func (c *Catalog) DisplacementClosure(id string) []string { return sortedKeys(c.displaceClosure[id]) }

// RequiresClosure returns every target id transitively required by id,
// sorted.
func (c *Catalog) RequiresClosure(id string) []string { return sortedKeys(c.requiresClosure[id]) }

func uniqueSorted(xs []string) []string {
	out := slices.Clone(xs)
	slices.Sort(out)
	return slices.Compact(out)
}
