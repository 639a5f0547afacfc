package build

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/cacheon/engine/release/review"
	"github.com/cacheon/engine/stacks/materialize"
	"github.com/cacheon/engine/stacks/stack"
	"github.com/cacheon/engine/tools/atomicwrite"
)

// ReadReviews reads integration review record files.
func ReadReviews(paths []string) ([]*review.Record, [][]byte, error) {
	var raws [][]byte
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, nil, fmt.Errorf("read review record: %w", err)
		}
		raws = append(raws, b)
	}
	return parseReviews(paths, raws)
}

// parseReviews parses review records, named in messages by names (their
// files) or by their position when there are none, and returns them with
// their canonical encodings.
func parseReviews(names []string, raws [][]byte) ([]*review.Record, [][]byte, error) {
	var recs []*review.Record
	var canons [][]byte
	for i, b := range raws {
		name := fmt.Sprintf("#%d", i+1)
		if i < len(names) {
			name = names[i]
		}
		r, err := review.Parse(b)
		if err != nil {
			return nil, nil, fmt.Errorf("review record %s: %w", name, err)
		}
		canon, _ := r.Marshal()
		recs = append(recs, r)
		canons = append(canons, canon)
	}
	return recs, canons, nil
}

// EngineTree is a materialized engine tree checked for a release.
type EngineTree struct {
	Dir    string
	Digest string
	Files  []atomicwrite.Written
}

// CheckEngineTree reopens the materialized tree at dir (it must have the
// published shape: files 0444, directories 0755, epoch times), computes
// its digest and checks that its metadata names the release stack and
// exactly its integrated entries.
func CheckEngineTree(dir string, m *stack.EngineReleaseManifest) (*EngineTree, error) {
	// The materializer's own reopen check: published shape, canonical
	// metadata, recomputed namespaces, inventory equal to the tree.
	// The check's inventory is the tree's: each file is read and hashed once.
	res, files, err := materialize.VerifyInventory(dir)
	if err != nil {
		return nil, fmt.Errorf("engine tree %s: %w", dir, err)
	}
	digest, err := materialize.TreeDigest(files)
	if err != nil {
		return nil, fmt.Errorf("engine tree %s: %w", dir, err)
	}
	if digest != res.TreeDigest {
		return nil, fmt.Errorf("engine tree %s: digest %s, the materializer's check gives %s", dir, digest, res.TreeDigest)
	}
	if err := CheckTreeMetadata(filepath.Join(dir, filepath.FromSlash(materialize.TreeMetadataName)), m); err != nil {
		return nil, err
	}
	return &EngineTree{Dir: dir, Digest: digest, Files: files}, nil
}

// CheckHeldEngineTree is CheckEngineTree of a tree held in memory (see
// materialize.VerifyHeld); the tree's Dir is empty.
func CheckHeldEngineTree(files []HeldFile, m *stack.EngineReleaseManifest) (*EngineTree, error) {
	held := memFiles(files)
	res, written, err := materialize.VerifyHeld(held)
	if err != nil {
		return nil, fmt.Errorf("engine tree: %w", err)
	}
	digest, err := materialize.TreeDigest(written)
	if err != nil {
		return nil, fmt.Errorf("engine tree: %w", err)
	}
	if digest != res.TreeDigest {
		return nil, fmt.Errorf("engine tree: digest %s, the materializer's check gives %s", digest, res.TreeDigest)
	}
	for _, f := range held {
		if f.Path == materialize.TreeMetadataName {
			if err := materialize.CheckReleaseStack(f.Path, f.Data, m); err != nil {
				return nil, err
			}
		}
	}
	return &EngineTree{Digest: digest, Files: written}, nil
}

// CheckTreeMetadata checks the tree metadata file at p against m.
func CheckTreeMetadata(p string, m *stack.EngineReleaseManifest) error {
	b, err := os.ReadFile(p)
	if err != nil {
		return fmt.Errorf("engine tree metadata: %w", err)
	}
	return materialize.CheckReleaseStack(p, b, m)
}
