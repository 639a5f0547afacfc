package contribution

import (
	"strings"
	"testing"

	"github.com/cacheon/engine/internal/identity"
)

// hex64 is the SHA-256 digest whose hex is c 64 times.
func hex64(c byte) identity.Digest {
	return identity.Digest{Algorithm: identity.SHA256, Hex: strings.Repeat(string(c), 64)}
}

// badDigest is a digest with hex no Parse accepts, as a corrupt record or
// a hand-built value could hold.
func badDigest(hex string) identity.Digest {
	return identity.Digest{Algorithm: identity.SHA256, Hex: hex}
}

func TestProposalRef(t *testing.T) {
	in, err := Inspect(repoPath(t, "kernels/contributions/silu_and_mul_torch"), testOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewProposalRef(in, hex64('4'))
	if err != nil {
		t.Fatal(err)
	}
	if r.ArtifactDigest != in.ContentHash || r.SelectedPayloadDigest != in.SelectedPayloadDigest || r.TargetID != "activation.silu_and_mul" {
		t.Fatalf("ref = %+v", r)
	}
	d, err := r.RefDigest()
	if err != nil {
		t.Fatal(err)
	}
	want := identity.MustH(identity.DomainProposal, map[string]any{
		"type": "proposal", "schema_version": 1, "target_id": r.TargetID,
		"target_spec_digest": r.TargetSpecDigest, "artifact_digest": r.ArtifactDigest,
		"selected_payload_digest": r.SelectedPayloadDigest, "attribution_digest": hex64('4'),
	})
	if d != want {
		t.Fatalf("digest %s, want %s", d, want)
	}
	delta, err := r.SelectedDelta()
	if err != nil || delta != in.SelectedDeltaDigest {
		t.Fatalf("delta %s, want %s (%v)", delta, in.SelectedDeltaDigest, err)
	}

	for _, tc := range []struct {
		name   string
		mutate func(r *ProposalRef)
	}{
		{"wrong type", func(r *ProposalRef) { r.Type = "integrated" }},
		{"schema", func(r *ProposalRef) { r.SchemaVersion = 2 }},
		{"no target", func(r *ProposalRef) { r.TargetID = "" }},
		{"zero attribution", func(r *ProposalRef) { r.AttributionDigest = hex64('0') }},
		{"short artifact", func(r *ProposalRef) { r.ArtifactDigest = badDigest("abc") }},
		{"upper-case payload", func(r *ProposalRef) {
			r.SelectedPayloadDigest = badDigest(strings.ToUpper(r.SelectedPayloadDigest.Hex))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := *r
			tc.mutate(&bad)
			if _, err := bad.RefDigest(); err == nil {
				t.Fatal("an invalid ref has a digest")
			}
		})
	}
}

func TestProposalRefNeedsRegisteredTarget(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "manifest.toml", "bundle_id = \"b\"\nabi_version = \"cacheon-op-abi-v0\"\n[competition]\ntarget = \"activation.silu_and_mul\"\nmode = \"system\"\n[[ops]]\nslot = \"activation.silu_and_mul\"\nsource = \"k.py\"\nentry = \"f\"\n")
	writeFile(t, dir, "k.py", "def f(x, out):\n    pass\n")
	in, err := Inspect(dir, testOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewProposalRef(in, hex64('4')); err == nil {
		t.Fatal("an unregistered bundle became a proposal")
	}
}

// reviewRecord is a stand-in for the review package's integration record,
// carrying exactly the fields IntegratedRefFromRecord reads.
type reviewRecord struct {
	approved                         bool
	digest                           identity.Digest
	target                           string
	spec, tree, payload, attribution identity.Digest
}

func (r reviewRecord) Digest() (identity.Digest, error)            { return r.digest, nil }
func (r reviewRecord) Approved() bool                              { return r.approved }
func (r reviewRecord) TargetID() string                            { return r.target }
func (r reviewRecord) TargetSpecDigest() identity.Digest           { return r.spec }
func (r reviewRecord) IntegratedSourceTreeDigest() identity.Digest { return r.tree }
func (r reviewRecord) SelectedPayloadDigest() identity.Digest      { return r.payload }
func (r reviewRecord) AttributionDigest() identity.Digest          { return r.attribution }

func TestIntegratedRefFromRecord(t *testing.T) {
	rec := reviewRecord{approved: true, digest: hex64('9'), target: "activation.silu_and_mul",
		spec: hex64('1'), tree: hex64('2'), payload: hex64('3'), attribution: hex64('4')}
	r, err := IntegratedRefFromRecord(rec)
	if err != nil {
		t.Fatal(err)
	}
	d, err := r.RefDigest()
	if err != nil {
		t.Fatal(err)
	}
	want := identity.MustH(identity.DomainIntegrated, map[string]any{
		"type": "integrated", "schema_version": 1, "target_id": "activation.silu_and_mul",
		"target_spec_digest": hex64('1'), "integrated_source_tree_digest": hex64('2'),
		"selected_payload_digest": hex64('3'), "attribution_digest": hex64('4'),
		"integration_record_digest": hex64('9'),
	})
	if d != want {
		t.Fatalf("digest %s, want %s", d, want)
	}
	rec.approved = false
	if _, err := IntegratedRefFromRecord(rec); err == nil {
		t.Fatal("an unapproved review produced an integrated ref")
	}
	rec.approved, rec.tree = true, badDigest("nope")
	if _, err := IntegratedRefFromRecord(rec); err == nil {
		t.Fatal("a malformed tree digest produced an integrated ref")
	}
}

func TestIntegratedSourceTreeDigest(t *testing.T) {
	src := repoPath(t, "kernels/contributions/silu_and_mul_torch")
	d, err := IntegratedSourceTreeDigest(src)
	if err != nil {
		t.Fatal(err)
	}
	copyDir := copyBundle(t, src)
	if got, _ := IntegratedSourceTreeDigest(copyDir); got != d {
		t.Fatal("a copy of the tree has another digest")
	}
	writeFile(t, copyDir, "__pycache__/x.cpython-311.pyc", "junk")
	if got, _ := IntegratedSourceTreeDigest(copyDir); got != d {
		t.Fatal("bytecode caches changed the source tree digest")
	}
	writeFile(t, copyDir, "README.md", "changed\n")
	if got, _ := IntegratedSourceTreeDigest(copyDir); got == d {
		t.Fatal("editing a reviewed file kept the digest")
	}
	if _, err := IntegratedSourceTreeDigest(t.TempDir()); err == nil {
		t.Fatal("an empty tree has a digest")
	}
}
