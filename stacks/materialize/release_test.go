package materialize

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cacheon/engine/internal/identity"
	"github.com/cacheon/engine/kernels/contribution"
	"github.com/cacheon/engine/stacks/stack"
)

// CheckReleaseStack ties a materialized tree to the release stack it was
// built from: the release builder and verifier both rely on it, so each
// way a tree can name another stack or another entry is refused.
func TestCheckReleaseStack(t *testing.T) {
	opts := testOptions(t)
	dir := copyBundle(t, "silu_and_mul_triton")
	in, err := contribution.Inspect(dir, contribution.Options{Catalog: opts.Catalog, Payload: opts.Payload})
	if err != nil {
		t.Fatal(err)
	}
	tree, err := contribution.IntegratedSourceTreeDigest(dir)
	if err != nil {
		t.Fatal(err)
	}
	rec := fakeRecord{target: in.Target.TargetID, spec: in.Target.TargetSpecDigest, tree: tree, payload: in.SelectedPayloadDigest}
	ref, err := contribution.IntegratedRefFromRecord(rec)
	if err != nil {
		t.Fatal(err)
	}
	release := func(base identity.Digest, refs ...stack.Ref) *stack.EngineReleaseManifest {
		m, err := stack.NewEngineReleaseManifest(dg("1"), base, opts.Catalog.Digest(), opts.Catalog.Snapshot(), refs)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	m := release(dg("2"), ref)
	o := opts
	o.Records = []contribution.IntegrationRecord{rec}
	out := filepath.Join(t.TempDir(), "out")
	resolve := func(string, stack.Ref) (string, error) { return dir, nil }
	if _, err := Materialize(m, resolve, out, o); err != nil {
		t.Fatal(err)
	}
	meta, err := os.ReadFile(filepath.Join(out, filepath.FromSlash(TreeMetadataName)))
	if err != nil {
		t.Fatal(err)
	}
	edit := func(old, new string) []byte {
		if !strings.Contains(string(meta), old) {
			t.Fatalf("tree metadata has no %q", old)
		}
		return []byte(strings.Replace(string(meta), old, new, 1))
	}
	tests := []struct {
		name    string
		meta    []byte
		m       *stack.EngineReleaseManifest
		wantErr string // "" passes
	}{
		{"the tree's own stack", meta, m, ""},
		{"another stack", meta, release(dg("3"), ref), "materialized from another stack"},
		{"a stack without the entry", meta, release(dg("2")), "materialized from another stack"},
		{"another source kind", edit(`"source_kind": "integrated_source"`, `"source_kind": "proposal_source"`), m, "the release stack holds integrated ref"},
		{"not JSON", []byte("{"), m, "engine tree metadata"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckReleaseStack("metadata", tt.meta, tt.m)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("CheckReleaseStack: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}
