package contribution

import (
	"fmt"

	"github.com/cacheon/engine/internal/identity"
	"github.com/cacheon/engine/kernels/bundle"
)

type sourceTreeRow struct {
	Mode   int    `json:"mode"`
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
}

// IntegratedSourceTreeDigest is the identity of a reviewed source tree:
// H(cacheon.integrated-source-tree, {files: [{mode 292, path, sha256}]})
// over every file the content hash covers, in path-component order, with
// modes normalized. Links and special files reject the tree (the intake
// limits apply), so the identity never depends on what a link points at.
func IntegratedSourceTreeDigest(dir string) (identity.Digest, error) {
	tree, err := bundle.ReadTree(dir)
	if err != nil {
		return identity.Digest{}, err
	}
	if len(tree.Files) == 0 {
		return identity.Digest{}, fmt.Errorf("integrated source tree %s: %w", dir, bundle.ErrNoFiles)
	}
	rows := make([]sourceTreeRow, 0, len(tree.Files))
	for _, f := range tree.Files {
		if err := bundle.CheckLogicalPath(f.Path); err != nil {
			return identity.Digest{}, fmt.Errorf("integrated source tree %s: %w", dir, err)
		}
		sum, _, err := hashFile(dir, f.Path)
		if err != nil {
			return identity.Digest{}, err
		}
		rows = append(rows, sourceTreeRow{Mode: FileMode, Path: f.Path, SHA256: sum})
	}
	return identity.H(identity.DomainIntegratedSourceTree, map[string]any{"files": rows})
}

// SnapshotSourceTreeDigest is IntegratedSourceTreeDigest of the bytes a
// snapshot holds, reading nothing again.
func SnapshotSourceTreeDigest(s *bundle.Snapshot) (identity.Digest, error) {
	files := s.Files()
	if len(files) == 0 {
		return identity.Digest{}, fmt.Errorf("integrated source tree %s: %w", s.Root(), bundle.ErrNoFiles)
	}
	rows := make([]sourceTreeRow, 0, len(files))
	for _, f := range files {
		if err := bundle.CheckLogicalPath(f.Path); err != nil {
			return identity.Digest{}, fmt.Errorf("integrated source tree %s: %w", s.Root(), err)
		}
		sum, _ := s.SHA256(f.Path)
		rows = append(rows, sourceTreeRow{Mode: FileMode, Path: f.Path, SHA256: sum})
	}
	return identity.H(identity.DomainIntegratedSourceTree, map[string]any{"files": rows})
}
