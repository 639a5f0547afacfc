package build_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cacheon/engine/release/build"
	fixture "github.com/cacheon/engine/release/releasetest"
)

// A release built from its inputs given as bytes, trees included (as a
// rebuild hands them over), is the release built from the same files on
// disk, digest for digest, and the paths are then not read at all.
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
		Substrate:       held(t, in.Substrate),
		EngineTree:      held(t, in.EngineTree),
	}
	gone := filepath.Join(t.TempDir(), "absent")
	in.ReleaseManifest, in.Reviews, in.ModelReceipt, in.Entrypoint = gone, []string{gone}, gone, gone
	in.Substrate, in.EngineTree = gone, gone
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

// held reads the tree at root into memory, executable bits included.
func held(t *testing.T, root string) []build.HeldFile {
	t.Helper()
	var out []build.HeldFile
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		out = append(out, build.HeldFile{Path: filepath.ToSlash(rel), Data: data, Executable: info.Mode()&0o111 != 0})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A held engine tree is checked as one on disk: a changed byte, or the
// tree of another stack, is refused and nothing is written.
func TestBuildRefusesAChangedHeldTree(t *testing.T) {
	r := fixture.New(t)
	tests := []struct {
		name string
		edit func([]build.HeldFile)
	}{
		{"a byte of a tree file", func(fs []build.HeldFile) {
			for i := range fs {
				if strings.HasSuffix(fs[i].Path, ".py") && len(fs[i].Data) > 0 {
					fs[i].Data = append([]byte{fs[i].Data[0] ^ 1}, fs[i].Data[1:]...)
					return
				}
			}
			t.Fatal("no Python file in the fixture tree")
		}},
		{"the tree metadata", func(fs []build.HeldFile) {
			for i := range fs {
				if strings.HasSuffix(fs[i].Path, ".json") && strings.Contains(fs[i].Path, "engine_tree") {
					fs[i].Data = append([]byte(" "), fs[i].Data...)
					return
				}
			}
			t.Fatal("no tree metadata in the fixture tree")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			in := r.Inputs(out)
			tree := held(t, in.EngineTree)
			tt.edit(tree)
			in.Files = &build.Files{
				ReleaseManifest: mustRead(t, in.ReleaseManifest), Reviews: [][]byte{mustRead(t, in.Reviews[0])},
				ModelReceipt: mustRead(t, in.ModelReceipt), Entrypoint: mustRead(t, in.Entrypoint), EngineTree: tree,
			}
			if _, err := build.Build(in, nil); err == nil || !strings.Contains(err.Error(), "engine tree") {
				t.Fatalf("Build = %v, want the engine tree refused", err)
			}
			if _, err := os.Lstat(out); !os.IsNotExist(err) {
				t.Fatalf("a refused build left %s", out)
			}
		})
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
