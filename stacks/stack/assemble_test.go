package stack

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/cacheon/engine/catalog"
	"github.com/cacheon/engine/kernels/bundle"
	"github.com/cacheon/engine/kernels/contribution"
	"github.com/cacheon/engine/kernels/pyclosure"
)

// opsSources is the import closure of bundles whose op sources import
// nothing bundle-local, as every example bundle's.
func opsSources(_ *bundle.Bundle, sources []string) (*pyclosure.Closure, error) {
	set := map[string]bool{}
	var paths []string
	for _, s := range sources {
		if !set[s] {
			set[s] = true
			paths = append(paths, s)
		}
	}
	sort.Strings(paths)
	c := &pyclosure.Closure{}
	for _, p := range paths {
		c.Files = append(c.Files, &pyclosure.File{Path: p})
	}
	return c, nil
}

// repoStack writes src as a stack file in a temporary directory; its
// labels resolve against the workspace the test names.
func repoStack(t *testing.T, src string) *File {
	t.Helper()
	p := filepath.Join(t.TempDir(), "s.hcl")
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	f, _, diags := Load(p)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	return f
}

func TestAssemble(t *testing.T) {
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	repo := repoCopy(t, "kernels/contributions", "kernels/fixtures")
	payload := contribution.PayloadOptions{Closure: opsSources}
	header := `stack "s" {
  kind    = "evaluation"
  catalog = "//catalog:targets.hcl"
  substrate {
    name               = "cacheon-substrate"
    base_engine_digest = "` + d64("2") + `"
    runtime_digest     = "` + d64("1") + `"
  }
  arena {
    digest = "` + d64("3") + `"
  }
`
	entry := func(target, src, extra string) string {
		return "  contribution \"" + target + "\" {\n    source = \"" + src + "\"\n    attribution_digest = \"" + d64("4") + "\"\n" + extra + "  }\n"
	}
	silu := "//kernels/contributions:silu_and_mul_triton"
	rms := "//kernels/contributions:rmsnorm_triton"

	t.Run("two entries", func(t *testing.T) {
		f := repoStack(t, header+entry("activation.silu_and_mul", silu, "")+entry("norm.rmsnorm", rms, "")+"}\n")
		a, err := Assemble(f, Sources{Workspace: repo}, cat, payload)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(a.Manifest.TargetIDs(), ","); got != "activation.silu_and_mul,norm.rmsnorm" {
			t.Errorf("targets %s", got)
		}
		if a.Dirs["norm.rmsnorm"] != filepath.Join(repo, "kernels", "contributions", "rmsnorm_triton") {
			t.Errorf("dirs %v", a.Dirs)
		}
		// The identity is the manifest's, whatever the file looks like:
		// the same entries reordered and reformatted give the same digest.
		g := repoStack(t, header+entry("norm.rmsnorm", rms, "")+entry("activation.silu_and_mul", silu, "")+"}\n")
		b, err := Assemble(g, Sources{Workspace: repo}, cat, payload)
		if err != nil {
			t.Fatal(err)
		}
		d1, _ := a.Manifest.Digest()
		d2, _ := b.Manifest.Digest()
		if d1 != d2 {
			t.Errorf("reordering entries changed the digest")
		}
	})

	tests := []struct {
		name, body string
		rule, want string
	}{
		{"unknown target", entry("norm.rmsnrom", rms, ""), RuleUnknownTarget, `did you mean "norm.rmsnorm"?`},
		{"wrong target", entry("norm.rmsnorm", silu, ""), RuleTargetBinding, `resolves to target "activation.silu_and_mul", not "norm.rmsnorm"`},
		{"pinned artifact changed", entry("norm.rmsnorm", rms, "    artifact_digest = \""+d64("5")+"\"\n"), RulePinMismatch, "update artifact_digest"},
		{"missing bundle", entry("norm.rmsnorm", "//kernels/contributions:gone", ""), RuleSourceMissing, "gone"},
		{"feature not allowed", entry("activation.silu_and_mul", "//kernels/fixtures:feature_not_allowed", ""), RuleInspection + "/resolve", "op_extra:fast_path"},
		{"displacing pair", entry("collective.moe_epilogue.v1", "//kernels/contributions:moe_epilogue_atomic_torch", "") + entry("collective.moe_epilogue.v1x", rms, ""), RuleUnknownTarget, "did you mean"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := repoStack(t, header+tt.body+"}\n")
			_, err := Assemble(f, Sources{Workspace: repo}, cat, payload)
			var ae *AssemblyError
			if !errors.As(err, &ae) {
				t.Fatalf("Assemble = %v, want an AssemblyError", err)
			}
			found := false
			for _, p := range ae.Problems {
				if p.Rule == tt.rule && strings.Contains(p.Message, tt.want) && p.Range.Filename == f.Filename && p.Range.Start.Line > 0 {
					found = true
				}
			}
			if !found {
				t.Errorf("problems %v, want rule %s mentioning %q with a source range", ae.Problems, tt.rule, tt.want)
			}
		})
	}
}
