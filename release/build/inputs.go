package build

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cacheon/engine/kernels/contribution"
	"github.com/cacheon/engine/release/review"
	"github.com/cacheon/engine/stacks/materialize"
	"github.com/cacheon/engine/stacks/stack"
	"github.com/cacheon/engine/tools/atomicwrite"
	"github.com/cacheon/engine/tools/canonjson"
)

// ParseReleaseManifest reads the canonical JSON of an engine release
// manifest (what `cacheon stack` writes for a release stack) into the
// stack package's type, which validates it. Any entry that is not an
// integrated contribution is refused, and the bytes must be the
// manifest's canonical encoding (one trailing newline allowed).
func ParseReleaseManifest(b []byte) (*stack.EngineReleaseManifest, error) {
	var doc struct {
		Type               string                     `json:"type"`
		BaseEngineDigest   string                     `json:"base_engine_digest"`
		RuntimeDigest      string                     `json:"runtime_digest"`
		CatalogDigest      string                     `json:"catalog_digest"`
		CatalogSnapshot    json.RawMessage            `json:"catalog_snapshot"`
		Entries            map[string]json.RawMessage `json:"entries"`
		SchemaVersion      int                        `json:"schema_version"`
		StackPolicyVersion string                     `json:"stack_policy_version"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("parse release manifest: %w", err)
	}
	if doc.Type != "engine_release" || doc.StackPolicyVersion != stack.ReleasePolicyVersion || doc.SchemaVersion != 1 {
		return nil, fmt.Errorf("release manifest: type %q, stack_policy_version %q, schema_version %d; want engine_release, %s, 1",
			doc.Type, doc.StackPolicyVersion, doc.SchemaVersion, stack.ReleasePolicyVersion)
	}
	var entries []stack.Ref
	for id, raw := range doc.Entries {
		var kind struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(raw, &kind); err != nil {
			return nil, fmt.Errorf("release manifest: entry %s: %w", id, err)
		}
		if kind.Type != contribution.KindIntegrated {
			return nil, fmt.Errorf("release manifest: entry %s is a %q contribution; a release ships integrated (reviewed) contributions only", id, kind.Type)
		}
		var ref contribution.IntegratedRef
		d := json.NewDecoder(bytes.NewReader(raw))
		d.DisallowUnknownFields()
		if err := d.Decode(&ref); err != nil {
			return nil, fmt.Errorf("release manifest: entry %s: %w", id, err)
		}
		if ref.TargetID != id {
			return nil, fmt.Errorf("release manifest: entry key %s holds a reference for target %s", id, ref.TargetID)
		}
		entries = append(entries, &ref)
	}
	m, err := stack.NewEngineReleaseManifest(doc.RuntimeDigest, doc.BaseEngineDigest, doc.CatalogDigest, doc.CatalogSnapshot, entries)
	if err != nil {
		return nil, err
	}
	canon, err := m.CanonicalJSON()
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(canon, b) && !bytes.Equal(append(canon, '\n'), b) {
		return nil, fmt.Errorf("release manifest is not in canonical form (sorted keys, no spaces)")
	}
	return m, nil
}

// ReadReviews reads integration review record files.
func ReadReviews(paths []string) ([]*review.Record, [][]byte, error) {
	var recs []*review.Record
	var raws [][]byte
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, nil, fmt.Errorf("read review record: %w", err)
		}
		r, err := review.Parse(b)
		if err != nil {
			return nil, nil, fmt.Errorf("review record %s: %w", p, err)
		}
		canon, _ := r.Marshal()
		recs = append(recs, r)
		raws = append(raws, canon)
	}
	return recs, raws, nil
}

// TreeMetadataPath is the engine tree's own inventory, relative to its root.
const TreeMetadataPath = "metadata/cacheon_engine_tree.json"

// treeMetadata is the part of metadata/cacheon_engine_tree.json a release
// checks against its release stack.
type treeMetadata struct {
	StackDigest   string `json:"stack_digest"`
	Contributions []struct {
		TargetID              string `json:"target_id"`
		ContributionRefDigest string `json:"contribution_ref_digest"`
		SourceKind            string `json:"source_kind"`
		SourceDigest          string `json:"source_digest"`
	} `json:"contributions"`
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
	if err := CheckTreeMetadata(filepath.Join(dir, filepath.FromSlash(TreeMetadataPath)), m); err != nil {
		return nil, err
	}
	return &EngineTree{Dir: dir, Digest: digest, Files: files}, nil
}

// CheckTreeMetadata checks the tree metadata file at p against m.
func CheckTreeMetadata(p string, m *stack.EngineReleaseManifest) error {
	b, err := os.ReadFile(p)
	if err != nil {
		return fmt.Errorf("engine tree metadata: %w", err)
	}
	return CheckTreeMetadataBytes(p, b, m)
}

// CheckTreeMetadataBytes checks the metadata bytes b (named name in
// messages) against m.
func CheckTreeMetadataBytes(name string, b []byte, m *stack.EngineReleaseManifest) error {
	if _, err := canonjson.Parse(b); err != nil {
		return fmt.Errorf("engine tree metadata %s: %w", name, err)
	}
	var md treeMetadata
	if err := json.Unmarshal(b, &md); err != nil {
		return fmt.Errorf("engine tree metadata %s: %w", name, err)
	}
	want, err := m.Digest()
	if err != nil {
		return err
	}
	if md.StackDigest != want {
		return fmt.Errorf("engine tree metadata %s: stack_digest %s, the release stack's digest is %s: the tree was materialized from another stack", name, md.StackDigest, want)
	}
	ids := m.TargetIDs()
	if len(md.Contributions) != len(ids) {
		return fmt.Errorf("engine tree metadata %s: %d contributions, the release stack has %d entries", name, len(md.Contributions), len(ids))
	}
	for i, c := range md.Contributions {
		if c.TargetID != ids[i] {
			return fmt.Errorf("engine tree metadata %s: contributions[%d] is target %s, want %s", name, i, c.TargetID, ids[i])
		}
		ref := m.Entries[c.TargetID]
		rd, err := ref.RefDigest()
		if err != nil {
			return err
		}
		if c.ContributionRefDigest != rd || c.SourceKind != "integrated_source" {
			return fmt.Errorf("engine tree metadata %s: contribution %s is %s ref %s, the release stack holds integrated ref %s", name, c.TargetID, c.SourceKind, c.ContributionRefDigest, rd)
		}
	}
	return nil
}
