package stack

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"

	"github.com/cacheon/engine/internal/hclload"
	"github.com/cacheon/engine/internal/identity"
)

// Kind says what a stack file declares.
type Kind string

const (
	// Evaluation is the market's hill-climb state: the incumbent every
	// candidate is measured against. It may hold unreviewed proposals.
	Evaluation Kind = "evaluation"
	// Release holds integrated (reviewed) source only and is what a
	// signed release ships.
	Release Kind = "release"
	// Reference is the pristine, candidate-free evaluation stack: no
	// contribution at all, so the engine runs stock code everywhere.
	Reference Kind = "reference"
)

// Contribution kinds, as in the contribution references they become.
const (
	ProposalKind   = "proposal"
	IntegratedKind = "integrated"
)

// File is a stack file as written: which substrate, arena and catalog it
// binds, and for each target the source of its active contribution.
// Identities derived from the sources (content hashes, selected payloads)
// are not part of a File; Assemble computes them.
type File struct {
	Filename      string
	Name          string
	Kind          Kind
	Catalog       string // a file label ("//catalog:targets.hcl") or a path relative to the stack file
	CatalogRange  hcl.Range
	Substrate     Substrate
	Arena         *Arena // nil for release stacks
	Contributions []Contribution
	DeclRange     hcl.Range
}

// Substrate is the engine the contributions are bound into. Production
// pins SGLang by version and upstream revision; the repository's own
// substrate is pinned by its source tree. Either way the stack identity
// carries only the two digests.
type Substrate struct {
	Name               string // "sglang", "cacheon-substrate", ...
	Version            string
	UpstreamRepository string
	UpstreamRevision   string          // 40-hex git commit, when pinned upstream
	Source             string          // label or path of the substrate source tree, when in this repository
	BaseEngineDigest   identity.Digest // identity of the engine source tree
	RuntimeDigest      identity.Digest // identity of the runtime (image, Python, libraries)
	Ranges             map[string]hcl.Range
	DeclRange          hcl.Range
}

// Arena is the deployment a candidate is measured in (model, workload,
// hardware), known to the stack by its digest.
type Arena struct {
	Name      string
	Digest    identity.Digest
	Ranges    map[string]hcl.Range
	DeclRange hcl.Range
}

// Contribution is one `contribution "<target>"` block: the active
// contribution at a target.
type Contribution struct {
	TargetID string
	Kind     string // ProposalKind or IntegratedKind
	// Source is a label of a bundle directory of this repository
	// ("//kernels/contributions:silu_and_mul_triton") or a path relative
	// to the stack file.
	Source                     string
	AttributionDigest          identity.Digest
	ArtifactDigest             identity.Digest // optional pin of a proposal's bundle content hash
	IntegratedSourceTreeDigest identity.Digest // optional pin of an integrated source tree
	IntegrationRecordDigest    identity.Digest // integrated only
	Ranges                     map[string]hcl.Range
	LabelRange                 hcl.Range
	DeclRange                  hcl.Range
}

// Range returns the source range of attribute name, or of the block when
// the attribute is absent, so checks after decoding can point at it.
func (c Contribution) Range(name string) hcl.Range {
	if r, ok := c.Ranges[name]; ok {
		return r
	}
	return c.DeclRange
}

// Entry returns the contribution for target, if the stack has one.
func (f *File) Entry(target string) (Contribution, bool) {
	for _, c := range f.Contributions {
		if c.TargetID == target {
			return c, true
		}
	}
	return Contribution{}, false
}

// Targets returns the targets with an active contribution, sorted.
func (f *File) Targets() []string {
	ids := make([]string, 0, len(f.Contributions))
	for _, c := range f.Contributions {
		ids = append(ids, c.TargetID)
	}
	sort.Strings(ids)
	return ids
}

var (
	namePattern     = regexp.MustCompile(`^[0-9A-Za-z._-]+$`)
	revisionPattern = regexp.MustCompile(`^[0-9a-f]{40}$`)
)

var fileSchema = &hcl.BodySchema{
	Blocks: []hcl.BlockHeaderSchema{{Type: "stack", LabelNames: []string{"name"}}},
}

var stackSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "kind", Required: true},
		{Name: "catalog", Required: true},
	},
	Blocks: []hcl.BlockHeaderSchema{
		{Type: "substrate"},
		{Type: "arena"},
		{Type: "contribution", LabelNames: []string{"target"}},
	},
}

var substrateSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "name", Required: true},
		{Name: "version"},
		{Name: "upstream_repository"},
		{Name: "upstream_revision"},
		{Name: "source"},
		{Name: "base_engine_digest", Required: true},
		{Name: "runtime_digest", Required: true},
	},
}

var arenaSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "name"},
		{Name: "digest", Required: true},
	},
}

var contributionSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "kind"},
		{Name: "source", Required: true},
		{Name: "attribution_digest", Required: true},
		{Name: "artifact_digest"},
		{Name: "integrated_source_tree_digest"},
		{Name: "integration_record_digest"},
	},
}

// Load reads and decodes the stack file at path. The returned parser holds
// the file's source so diagnostics can be rendered with snippets.
func Load(path string) (*File, *hclparse.Parser, hcl.Diagnostics) {
	p := hclparse.NewParser()
	src, err := hclload.ReadPath(path)
	if err != nil {
		return nil, p, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Cannot read stack file",
			Detail:   fmt.Sprintf("Reading %s failed: %v.", path, err),
		}}
	}
	f, diags := parseWith(p, path, src)
	return f, p, diags
}

// Parse decodes a stack file from src; filename names it in diagnostics.
func Parse(filename string, src []byte) (*File, hcl.Diagnostics) {
	return parseWith(hclparse.NewParser(), filename, src)
}

func parseWith(p *hclparse.Parser, filename string, src []byte) (*File, hcl.Diagnostics) {
	// hclsyntax has no nesting limit of its own: size and depth are
	// checked before it runs, the expressions before any is evaluated.
	if diags := hclload.Check(src, filename); diags.HasErrors() {
		return nil, diags
	}
	hf, diags := p.ParseHCL(src, filename)
	if diags.HasErrors() {
		return nil, diags
	}
	if d := hclload.CheckExpressions(hf.Body); d.HasErrors() {
		return nil, append(diags, d...)
	}
	content, d := hf.Body.Content(fileSchema)
	diags = append(diags, d...)
	blocks := content.Blocks.OfType("stack")
	if len(blocks) != 1 {
		rng := hf.Body.MissingItemRange()
		if len(blocks) > 1 {
			rng = blocks[1].DefRange
		}
		return nil, append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "One stack block required",
			Detail:   fmt.Sprintf("A stack file declares exactly one `stack \"<name>\" { ... }` block; found %d.", len(blocks)),
			Subject:  &rng,
		})
	}
	f, d := decodeStackBlock(blocks[0])
	f.Filename = filename
	diags = append(diags, d...)
	if diags.HasErrors() {
		return nil, diags
	}
	return f, diags
}

func decodeStackBlock(block *hcl.Block) (*File, hcl.Diagnostics) {
	f := &File{Name: block.Labels[0], DeclRange: block.DefRange}
	var diags hcl.Diagnostics
	if !namePattern.MatchString(f.Name) {
		diags = append(diags, errorAt(block.LabelRanges[0], "Invalid stack name",
			fmt.Sprintf("Stack name %q must match [0-9A-Za-z._-]+.", f.Name)))
	}
	content, d := block.Body.Content(stackSchema)
	diags = append(diags, d...)
	attrs := stringAttrs(content.Attributes, &diags)
	f.Kind = Kind(attrs["kind"])
	if _, decoded := attrs["kind"]; decoded {
		a := content.Attributes["kind"]
		switch f.Kind {
		case Evaluation, Release, Reference:
		default:
			diags = append(diags, errorAt(a.Expr.Range(), "Invalid stack kind",
				fmt.Sprintf("kind is %q; allowed: \"evaluation\" (the incumbent the market measures against), \"release\" (reviewed integrated source only) and \"reference\" (the pristine, candidate-free stack).", f.Kind)))
		}
	}
	f.Catalog = attrs["catalog"]
	if a, ok := content.Attributes["catalog"]; ok {
		f.CatalogRange = a.Expr.Range()
		if _, decoded := attrs["catalog"]; decoded && f.Catalog == "" {
			diags = append(diags, errorAt(f.CatalogRange, "Empty catalog", "catalog names the target catalog file, e.g. \"//catalog:targets.hcl\"."))
		}
	}

	subs := content.Blocks.OfType("substrate")
	if len(subs) != 1 {
		diags = append(diags, countError(block, subs, "substrate",
			"Every stack binds exactly one engine substrate: `substrate { name = ..., base_engine_digest = ..., runtime_digest = ... }`."))
	} else {
		f.Substrate, d = decodeSubstrateBlock(subs[0])
		diags = append(diags, d...)
	}

	arenas := content.Blocks.OfType("arena")
	validKind := f.Kind == Evaluation || f.Kind == Release || f.Kind == Reference
	switch {
	case !validKind:
		// Whether an arena belongs depends on the kind already reported.
	case f.Kind == Release && len(arenas) > 0:
		diags = append(diags, errorAt(arenas[0].DefRange, "Arena in a release stack",
			"A release stack is not tied to an arena: remove the arena block. Evaluation and reference stacks need one."))
	case f.Kind != Release && len(arenas) != 1:
		diags = append(diags, countError(block, arenas, "arena",
			fmt.Sprintf("A %s stack is measured in exactly one arena: `arena { digest = \"<64 hex>\" }`.", kindOrStack(f.Kind))))
	case len(arenas) == 1:
		a, d := decodeArenaBlock(arenas[0])
		f.Arena = &a
		diags = append(diags, d...)
	}

	seen := map[string]hcl.Range{}
	for _, b := range content.Blocks.OfType("contribution") {
		c, d := decodeContributionBlock(b, f.Kind)
		diags = append(diags, d...)
		if prev, dup := seen[c.TargetID]; dup {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Duplicate contribution",
				Detail:   fmt.Sprintf("Target %q already has an active contribution at %s; a stack holds at most one per target.", c.TargetID, prev),
				Subject:  &b.LabelRanges[0],
			})
			continue
		}
		seen[c.TargetID] = b.LabelRanges[0]
		f.Contributions = append(f.Contributions, c)
	}
	if f.Kind == Reference && len(f.Contributions) > 0 {
		diags = append(diags, errorAt(f.Contributions[0].DeclRange, "Contribution in a reference stack",
			"The reference stack is pristine: it runs stock code at every target. Remove every contribution block, or make this an evaluation stack."))
	}
	return f, diags
}

func kindOrStack(k Kind) string {
	if k == "" {
		return "stack"
	}
	return string(k)
}

func decodeSubstrateBlock(block *hcl.Block) (Substrate, hcl.Diagnostics) {
	s := Substrate{DeclRange: block.DefRange}
	var diags hcl.Diagnostics
	content, d := block.Body.Content(substrateSchema)
	diags = append(diags, d...)
	attrs := stringAttrs(content.Attributes, &diags)
	s.Ranges = ranges(content.Attributes)
	s.Name = attrs["name"]
	s.Version = attrs["version"]
	s.UpstreamRepository = attrs["upstream_repository"]
	s.UpstreamRevision = attrs["upstream_revision"]
	s.Source = attrs["source"]
	if a, ok := content.Attributes["name"]; ok && !namePattern.MatchString(s.Name) {
		diags = append(diags, errorAt(a.Expr.Range(), "Invalid substrate name", fmt.Sprintf("Substrate name %q must match [0-9A-Za-z._-]+ (e.g. \"sglang\").", s.Name)))
	}
	if a, ok := content.Attributes["upstream_revision"]; ok && !revisionPattern.MatchString(s.UpstreamRevision) {
		diags = append(diags, errorAt(a.Expr.Range(), "Invalid upstream revision", fmt.Sprintf("upstream_revision %q must be a full 40-character lowercase git commit.", s.UpstreamRevision)))
	}
	s.BaseEngineDigest = digestAttr(content.Attributes, attrs, "base_engine_digest", &diags)
	s.RuntimeDigest = digestAttr(content.Attributes, attrs, "runtime_digest", &diags)
	return s, diags
}

func decodeArenaBlock(block *hcl.Block) (Arena, hcl.Diagnostics) {
	a := Arena{DeclRange: block.DefRange}
	var diags hcl.Diagnostics
	content, d := block.Body.Content(arenaSchema)
	diags = append(diags, d...)
	attrs := stringAttrs(content.Attributes, &diags)
	a.Ranges = ranges(content.Attributes)
	a.Name = attrs["name"]
	a.Digest = digestAttr(content.Attributes, attrs, "digest", &diags)
	return a, diags
}

func decodeContributionBlock(block *hcl.Block, stackKind Kind) (Contribution, hcl.Diagnostics) {
	c := Contribution{TargetID: block.Labels[0], LabelRange: block.LabelRanges[0], DeclRange: block.DefRange}
	var diags hcl.Diagnostics
	if !namePattern.MatchString(c.TargetID) {
		diags = append(diags, errorAt(c.LabelRange, "Invalid target id", fmt.Sprintf("Target id %q must match [0-9A-Za-z._-]+.", c.TargetID)))
	}
	content, d := block.Body.Content(contributionSchema)
	diags = append(diags, d...)
	attrs := stringAttrs(content.Attributes, &diags)
	c.Ranges = ranges(content.Attributes)
	c.Kind = attrs["kind"]
	if c.Kind == "" {
		c.Kind = ProposalKind
		if stackKind == Release {
			c.Kind = IntegratedKind
		}
	}
	c.Source = attrs["source"]

	switch c.Kind {
	case ProposalKind:
		if stackKind == Release {
			diags = append(diags, errorAt(c.Range("kind"), "Proposal in a release stack",
				fmt.Sprintf("Target %q: a release stack ships reviewed source only; its contributions are kind = \"integrated\" with an integration_record_digest.", c.TargetID)))
		}
		forbid(content.Attributes, &diags, "proposal", "integrated_source_tree_digest", "integration_record_digest")
	case IntegratedKind:
		if _, ok := content.Attributes["integration_record_digest"]; !ok {
			diags = append(diags, errorAt(c.DeclRange, "Missing integration record digest",
				fmt.Sprintf("Target %q: an integrated contribution names the integration review record that admitted it: integration_record_digest = \"<64 hex>\".", c.TargetID)))
		}
		forbid(content.Attributes, &diags, "integrated", "artifact_digest")
	default:
		diags = append(diags, errorAt(c.Range("kind"), "Invalid contribution kind",
			fmt.Sprintf("kind is %q; allowed: \"proposal\" (a bundle as proposed) and \"integrated\" (reviewed source).", c.Kind)))
	}
	if src, ok := attrs["source"]; ok && strings.TrimSpace(src) == "" {
		diags = append(diags, errorAt(c.Range("source"), "Empty source", "source names the bundle directory: a label such as \"//kernels/contributions:silu_and_mul_triton\" or a path relative to the stack file."))
	}
	if IsLabel(c.Source) {
		if l, err := ParseLabel(c.Source); err != nil {
			diags = append(diags, errorAt(c.Range("source"), "Invalid source label", err.Error()+"."))
		} else if _, err := l.DirPath(); err != nil {
			diags = append(diags, errorAt(c.Range("source"), "Invalid source label", err.Error()+"."))
		}
	}
	c.AttributionDigest = digestAttr(content.Attributes, attrs, "attribution_digest", &diags)
	c.ArtifactDigest = digestAttr(content.Attributes, attrs, "artifact_digest", &diags)
	c.IntegratedSourceTreeDigest = digestAttr(content.Attributes, attrs, "integrated_source_tree_digest", &diags)
	c.IntegrationRecordDigest = digestAttr(content.Attributes, attrs, "integration_record_digest", &diags)
	return c, diags
}

func forbid(attrs hcl.Attributes, diags *hcl.Diagnostics, kind string, names ...string) {
	for _, n := range names {
		if a, ok := attrs[n]; ok {
			*diags = append(*diags, errorAt(a.NameRange, "Attribute not allowed here",
				fmt.Sprintf("%s applies to the other contribution kind, not to a %s contribution: remove it or change kind.", n, kind)))
		}
	}
}

// stringAttrs evaluates every attribute as a literal string. Stack files
// are data: variables and functions are not available.
func stringAttrs(attrs hcl.Attributes, diags *hcl.Diagnostics) map[string]string {
	out := make(map[string]string, len(attrs))
	for name, a := range attrs {
		v, d := a.Expr.Value(nil)
		if d.HasErrors() {
			*diags = append(*diags, d...)
			continue
		}
		if v.IsNull() || !v.IsKnown() || v.Type().FriendlyName() != "string" {
			*diags = append(*diags, errorAt(a.Expr.Range(), "String required",
				fmt.Sprintf("%s must be a quoted string; found %s.", name, v.Type().FriendlyName())))
			continue
		}
		out[name] = v.AsString()
	}
	return out
}

func ranges(attrs hcl.Attributes) map[string]hcl.Range {
	out := make(map[string]hcl.Range, len(attrs))
	for name, a := range attrs {
		out[name] = a.Expr.Range()
	}
	return out
}

// digestAttr parses digest attribute name, whose string value stringAttrs
// has read into values. An absent attribute, or one stringAttrs already
// reported, is the zero Digest; an invalid digest is a diagnostic at the
// value's range and the zero Digest.
func digestAttr(attrs hcl.Attributes, values map[string]string, name string, diags *hcl.Diagnostics) identity.Digest {
	a, ok := attrs[name]
	v, read := values[name]
	if !ok || !read {
		return identity.Digest{}
	}
	d, err := identity.ParseField(name, v, false)
	if err != nil {
		*diags = append(*diags, errorAt(a.Expr.Range(), "Invalid digest", err.Error()+"."))
	}
	return d
}

func countError(parent *hcl.Block, found hcl.Blocks, typ, detail string) *hcl.Diagnostic {
	rng := parent.DefRange
	summary := "Missing " + typ + " block"
	if len(found) > 1 {
		rng = found[1].DefRange
		summary = "Duplicate " + typ + " block"
	}
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: detail, Subject: &rng}
}

func errorAt(rng hcl.Range, summary, detail string) *hcl.Diagnostic {
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: detail, Subject: &rng}
}
