package materialize

import (
	"encoding/json"
	"fmt"

	"github.com/cacheon/engine/internal/canonjson"
	"github.com/cacheon/engine/internal/identity"
	"github.com/cacheon/engine/stacks/stack"
)

// releaseTreeMetadata is the part of the tree metadata that ties a tree
// to the release stack it was materialized from.
type releaseTreeMetadata struct {
	StackDigest   identity.Digest `json:"stack_digest"`
	Contributions []struct {
		TargetID              string          `json:"target_id"`
		ContributionRefDigest identity.Digest `json:"contribution_ref_digest"`
		SourceKind            string          `json:"source_kind"`
		SourceDigest          identity.Digest `json:"source_digest"`
	} `json:"contributions"`
}

// CheckReleaseStack checks the tree metadata bytes b (named name in
// messages) against the release stack m: the metadata names m's digest
// and exactly m's entries, each as the integrated source its reference
// binds. It lives with the tree format so that the release builder and
// the release verifier apply the same check without one importing the
// other.
func CheckReleaseStack(name string, b []byte, m *stack.EngineReleaseManifest) error {
	if _, err := canonjson.Parse(b); err != nil {
		return fmt.Errorf("engine tree metadata %s: %w", name, err)
	}
	var md releaseTreeMetadata
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
