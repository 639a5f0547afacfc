package build

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/cacheon/engine/internal/atomicwrite"
	"github.com/cacheon/engine/release/review"
	"github.com/cacheon/engine/stacks/materialize"
	"github.com/cacheon/engine/stacks/stack"
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
	metaPath := filepath.Join(dir, filepath.FromSlash(materialize.TreeMetadataName))
	meta, err := os.ReadFile(metaPath)
	if err != nil {
		return nil, fmt.Errorf("engine tree metadata: %w", err)
	}
	return checkedTree("engine tree "+dir, dir, res, files, metaPath, meta, m)
}

// CheckHeldEngineTree is CheckEngineTree of a tree held in memory (see
// materialize.VerifyHeld); the tree's Dir is empty.
func CheckHeldEngineTree(files []HeldFile, m *stack.EngineReleaseManifest) (*EngineTree, error) {
	held := memFiles(files)
	res, written, err := materialize.VerifyHeld(held)
	if err != nil {
		return nil, fmt.Errorf("engine tree: %w", err)
	}
	var meta []byte
	for _, f := range held {
		if f.Path == materialize.TreeMetadataName {
			meta = f.Data
		}
	}
	return checkedTree("engine tree", "", res, written, materialize.TreeMetadataName, meta, m)
}

// checkedTree finishes either check: the digest of the inventory must be
// the one the materializer's check gave, and the metadata (named metaName
// in messages) must name the release stack and exactly its entries.
func checkedTree(where, dir string, res *materialize.Result, files []atomicwrite.Written, metaName string, meta []byte, m *stack.EngineReleaseManifest) (*EngineTree, error) {
	digest, err := materialize.TreeDigest(files)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	if digest != res.TreeDigest {
		return nil, fmt.Errorf("%s: digest %s, the materializer's check gives %s", where, digest, res.TreeDigest)
	}
	if err := materialize.CheckReleaseStack(metaName, meta, m); err != nil {
		return nil, err
	}
	return &EngineTree{Dir: dir, Digest: digest.String(), Files: files}, nil
}
