package contribution

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/cacheon/engine/internal/identity"
	"github.com/cacheon/engine/kernels/bundle"
)

// TestSnapshotIdentitiesEqualTheDirectoryPath derives every identity of
// each example bundle and fixture twice: from one bundle.Open snapshot,
// and by the directory functions that read the disk (content hashes,
// LoadBundle, the integrated source tree digest, a selected payload whose
// closure reads through DirFS and whose files are hashed from disk). A
// bundle the limits refuse must be refused the same way by both.
func TestSnapshotIdentitiesEqualTheDirectoryPath(t *testing.T) {
	opts := testOptions(t)
	for _, tree := range []string{"kernels/contributions", "kernels/fixtures"} {
		root := repoPath(t, tree)
		entries, err := os.ReadDir(root)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if !e.IsDir() {
				continue
			}
			dir := filepath.Join(root, e.Name())
			t.Run(tree+"/"+e.Name(), func(t *testing.T) {
				fromDisk, diskErr := bundle.LoadBundle(dir)
				s, err := bundle.Open(dir)
				if err != nil {
					if diskErr == nil || err.Error() != diskErr.Error() {
						t.Fatalf("Open = %v, LoadBundle = %v", err, diskErr)
					}
					return
				}
				b, err := s.Bundle()
				if (err == nil) != (diskErr == nil) || (err != nil && err.Error() != diskErr.Error()) {
					t.Fatalf("snapshot load = %v, LoadBundle = %v", err, diskErr)
				}
				if err != nil {
					return
				}
				b.Snapshot = nil
				if !reflect.DeepEqual(b, fromDisk) {
					t.Errorf("snapshot bundle differs from LoadBundle")
				}
				b.Snapshot = s
				for _, c := range []struct {
					committed bool
					old       func(string) (identity.Digest, error)
				}{{false, bundle.ContentHash}, {true, bundle.CommittedContentHash}} {
					want, werr := c.old(dir)
					got, gerr := s.ContentHash(c.committed)
					if got != want || (werr == nil) != (gerr == nil) {
						t.Errorf("content hash (committed %v): snapshot %s (%v), directory %s (%v)", c.committed, got, gerr, want, werr)
					}
				}
				want, werr := IntegratedSourceTreeDigest(dir)
				got, gerr := SnapshotSourceTreeDigest(s)
				if got != want || (werr == nil) != (gerr == nil) {
					t.Errorf("source tree digest: snapshot %s (%v), directory %s (%v)", got, gerr, want, werr)
				}
				if len(b.TreeViolations()) > 0 {
					return
				}
				wantP, werr := ComputeSelectedPayload(fromDisk, opts.Payload)
				gotP, gerr := ComputeSelectedPayload(b, opts.Payload)
				if (werr == nil) != (gerr == nil) || (werr != nil && werr.Error() != gerr.Error()) {
					t.Fatalf("selected payload: snapshot error %v, directory error %v", gerr, werr)
				}
				if werr != nil {
					return
				}
				wd, _ := wantP.Digest()
				gd, _ := gotP.Digest()
				if gd != wd {
					t.Errorf("selected payload digest: snapshot %s, directory %s", gd, wd)
				}
				if !reflect.DeepEqual(gotP.Closure, wantP.Closure) {
					t.Errorf("snapshot closure differs from the directory closure")
				}
			})
		}
	}
}

// TestInspectReadsTheSourceOnce edits a bundle after Open: the inspection
// of the snapshot still derives the identities of the bytes Open read.
func TestInspectReadsTheSourceOnce(t *testing.T) {
	dir := repoPath(t, "kernels/contributions/silu_and_mul_triton")
	before, err := Inspect(dir, testOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	s, err := bundle.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "README.md", "edited after the snapshot\n")
	if err := os.Remove(filepath.Join(dir, "manifest.toml")); err != nil {
		t.Fatal(err)
	}
	in, err := InspectSnapshot(s, testOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	if in.ContentHash != before.ContentHash || in.SelectedPayloadDigest != before.SelectedPayloadDigest || in.SelectedDeltaDigest != before.SelectedDeltaDigest {
		t.Errorf("snapshot inspection %s/%s/%s, want %s/%s/%s", in.ContentHash, in.SelectedPayloadDigest, in.SelectedDeltaDigest,
			before.ContentHash, before.SelectedPayloadDigest, before.SelectedDeltaDigest)
	}
	if _, err := Inspect(dir, testOptions(t)); !errors.Is(err, bundle.ErrNoManifest) {
		t.Errorf("Inspect of the edited directory = %v, want no manifest", err)
	}
}
