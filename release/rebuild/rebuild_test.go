package rebuild_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cacheon/engine/release/build"
	"github.com/cacheon/engine/release/descriptor"
	"github.com/cacheon/engine/release/key"
	"github.com/cacheon/engine/release/publish"
	"github.com/cacheon/engine/release/rebuild"
	"github.com/cacheon/engine/release/registrytest"
	fixture "github.com/cacheon/engine/release/releasetest"
	"github.com/cacheon/engine/release/sign"
	"github.com/cacheon/engine/release/store"
	"github.com/cacheon/engine/release/store/remote"
)

func signed(t *testing.T, r *fixture.Release, plan func(*build.Plan)) *store.Layout {
	t.Helper()
	out := filepath.Join(t.TempDir(), "release")
	p, err := build.Prepare(r.Inputs(out), nil)
	if err != nil {
		t.Fatal(err)
	}
	if plan != nil {
		plan(p)
	}
	if _, err := p.Write(out, nil); err != nil {
		t.Fatal(err)
	}
	l, _ := store.OpenLayout(out)
	if _, err := sign.Release(l, r.Signer); err != nil {
		t.Fatal(err)
	}
	return l
}

func policy(t *testing.T, r *fixture.Release) *key.Policy {
	p, err := key.LoadPolicy(r.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRebuildReproducesTheRelease(t *testing.T) {
	r := fixture.New(t)
	l := signed(t, r, nil)
	for _, withSources := range []bool{false, true} {
		opts := rebuild.Options{Policy: policy(t, r)}
		if withSources {
			opts.SourceRepo = r.Repo
		}
		res, err := rebuild.Run(l, opts)
		if err != nil {
			t.Fatalf("rebuild (sources %v): %v", withSources, err)
		}
		if !res.Match || !res.SBOMMatch || !res.ProvenanceMatch || res.Rematerialized != withSources {
			t.Errorf("result %+v", res)
		}
	}
}

// With only the registry reachable (and the reviewed source's git
// repository), a consumer verifies and rebuilds the release bit for bit.
func TestRebuildFromTheRegistryAlone(t *testing.T) {
	reg := registrytest.Start(t)
	r := fixture.New(t)
	l := signed(t, r, nil)
	target, _ := remote.Open(reg.Host+"/cacheon/engine:1.0", false)
	if _, err := publish.Layout(l, target, nil); err != nil {
		t.Fatal(err)
	}
	src, _ := remote.Open(reg.Host+"/cacheon/engine:1.0", false)
	res, err := rebuild.Run(src, rebuild.Options{Policy: policy(t, r), SourceRepo: r.Repo, SourcePaths: map[string]string{fixture.Target: r.SourcePath}})
	if err != nil {
		t.Fatalf("rebuild from the registry: %v", err)
	}
	if !res.Match || !res.Rematerialized {
		t.Errorf("result %+v", res)
	}
}

// A release whose engine tree is not what its reviewed source
// materializes to passes verification (every digest is consistent and
// signed) but not a rebuild, which names the file.
func TestRebuildCatchesATreeThatIsNotTheReviewedSource(t *testing.T) {
	r := fixture.New(t)
	// A builder that swaps a kernel and rewrites the tree metadata to
	// match: every digest it signs is consistent.
	l := signed(t, r, func(p *build.Plan) { swapKernel(t, p) })
	if _, err := rebuild.Run(l, rebuild.Options{Policy: policy(t, r)}); err != nil {
		t.Fatalf("without the reviewed source the image itself rebuilds: %v", err)
	}
	res, err := rebuild.Run(l, rebuild.Options{Policy: policy(t, r), SourceRepo: r.Repo})
	var m *rebuild.Mismatch
	if !errors.As(err, &m) || !strings.Contains(res.FirstDifference, "kernels/silu_and_mul.py") {
		t.Fatalf("err = %v, first difference %q", err, res.FirstDifference)
	}
}

func TestRebuildRefusesAnotherToolchain(t *testing.T) {
	r := fixture.New(t)
	l := signed(t, r, func(p *build.Plan) { p.Descriptor.Toolchain.GoVersion = "go1.25.9" })
	_, err := rebuild.Run(l, rebuild.Options{Policy: policy(t, r)})
	if !errors.Is(err, rebuild.ErrToolchain) || !strings.Contains(err.Error(), "go1.25.9") {
		t.Fatalf("err = %v", err)
	}
	res, err := rebuild.Run(l, rebuild.Options{Policy: policy(t, r), AllowToolchainMismatch: true})
	var m *rebuild.Mismatch
	if !errors.As(err, &m) || !strings.Contains(res.FirstDifference, descriptor.DescriptorPath) {
		t.Fatalf("err = %v, first difference %q", err, res.FirstDifference)
	}
}
