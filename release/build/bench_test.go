package build_test

import (
	"path/filepath"
	"testing"

	"github.com/cacheon/engine/release/build"
	fixture "github.com/cacheon/engine/release/releasetest"
)

// BenchmarkBuild builds the fixture release (one integrated contribution,
// the repository's substrate, a scratch base) into a new OCI layout: the
// engine-tree check, every layer, the SBOM and the provenance.
// bench/release.sh measures the whole pipeline on a 1 GiB base.
func BenchmarkBuild(b *testing.B) {
	r := fixture.New(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		out := filepath.Join(b.TempDir(), "release")
		if _, err := build.Build(r.Inputs(out), nil); err != nil {
			b.Fatal(err)
		}
	}
}
