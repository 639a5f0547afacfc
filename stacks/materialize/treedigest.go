package materialize

import (
	"sort"

	"github.com/cacheon/engine/internal/atomicwrite"
	"github.com/cacheon/engine/internal/identity"
)

// PolicyVersion is the materializer policy version bound into selected
// payloads, tree metadata and tree digests. It changes whenever the same
// stack would materialize to different bytes.
const PolicyVersion = 2

// publishedMode is 0444, the mode of every file of a tree, as identities
// record it (decimal 292).
const publishedMode = 0o444

// FileRow is one file of a tree as its identity records it.
type FileRow struct {
	Mode   int    `json:"mode"`
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
}

func rowsOf(files []atomicwrite.Written) []FileRow {
	rows := make([]FileRow, len(files))
	for i, f := range files {
		rows[i] = FileRow{Mode: publishedMode, Path: f.Path, SHA256: f.SHA256, Size: f.Size}
	}
	// Emitted-tree inventories use plain string order, unlike bundle
	// content hashes, which use path-component order.
	sort.Slice(rows, func(i, j int) bool { return rows[i].Path < rows[j].Path })
	return rows
}

// TreeDigest is H(cacheon.materialized-engine-tree, {files, policy}) over
// every file of a tree, the engine tree metadata file included.
func TreeDigest(files []atomicwrite.Written) (identity.Digest, error) {
	return identity.H(identity.DomainMaterializedEngineTree, struct {
		Files                     []FileRow `json:"files"`
		MaterializerPolicyVersion int       `json:"materializer_policy_version"`
	}{rowsOf(files), PolicyVersion})
}
