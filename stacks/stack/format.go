package stack

import (
	"bytes"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"
)

// Format renders f as a stack file in canonical layout: the header
// attributes, substrate, arena, then one contribution block per target in
// target order. comment, when not empty, becomes a leading "#" comment.
// Formatting never changes an identity: identities are digests of the
// manifest, not of HCL bytes.
func Format(f *File, comment string) []byte {
	out := hclwrite.NewEmptyFile()
	body := out.Body()
	sb := body.AppendNewBlock("stack", []string{f.Name}).Body()
	sb.SetAttributeValue("kind", cty.StringVal(string(f.Kind)))
	sb.SetAttributeValue("catalog", cty.StringVal(f.Catalog))

	sb.AppendNewline()
	sub := sb.AppendNewBlock("substrate", nil).Body()
	s := f.Substrate
	setString(sub, "name", s.Name)
	setOptional(sub, "version", s.Version)
	setOptional(sub, "upstream_repository", s.UpstreamRepository)
	setOptional(sub, "upstream_revision", s.UpstreamRevision)
	setOptional(sub, "source", s.Source)
	setString(sub, "base_engine_digest", s.BaseEngineDigest.String())
	setString(sub, "runtime_digest", s.RuntimeDigest.String())

	if f.Arena != nil {
		sb.AppendNewline()
		ab := sb.AppendNewBlock("arena", nil).Body()
		setOptional(ab, "name", f.Arena.Name)
		setString(ab, "digest", f.Arena.Digest.String())
	}

	contribs := append([]Contribution(nil), f.Contributions...)
	sortContributions(contribs)
	for _, c := range contribs {
		sb.AppendNewline()
		cb := sb.AppendNewBlock("contribution", []string{c.TargetID}).Body()
		defaultKind := ProposalKind
		if f.Kind == Release {
			defaultKind = IntegratedKind
		}
		if c.Kind != defaultKind {
			setString(cb, "kind", c.Kind)
		}
		setString(cb, "source", c.Source)
		setString(cb, "attribution_digest", c.AttributionDigest.String())
		setOptional(cb, "artifact_digest", c.ArtifactDigest.String())
		setOptional(cb, "integrated_source_tree_digest", c.IntegratedSourceTreeDigest.String())
		setOptional(cb, "integration_record_digest", c.IntegrationRecordDigest.String())
	}

	var buf bytes.Buffer
	if comment != "" {
		for _, line := range strings.Split(strings.TrimRight(comment, "\n"), "\n") {
			buf.WriteString(strings.TrimRight("# "+line, " ") + "\n")
		}
	}
	buf.Write(hclwrite.Format(out.Bytes()))
	return buf.Bytes()
}

func sortContributions(cs []Contribution) {
	sort.Slice(cs, func(i, j int) bool { return cs[i].TargetID < cs[j].TargetID })
}

func setString(b *hclwrite.Body, name, v string) { b.SetAttributeValue(name, cty.StringVal(v)) }

func setOptional(b *hclwrite.Body, name, v string) {
	if v != "" {
		setString(b, name, v)
	}
}

// Clone returns a deep copy of f, so that a planner can derive a candidate
// file without touching the incumbent's.
func (f *File) Clone() *File {
	g := *f
	if f.Arena != nil {
		a := *f.Arena
		g.Arena = &a
	}
	g.Contributions = append([]Contribution(nil), f.Contributions...)
	return &g
}

// WithContribution returns a copy of f with c active at its target and
// the targets in remove dropped, as a planned transition changes it.
func (f *File) WithContribution(c Contribution, remove []string) *File {
	g := f.Clone()
	drop := map[string]bool{c.TargetID: true}
	for _, id := range remove {
		drop[id] = true
	}
	kept := g.Contributions[:0]
	for _, e := range g.Contributions {
		if !drop[e.TargetID] {
			kept = append(kept, e)
		}
	}
	c.Ranges, c.DeclRange, c.LabelRange = nil, hcl.Range{}, hcl.Range{}
	g.Contributions = append(kept, c)
	sortContributions(g.Contributions)
	return g
}
