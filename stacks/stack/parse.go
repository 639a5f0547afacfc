package stack

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/cacheon/engine/internal/identity"
	"github.com/cacheon/engine/kernels/contribution"
)

// ParseManifest reads the canonical JSON of an engine release manifest
// (what `cacheon stack` writes for a release stack) back into its type,
// which validates it. The parser lives with the type so that the release
// builder and the release verifier read a stack the same way without one
// importing the other. Any entry that is not an integrated contribution
// is refused, and the bytes must be the manifest's canonical encoding
// (one trailing newline allowed): a release ships exactly the bytes its
// digest names.
func ParseManifest(b []byte) (*EngineReleaseManifest, error) {
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
	if doc.Type != "engine_release" || doc.StackPolicyVersion != ReleasePolicyVersion || doc.SchemaVersion != 1 {
		return nil, fmt.Errorf("release manifest: type %q, stack_policy_version %q, schema_version %d; want engine_release, %s, 1",
			doc.Type, doc.StackPolicyVersion, doc.SchemaVersion, ReleasePolicyVersion)
	}
	var entries []Ref
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
			if field := refusedDigestField(raw); field != "" {
				return nil, fmt.Errorf("release manifest: entry %s: %s: %w", id, field, err)
			}
			return nil, fmt.Errorf("release manifest: entry %s: %w", id, err)
		}
		if ref.TargetID != id {
			return nil, fmt.Errorf("release manifest: entry key %s holds a reference for target %s", id, ref.TargetID)
		}
		entries = append(entries, &ref)
	}
	var digests [3]identity.Digest
	for i, f := range []struct{ name, value string }{
		{"runtime_digest", doc.RuntimeDigest}, {"base_engine_digest", doc.BaseEngineDigest}, {"catalog_digest", doc.CatalogDigest},
	} {
		// The all-zero digest parses here so that the manifest's own
		// validation refuses it, with the message every manifest gets.
		d, err := identity.ParseField(f.name, f.value, true)
		if err != nil {
			return nil, fmt.Errorf("release stack: %w", err)
		}
		digests[i] = d
	}
	m, err := NewEngineReleaseManifest(digests[0], digests[1], digests[2], doc.CatalogSnapshot, entries)
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

// refusedDigestField names the first member (in name order) of the JSON
// object raw that holds a digest (its name ends in "_digest") whose text
// identity.Parse refuses, or "". Go's decoder reports a typed value's
// refusal without the field it was in; this puts the field back into the
// message.
func refusedDigestField(raw []byte) string {
	var members map[string]json.RawMessage
	if json.Unmarshal(raw, &members) != nil {
		return ""
	}
	names := make([]string, 0, len(members))
	for name := range members {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		var text string
		if !strings.HasSuffix(name, "_digest") || json.Unmarshal(members[name], &text) != nil {
			continue
		}
		if _, err := identity.Parse(text); err != nil {
			return name
		}
	}
	return ""
}
