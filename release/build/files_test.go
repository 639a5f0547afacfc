package build_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/cacheon/engine/release/build"
	fixture "github.com/cacheon/engine/release/releasetest"
)

// A release built from its file inputs given as bytes (as a rebuild
// hands them over) is the release built from the same files on disk,
// digest for digest, and the paths are then not read at all.
func TestBuildFromFileBytesIsBuildFromPaths(t *testing.T) {
	r := fixture.New(t)
	fromPaths, err := build.Build(r.Inputs(filepath.Join(t.TempDir(), "paths")), nil)
	if err != nil {
		t.Fatal(err)
	}
	read := func(p string) []byte {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	in := r.Inputs(filepath.Join(t.TempDir(), "bytes"))
	in.Files = &build.Files{
		ReleaseManifest: read(in.ReleaseManifest),
		Reviews:         [][]byte{read(in.Reviews[0])},
		ModelReceipt:    read(in.ModelReceipt),
		Entrypoint:      read(in.Entrypoint),
	}
	gone := filepath.Join(t.TempDir(), "absent")
	in.ReleaseManifest, in.Reviews, in.ModelReceipt, in.Entrypoint = gone, []string{gone}, gone, gone
	fromBytes, err := build.Build(in, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, paths, bytes string }{
		{"image", fromPaths.ImageDigest, fromBytes.ImageDigest},
		{"descriptor", fromPaths.DescriptorDigest, fromBytes.DescriptorDigest},
		{"sbom", fromPaths.SBOMDigest, fromBytes.SBOMDigest},
		{"provenance", fromPaths.ProvenanceDigest, fromBytes.ProvenanceDigest},
	} {
		if c.paths != c.bytes {
			t.Errorf("%s digest from bytes %s, from paths %s", c.name, c.bytes, c.paths)
		}
	}
}
