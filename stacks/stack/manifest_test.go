package stack

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/cacheon/engine/internal/identity"
)

// testProposal is the proposal reference projection, used here to pin the
// manifest digests independently of the contribution package.
type testProposal struct {
	Type                  string          `json:"type"`
	SchemaVersion         int             `json:"schema_version"`
	TargetID              string          `json:"target_id"`
	TargetSpecDigest      identity.Digest `json:"target_spec_digest"`
	ArtifactDigest        identity.Digest `json:"artifact_digest"`
	SelectedPayloadDigest identity.Digest `json:"selected_payload_digest"`
	AttributionDigest     identity.Digest `json:"attribution_digest"`
}

func (p *testProposal) RefKind() string                      { return p.Type }
func (p *testProposal) RefTarget() (string, identity.Digest) { return p.TargetID, p.TargetSpecDigest }
func (p *testProposal) RefDigest() (identity.Digest, error) {
	return identity.H("cacheon.contribution.proposal", p)
}
func (p *testProposal) Validate() error {
	return identity.CheckField("artifact_digest", p.ArtifactDigest, false)
}

// d64 is the 64-hex digest of repeated c, as text; dg is the same digest
// typed.
func d64(c string) string { return strings.Repeat(c, 64) }

func dg(c string) identity.Digest { return identity.MustParse(d64(c)) }

func defaultSnapshot(t testing.TB) ([]byte, identity.Digest, map[string]identity.Digest) {
	t.Helper()
	b, err := os.ReadFile("testdata/default-catalog.snapshot.json")
	if err != nil {
		t.Fatal(err)
	}
	digest, err := identity.H(identity.DomainTargetCatalog, json.RawMessage(b))
	if err != nil {
		t.Fatal(err)
	}
	specs, err := snapshotSpecDigests(b, digest)
	if err != nil {
		t.Fatal(err)
	}
	return b, digest, specs
}

func siluProposal(spec identity.Digest) *testProposal {
	return &testProposal{
		Type: ProposalKind, SchemaVersion: 1, TargetID: "activation.silu_and_mul", TargetSpecDigest: spec,
		ArtifactDigest:        identity.MustParse("3d518dda8356bddd8c18fc2d3d02465a044135caee04853609ccdcb6c35c44db"),
		SelectedPayloadDigest: identity.MustParse("c578ea5f8078cf7875577cdfbb1f36260c7ac7693e995528c53fdcd22d0e9ba5"),
		AttributionDigest:     dg("4"),
	}
}

// The upstream goldens: the empty (pristine) evaluation stack with runtime
// 1…, base 2…, arena 3… over the default catalog, and the same stack with
// the silu example proposal attributed to 4….
func TestEvaluationManifestUpstreamGoldens(t *testing.T) {
	snap, catalogDigest, specs := defaultSnapshot(t)
	if catalogDigest.String() != "171302dde69a419264958499d07cd57f84e84516dee0e89c40a630f807a8152b" {
		t.Fatalf("catalog digest %s", catalogDigest)
	}
	if specs["activation.silu_and_mul"].String() != "ad6ce779616860a534a8a7919a1fca2f2c45669fddf98454fda8861c86155350" {
		t.Fatalf("silu spec digest %s", specs["activation.silu_and_mul"])
	}
	empty, err := NewEvaluationStackManifest(dg("1"), dg("2"), dg("3"), catalogDigest, snap, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := empty.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got.String(), "938fd770") || !strings.HasSuffix(got.String(), "9a4d") {
		t.Errorf("empty stack digest %s, want 938fd770…9a4d", got)
	}
	withSilu, err := empty.WithContribution(siluProposal(specs["activation.silu_and_mul"]), nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err = withSilu.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got.String(), "9cb9c501") || !strings.HasSuffix(got.String(), "5927") {
		t.Errorf("silu stack digest %s, want 9cb9c501…5927", got)
	}
	if len(empty.Entries) != 0 {
		t.Errorf("WithContribution mutated its receiver")
	}
	back, err := withSilu.WithContribution(nil, []string{"activation.silu_and_mul"})
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := back.Digest(); !strings.HasPrefix(d.String(), "938fd770") {
		t.Errorf("removing the only entry gives %s, want the empty stack again", d)
	}
}

func TestManifestRejects(t *testing.T) {
	snap, catalogDigest, specs := defaultSnapshot(t)
	silu := siluProposal(specs["activation.silu_and_mul"])
	stale := siluProposal(dg("9"))
	unknown := siluProposal(specs["activation.silu_and_mul"])
	unknown.TargetID = "activation.gelu"
	tests := []struct {
		name    string
		build   func() error
		wantErr string
	}{
		{"bad arena", func() error {
			_, err := NewEvaluationStackManifest(dg("1"), dg("2"), identity.Digest{Algorithm: identity.SHA256, Hex: "x"}, catalogDigest, snap, nil)
			return err
		}, "arena_digest"},
		{"zero runtime", func() error {
			_, err := NewEvaluationStackManifest(dg("0"), dg("2"), dg("3"), catalogDigest, snap, nil)
			return err
		}, "runtime_digest: the all-zero digest"},
		{"snapshot does not hash to digest", func() error {
			_, err := NewEvaluationStackManifest(dg("1"), dg("2"), dg("3"), dg("5"), snap, nil)
			return err
		}, "catalog_snapshot hashes to 171302dd"},
		{"stale target spec", func() error {
			_, err := NewEvaluationStackManifest(dg("1"), dg("2"), dg("3"), catalogDigest, snap, []Ref{stale})
			return err
		}, "stale target-spec digest"},
		{"unknown target", func() error {
			_, err := NewEvaluationStackManifest(dg("1"), dg("2"), dg("3"), catalogDigest, snap, []Ref{unknown})
			return err
		}, "target is not in the stack's catalog"},
		{"duplicate target", func() error {
			_, err := NewEvaluationStackManifest(dg("1"), dg("2"), dg("3"), catalogDigest, snap, []Ref{silu, silu})
			return err
		}, "two entries for target activation.silu_and_mul"},
		{"proposal in a release", func() error {
			_, err := NewEngineReleaseManifest(dg("1"), dg("2"), catalogDigest, snap, []Ref{silu})
			return err
		}, "integrated (reviewed) contributions only"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.build()
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestReleaseManifestDigestDiffersFromEvaluation(t *testing.T) {
	snap, catalogDigest, _ := defaultSnapshot(t)
	rel, err := NewEngineReleaseManifest(dg("1"), dg("2"), catalogDigest, snap, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := rel.CanonicalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), `{"base_engine_digest":"`+d64("2")) || strings.Contains(string(b), "arena_digest") ||
		!strings.HasSuffix(string(b), `"schema_version":1,"stack_policy_version":"engine-release.v1","type":"engine_release"}`) {
		t.Errorf("release canonical JSON = %.200s…", b)
	}
	d, err := rel.Digest()
	if err != nil {
		t.Fatal(err)
	}
	want := identity.MustH(identity.DomainStackRelease, json.RawMessage(b))
	if d != want {
		t.Errorf("digest %s is not H(release, canonical JSON) %s", d, want)
	}
	ctx := Context{RuntimeDigest: dg("1"), BaseEngineDigest: dg("2"), CatalogDigest: catalogDigest, CatalogSnapshot: rel.CatalogSnapshot}
	if err := rel.ValidateAgainst(ctx); err != nil {
		t.Errorf("ValidateAgainst its own context: %v", err)
	}
	ctx.BaseEngineDigest = dg("7")
	if err := rel.ValidateAgainst(ctx); err == nil || !strings.Contains(err.Error(), "base_engine_digest") {
		t.Errorf("ValidateAgainst another base engine = %v", err)
	}
}

func TestReferenceManifest(t *testing.T) {
	snap, catalogDigest, specs := defaultSnapshot(t)
	empty, _ := NewEvaluationStackManifest(dg("1"), dg("2"), dg("3"), catalogDigest, snap, nil)
	in := ReferenceInputs{
		PristineLaunchDigest: dg("a"), ControllerDistributionDigest: dg("b"), WorkerDistributionDigest: dg("c"),
		ModelRevisionDigest: dg("d"), ModelManifestDigest: dg("e"), ModelContentDigest: dg("f"),
		LogicalHardwareDigest: dg("5"), WorkloadDigest: dg("6"), TokenizerDigest: dg("7"),
		HiddenCorpusCommitmentDigest: dg("8"), HiddenJudgeDigest: dg("9"), SelectionPolicyDigest: dg("4"),
	}
	ref, err := NewReferenceManifest(empty, dg("c"), in)
	if err != nil {
		t.Fatal(err)
	}
	stackDigest, _ := empty.Digest()
	if ref.PristineStackDigest != stackDigest || ref.ArenaDigest != dg("3") || ref.CatalogDigest != catalogDigest {
		t.Errorf("reference = %+v", ref)
	}
	measured, err := ref.MeasuredDigest()
	if err != nil {
		t.Fatal(err)
	}
	full, _ := ref.Digest()
	// A new controller build changes the reference identity but not
	// what it measures, so calibrations stay valid.
	moved := *ref
	moved.ControllerDistributionDigest = dg("e")
	moved.PristineLaunchDigest = dg("e")
	if m, _ := moved.MeasuredDigest(); m != measured {
		t.Errorf("measured digest moved with the controller")
	}
	if f, _ := moved.Digest(); f == full {
		t.Errorf("full digest ignores the controller")
	}
	moved.TokenizerDigest = dg("e")
	if m, _ := moved.MeasuredDigest(); m == measured {
		t.Errorf("measured digest ignores the tokenizer")
	}

	withSilu, _ := empty.WithContribution(siluProposal(specs["activation.silu_and_mul"]), nil)
	if _, err := NewReferenceManifest(withSilu, dg("c"), in); err == nil || !strings.Contains(err.Error(), "must be empty") {
		t.Errorf("reference of a non-empty stack = %v", err)
	}
	in.HiddenJudgeDigest = identity.Digest{}
	if _, err := NewReferenceManifest(empty, dg("c"), in); err == nil || !strings.Contains(err.Error(), "hidden_judge_digest") {
		t.Errorf("reference with a missing digest = %v", err)
	}
}
