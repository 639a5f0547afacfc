package catalog

import (
	"testing"

	"github.com/cacheon/engine/tools/canonjson"
	"github.com/cacheon/engine/tools/identity"
)

// FuzzParse feeds arbitrary source to the loader: it must never panic,
// and whatever loads must carry well-formed identities.
func FuzzParse(f *testing.F) {
	f.Add(DefaultSource())
	f.Add([]byte(ruleBase))
	f.Add([]byte(ruleBase + precedenceCatalog))
	for _, rc := range ruleCases {
		f.Add([]byte(ruleBase + rc.snippet))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		c, diags := Parse(src, "fuzz.hcl")
		if diags.HasErrors() {
			if c != nil {
				t.Fatal("catalog returned together with errors")
			}
			return
		}
		if !identity.IsHex64(c.Digest()) {
			t.Fatalf("digest %q", c.Digest())
		}
		snap, err := canonjson.Parse(c.Snapshot())
		if err != nil {
			t.Fatalf("snapshot is not canonical JSON: %v", err)
		}
		if d := identity.MustDigest(DomainTargetCatalog, snap); d != c.Digest() {
			t.Fatalf("snapshot hashes to %s, digest is %s", d, c.Digest())
		}
		for _, id := range c.TargetIDs() {
			// A target with everything it requires is always a valid active set.
			active := append([]string{id}, c.RequiresClosure(id)...)
			if _, err := c.OrderedActiveTargets(active); err != nil {
				t.Fatalf("%v with its requirements is not a valid active set: %v", id, err)
			}
		}
	})
}
