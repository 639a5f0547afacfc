package stack

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
)

// stripRanges drops source positions so decoded files compare by content.
func stripRanges(f *File) *File {
	g := f.Clone()
	g.Filename, g.CatalogRange, g.DeclRange = "", hcl.Range{}, hcl.Range{}
	g.Substrate.Ranges, g.Substrate.DeclRange = nil, hcl.Range{}
	if g.Arena != nil {
		g.Arena.Ranges, g.Arena.DeclRange = nil, hcl.Range{}
	}
	for i := range g.Contributions {
		c := &g.Contributions[i]
		c.Ranges, c.DeclRange, c.LabelRange = nil, hcl.Range{}, hcl.Range{}
	}
	sortContributions(g.Contributions)
	return g
}

func TestFormatRoundTrips(t *testing.T) {
	for _, name := range []string{"evaluation.hcl", "release.hcl", "reference.hcl"} {
		t.Run(name, func(t *testing.T) {
			f, _, diags := Load(filepath.Join("testdata/valid", name))
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			out := Format(f, "Planned stack.\nSecond line.")
			if !strings.HasPrefix(string(out), "# Planned stack.\n# Second line.\nstack \""+f.Name+"\" {\n") {
				t.Errorf("formatted file starts %q", out[:60])
			}
			g, diags := Parse("formatted.hcl", out)
			if diags.HasErrors() {
				t.Fatalf("formatted file does not parse: %v\n%s", diags, out)
			}
			if a, b := stripRanges(f), stripRanges(g); !reflect.DeepEqual(a, b) {
				t.Errorf("round trip changed the stack:\n%+v\n%+v\n%s", a, b, out)
			}
			if again := Format(g, "Planned stack.\nSecond line."); string(again) != string(out) {
				t.Errorf("formatting is not stable:\n%s\n---\n%s", out, again)
			}
		})
	}
}

func TestWithContribution(t *testing.T) {
	f, _, diags := Load("testdata/valid/evaluation.hcl")
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	g := f.WithContribution(Contribution{TargetID: "collective.moe_epilogue.v1", Kind: ProposalKind, Source: "//k/epi", AttributionDigest: dg("5")},
		[]string{"norm.rmsnorm"})
	if got := strings.Join(g.Targets(), ","); got != "activation.silu_and_mul,collective.moe_epilogue.v1" {
		t.Errorf("targets = %s", got)
	}
	if got := strings.Join(f.Targets(), ","); got != "activation.silu_and_mul,norm.rmsnorm" {
		t.Errorf("receiver changed: %s", got)
	}
}

func TestSourcesExplicitMode(t *testing.T) {
	f, _, diags := Load("testdata/valid/evaluation.hcl")
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	rms, _ := ParseLabel("//kernels/contributions:rmsnorm_triton")
	other, _ := ParseLabel("//kernels/contributions:other")
	s := Sources{Contributions: map[Label]string{rms: "/x/rms", other: "/x/other"}}
	err := s.Check(f)
	for _, want := range []string{
		`evaluation.hcl:26,26-43: contribution "activation.silu_and_mul" has the path source "../bundles/silu"`,
		"--contribution //kernels/contributions:other=...: testdata/valid/evaluation.hcl names no contribution",
		"pass --catalog FILE",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Check = %v\nwant it to contain %q", err, want)
		}
	}

	r, _, _ := Load("testdata/valid/release.hcl")
	s = Sources{Catalog: "cat.hcl", Contributions: map[Label]string{}}
	err = s.Check(r)
	want := "names //kernels/contributions:silu_and_mul_triton but no directory was given for it: pass --contribution //kernels/contributions:silu_and_mul_triton=DIR (in Bazel, add //kernels/contributions:silu_and_mul_triton to the stack rule's contributions)"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Check = %v\nwant it to contain %q", err, want)
	}
	silu, _ := ParseLabel("//kernels/contributions:silu_and_mul_triton")
	s.Contributions[silu] = "/given/silu"
	if err := s.Check(r); err != nil {
		t.Fatalf("Check of complete sources: %v", err)
	}
	c, _ := r.Entry("activation.silu_and_mul")
	if dir, err := s.ContributionDir(r, c); err != nil || dir != "/given/silu" {
		t.Errorf("ContributionDir = %q, %v", dir, err)
	}
	if p, err := s.CatalogPath(r); err != nil || p != "cat.hcl" {
		t.Errorf("CatalogPath = %q, %v", p, err)
	}
}

func TestSourcesWorkspaceMode(t *testing.T) {
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "MODULE.bazel"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	stacks := filepath.Join(ws, "stacks")
	os.MkdirAll(stacks, 0o755)
	src, _ := os.ReadFile("testdata/valid/evaluation.hcl")
	path := filepath.Join(stacks, "incumbent.hcl")
	os.WriteFile(path, src, 0o644)
	f, _, diags := Load(path)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	var s Sources
	if p, err := s.CatalogPath(f); err != nil || p != filepath.Join(ws, "catalog", "targets.hcl") {
		t.Errorf("CatalogPath = %q, %v", p, err)
	}
	rms, _ := f.Entry("norm.rmsnorm")
	if d, err := s.ContributionDir(f, rms); err != nil || d != filepath.Join(ws, "kernels/contributions/rmsnorm_triton") {
		t.Errorf("label dir = %q, %v", d, err)
	}
	silu, _ := f.Entry("activation.silu_and_mul")
	if d, err := s.ContributionDir(f, silu); err != nil || d != filepath.Join(ws, "bundles", "silu") {
		t.Errorf("path dir = %q, %v", d, err)
	}
	if err := s.Check(f); err != nil {
		t.Errorf("Check in workspace mode: %v", err)
	}
}

func TestParseContributionFlag(t *testing.T) {
	l, dir, err := ParseContributionFlag("//kernels/contributions:x=bazel-out/k8/bin/x")
	if err != nil || l.Short() != "//kernels/contributions:x" || dir != "bazel-out/k8/bin/x" {
		t.Errorf("got %v %q %v", l, dir, err)
	}
	for _, bad := range []string{"//x", "=dir", "//k/x=dir", "//k:a/b=dir", "k/x=dir"} {
		if _, _, err := ParseContributionFlag(bad); err == nil {
			t.Errorf("ParseContributionFlag(%q) accepted", bad)
		}
	}
}
