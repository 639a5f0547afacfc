package stack

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/cacheon/engine/catalog"
	"github.com/cacheon/engine/internal/identity"
	"github.com/cacheon/engine/kernels/contribution"
)

// The repository's own stacks parse, assemble against the repository's
// catalog and bundles, and pin the descriptor digests they say they pin.
func TestRepositoryStacks(t *testing.T) {
	repo := repoCopy(t, "catalog/targets.hcl", "stacks", "kernels/contributions")
	src, err := os.ReadFile(filepath.Join(repo, "catalog", "targets.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	cat, diags := catalog.Parse(src, "catalog/targets.hcl")
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	descriptor := func(domain identity.Domain, name string) identity.Digest {
		b, err := os.ReadFile(filepath.Join(repo, "stacks", name))
		if err != nil {
			t.Fatal(err)
		}
		d, err := identity.H(domain, json.RawMessage(b))
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	substrate := descriptor(identity.DomainSubstrateBaseEngine, "substrate.json")
	runtime := descriptor(identity.DomainSubstrateRuntime, "runtime.json")
	arena := descriptor(identity.DomainArenaDescriptor, "arena.json")

	want := map[string]struct {
		kind    Kind
		targets int
	}{"incumbent.hcl": {Evaluation, 2}, "reference.hcl": {Reference, 0}, "release.hcl": {Release, 0}}
	for name, w := range want {
		t.Run(name, func(t *testing.T) {
			f, _, diags := Load(filepath.Join(repo, "stacks", name))
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			if f.Kind != w.kind || len(f.Contributions) != w.targets {
				t.Errorf("kind %s with %d contributions, want %s with %d", f.Kind, len(f.Contributions), w.kind, w.targets)
			}
			if f.Substrate.BaseEngineDigest != substrate || f.Substrate.RuntimeDigest != runtime {
				t.Errorf("substrate digests %s/%s, descriptors give %s/%s", f.Substrate.BaseEngineDigest, f.Substrate.RuntimeDigest, substrate, runtime)
			}
			if f.Arena != nil && f.Arena.Digest != arena {
				t.Errorf("arena digest %s, descriptor gives %s", f.Arena.Digest, arena)
			}
			a, err := Assemble(f, Sources{Workspace: repo}, cat, contribution.PayloadOptions{Closure: contribution.PythonClosure})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := a.Manifest.Digest(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
