package verify

import (
	"github.com/cacheon/engine/internal/identity"
	"github.com/cacheon/engine/stacks/materialize"
)

// checkEngineTree (CheckEngineTree) requires the engine tree in the image
// to pass the materializer's own reopen check, to have the digest the
// descriptor and the signed subject give, and its metadata to name the
// release stack and exactly its entries. That last part needs the release
// stack, which CheckReleaseFiles parses for the integrations check, so
// the two run together and the tree passes first.
func (v *verification) checkEngineTree() error {
	d, tree := v.d, v.contents["engine-tree"]
	if tree.treeErr != nil {
		return failf(CheckEngineTree, "the engine tree in the image does not pass the materializer's check: %v", tree.treeErr)
	}
	computed, err := materialize.TreeDigest(tree.rows)
	if err != nil {
		return fail(CheckEngineTree, err)
	}
	treeDigest := computed.String()
	if treeDigest != tree.treeDigest {
		return failf(CheckEngineTree, "engine tree digest %s, the materializer's check gives %s", treeDigest, tree.treeDigest)
	}
	signed := v.treeSubject.Digest[string(identity.DomainMaterializedEngineTree)]
	if treeDigest != d.EngineTreeDigest || treeDigest != signed {
		return failf(CheckEngineTree, "the engine tree in the image has digest %s; the descriptor says %s and the signed subject %s", treeDigest, d.EngineTreeDigest, signed)
	}
	v.rep.EngineTreeDigest = treeDigest
	records, targets, err := CheckReleaseFiles(d, v.rel.Files, tree.metadata)
	if err != nil {
		return err
	}
	v.records, v.targets = records, targets
	v.rep.pass(CheckEngineTree, "%s (%d files), materialized from release stack %s", treeDigest, len(tree.rows), d.ReleaseManifestDigest)
	return nil
}
