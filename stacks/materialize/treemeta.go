package materialize

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/cacheon/engine/internal/atomicwrite"
	"github.com/cacheon/engine/internal/identity"
	"github.com/cacheon/engine/kernels/bundle"
	"github.com/cacheon/engine/kernels/contribution"
)

// ContributionRow is one contribution as the tree metadata records it.
type ContributionRow struct {
	ContributionRefDigest identity.Digest `json:"contribution_ref_digest"`
	Namespace             string          `json:"namespace"`
	SelectedDeltaDigest   identity.Digest `json:"selected_delta_digest"`
	SelectedPayloadDigest identity.Digest `json:"selected_payload_digest"`
	SourceDigest          identity.Digest `json:"source_digest"`
	SourceKind            string          `json:"source_kind"`
	TargetID              string          `json:"target_id"`
	TargetSpecDigest      identity.Digest `json:"target_spec_digest"`
}

// treeMetadataDoc is metadata/cacheon_engine_tree.json.
type treeMetadataDoc struct {
	Contributions             []ContributionRow `json:"contributions"`
	Files                     []FileRow         `json:"files"`
	MaterializerPolicyVersion int               `json:"materializer_policy_version"`
	RuntimeManifest           *string           `json:"runtime_manifest"`
	StackDigest               identity.Digest   `json:"stack_digest"`
}

// treeMetadata renders the tree metadata over every other file of the
// tree, indented with sorted keys.
func treeMetadata(rows []ContributionRow, files []atomicwrite.File, runtimeManifest string, stackDigest identity.Digest) ([]byte, error) {
	doc := treeMetadataDoc{
		Contributions:             append([]ContributionRow{}, rows...),
		Files:                     make([]FileRow, 0, len(files)),
		MaterializerPolicyVersion: PolicyVersion,
		StackDigest:               stackDigest,
	}
	sort.Slice(doc.Contributions, func(i, j int) bool { return doc.Contributions[i].TargetID < doc.Contributions[j].TargetID })
	if runtimeManifest != "" {
		doc.RuntimeManifest = &runtimeManifest
	}
	for _, f := range files {
		sum, size, err := fileDigest(f)
		if err != nil {
			return nil, err
		}
		doc.Files = append(doc.Files, FileRow{Mode: publishedMode, Path: f.Path, SHA256: sum, Size: size})
	}
	sort.Slice(doc.Files, func(i, j int) bool { return doc.Files[i].Path < doc.Files[j].Path })
	return indentedJSON(doc)
}

// fileDigest returns the digest and size a file will have in the tree. A
// file written from a bundle snapshot carries the digest its one stable
// read computed (the writer checks it again as it writes).
func fileDigest(f atomicwrite.File) (string, int64, error) {
	if f.Data != nil {
		if f.SHA256 != "" {
			return f.SHA256, int64(len(f.Data)), nil
		}
		return sha256Hex(f.Data), int64(len(f.Data)), nil
	}
	if f.SHA256 == "" {
		return "", 0, fmt.Errorf("tree file %s: copied without a known digest", f.Path)
	}
	info, err := os.Stat(f.From)
	if err != nil {
		return "", 0, err
	}
	return f.SHA256, info.Size(), nil
}

// Verify reopens a published engine tree and checks it the way a
// consumer would before loading it: the published shape (modes, times,
// no links, no empty directories), a tree metadata file that is exactly
// the canonical rendering of a well-formed document, contribution rows
// whose namespaces and selected deltas recompute, a runtime manifest
// present exactly when there are contributions, and a file inventory that
// equals the tree. It returns the tree's identity.
func Verify(root string) (*Result, error) {
	res, _, err := VerifyInventory(root)
	return res, err
}

// VerifyInventory is Verify that also returns the file inventory it read
// (each file's path, SHA-256 and size), so a caller that needs it does not
// read and hash the tree again.
func VerifyInventory(root string) (*Result, []atomicwrite.Written, error) {
	written, err := atomicwrite.Inventory(root)
	if err != nil {
		return nil, nil, err
	}
	res, err := checkTree(root, written)
	if err != nil {
		return nil, nil, err
	}
	return res, written, nil
}

// MaxTreeMetadataBytes bounds the tree metadata file Verify decodes. It
// holds one row of about 200 bytes per file of the tree, so the bound is
// over a quarter of a million files.
const MaxTreeMetadataBytes = 64 << 20

// ErrTooLarge is wrapped when a JSON document to decode exceeds its bound.
var ErrTooLarge = errors.New("file exceeds the size limit")

// readBounded reads the file at p, refusing more than max bytes before
// holding them.
func readBounded(p string, max int64) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(raw)) > max {
		return nil, fmt.Errorf("%s: %w of %d bytes", p, ErrTooLarge, max)
	}
	return raw, nil
}

// checkTree checks the tree metadata of root against written, an
// inventory of the tree already reopened and hashed.
func checkTree(root string, written []atomicwrite.Written) (*Result, error) {
	raw, err := readBounded(filepath.Join(root, filepath.FromSlash(TreeMetadataName)), MaxTreeMetadataBytes)
	if err != nil {
		return nil, fmt.Errorf("tree metadata: %w", err)
	}
	return checkMetadata(raw, written)
}

// VerifyHeld is VerifyInventory of a tree held in memory, such as one a
// rebuild reads from a verified image layer: the inventory is computed
// from the bytes, then the metadata and inventory checks are Verify's.
// The published shape on disk (modes, times, no links) does not apply.
func VerifyHeld(files []bundle.MemFile) (*Result, []atomicwrite.Written, error) {
	written := make([]atomicwrite.Written, len(files))
	var raw []byte
	for i, f := range files {
		sum := sha256.Sum256(f.Data)
		written[i] = atomicwrite.Written{Path: f.Path, SHA256: hex.EncodeToString(sum[:]), Size: int64(len(f.Data))}
		if f.Path == TreeMetadataName {
			raw = f.Data
		}
	}
	sort.Slice(written, func(i, j int) bool { return written[i].Path < written[j].Path })
	for i := 1; i < len(written); i++ {
		if written[i].Path == written[i-1].Path {
			return nil, nil, fmt.Errorf("tree file %s listed twice", written[i].Path)
		}
	}
	if raw == nil {
		return nil, nil, fmt.Errorf("tree metadata: %s is missing", TreeMetadataName)
	}
	if len(raw) > MaxTreeMetadataBytes {
		return nil, nil, fmt.Errorf("tree metadata: %w", ErrTooLarge)
	}
	res, err := checkMetadata(raw, written)
	if err != nil {
		return nil, nil, err
	}
	return res, written, nil
}

// checkMetadata checks the tree metadata document raw against the tree's
// inventory written (sorted by path).
func checkMetadata(raw []byte, written []atomicwrite.Written) (*Result, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var doc treeMetadataDoc
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("tree metadata: %w", err)
	}
	again, err := indentedJSON(doc)
	if err != nil {
		return nil, fmt.Errorf("tree metadata: %w", err)
	}
	if !bytes.Equal(again, raw) {
		return nil, errors.New("tree metadata is not in canonical form (fields missing, extra or reordered)")
	}
	if doc.MaterializerPolicyVersion != PolicyVersion {
		return nil, fmt.Errorf("tree metadata: materializer policy %d, this tool reads %d", doc.MaterializerPolicyVersion, PolicyVersion)
	}
	if err := identity.CheckField("stack_digest", doc.StackDigest, false); err != nil {
		return nil, fmt.Errorf("tree metadata: %w", err)
	}
	for i, c := range doc.Contributions {
		if i > 0 && doc.Contributions[i-1].TargetID >= c.TargetID {
			return nil, errors.New("tree metadata: contributions are not sorted by target")
		}
		delta, err := contribution.SelectedDelta(c.SelectedPayloadDigest, c.TargetID, c.TargetSpecDigest)
		if err != nil {
			return nil, fmt.Errorf("tree metadata: contribution %s: %w", c.TargetID, err)
		}
		if delta != c.SelectedDeltaDigest || c.Namespace != Namespace(delta) {
			return nil, fmt.Errorf("tree metadata: contribution %s: selected delta or namespace does not recompute", c.TargetID)
		}
		if c.SourceKind != SourceProposalArtifact && c.SourceKind != SourceIntegrated {
			return nil, fmt.Errorf("tree metadata: contribution %s: source kind %q", c.TargetID, c.SourceKind)
		}
		for _, d := range []struct {
			n string
			v identity.Digest
		}{{"contribution_ref_digest", c.ContributionRefDigest}, {"source_digest", c.SourceDigest}} {
			if err := identity.CheckField(d.n, d.v, false); err != nil {
				return nil, fmt.Errorf("tree metadata: contribution %s: %w", c.TargetID, err)
			}
		}
	}
	hasRuntime := doc.RuntimeManifest != nil
	if hasRuntime != (len(doc.Contributions) > 0) || (hasRuntime && *doc.RuntimeManifest != RuntimeManifestName) {
		return nil, errors.New("tree metadata: a runtime manifest must be present exactly when the stack has contributions")
	}
	var inventory []FileRow
	for _, r := range rowsOf(written) {
		if r.Path != TreeMetadataName {
			inventory = append(inventory, r)
		}
	}
	if len(inventory) != len(doc.Files) {
		return nil, fmt.Errorf("tree metadata lists %d files, the tree holds %d", len(doc.Files), len(inventory))
	}
	for i := range inventory {
		if inventory[i] != doc.Files[i] {
			return nil, fmt.Errorf("tree metadata: file %s does not match the tree (%s)", doc.Files[i].Path, inventory[i].Path)
		}
		if !hasRuntime && strings.HasPrefix(inventory[i].Path, "entries/") {
			return nil, errors.New("tree metadata: entry shims without a runtime manifest")
		}
	}
	digest, err := TreeDigest(written)
	if err != nil {
		return nil, err
	}
	return &Result{StackDigest: doc.StackDigest, TreeDigest: digest, Contributions: doc.Contributions, Files: rowsOf(written)}, nil
}
