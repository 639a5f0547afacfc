package verify_test

import (
	"strings"
	"testing"

	"github.com/cacheon/engine/release/envelope"
	fixture "github.com/cacheon/engine/release/releasetest"
	"github.com/cacheon/engine/release/sbom"
	"github.com/cacheon/engine/release/sign"
	"github.com/cacheon/engine/release/store"
	"github.com/cacheon/engine/release/verify"
)

// A signed release carries its SBOM twice: the plain SPDX document, and
// the same bytes as the predicate of an in-toto statement about the image,
// signed by the release key. The SBOM declares the repository's license
// for the repository's own source (the substrate and the entrypoint) and
// nothing for what others wrote.
func TestSignedReleaseCarriesTheSBOMAttestation(t *testing.T) {
	r := fixture.New(t)
	dir := r.Signed(t)
	rel, err := run(t, dir, policyFor(t, r))
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	att := fixture.SBOMAttestation(t, dir)
	if att.Title() != store.TitleSBOMBundle || string(rel.SBOMBundle) != string(att.Data) {
		t.Fatalf("SBOM attestation bundle %s, title %q: not the one verified", att.Descriptor.Digest, att.Title())
	}
	b, err := envelope.Parse(att.Data)
	if err != nil {
		t.Fatal(err)
	}
	st, err := sbom.ParseStatement(b.Payload)
	if err != nil {
		t.Fatal(err)
	}
	if string(st.Predicate) != string(fixture.Attached(t, dir, store.ArtifactSBOM)) || string(st.Predicate) != string(rel.SBOM) {
		t.Error("the attestation's predicate is not the attached SBOM byte for byte")
	}
	if st.Subjects[0].Digest["sha256"] != rel.Image.Digest.Hex || st.Subjects[0].Name != rel.Report.Image {
		t.Errorf("subject %+v, image %s@%s", st.Subjects[0], rel.Report.Image, rel.Image.Digest)
	}
	var detail string
	for _, c := range rel.Report.Checks {
		if c.Name == verify.CheckSBOMAttestation {
			detail = c.Detail
		}
	}
	if !strings.Contains(detail, sbom.PredicateType) || !strings.Contains(detail, rel.Report.KeyID) {
		t.Errorf("%s check detail %q", verify.CheckSBOMAttestation, detail)
	}
	if len(rel.Report.Notes) != 0 {
		t.Errorf("a genuine release has notes: %q", rel.Report.Notes)
	}

	doc, err := sbom.Parse(rel.SBOM)
	if err != nil {
		t.Fatal(err)
	}
	licenses := map[string][2]string{}
	for _, p := range doc.Packages {
		licenses[p.Name] = [2]string{p.LicenseDeclared, p.LicenseConcluded}
	}
	for name, want := range map[string][2]string{
		"substrate":    {sbom.ProjectLicense, sbom.ProjectLicense},
		"cacheon":      {sbom.ProjectLicense, "NOASSERTION"},
		"engine-tree":  {"NOASSERTION", "NOASSERTION"},
		fixture.Target: {"NOASSERTION", "NOASSERTION"},
	} {
		if licenses[name] != want {
			t.Errorf("package %s: declared/concluded %q, want %q", name, licenses[name], want)
		}
	}

	// Signing again attaches nothing new: the same key signs the same
	// statements into the same bundles.
	before := len(fixture.ReadIndex(t, dir).Manifests)
	l, _ := store.OpenLayout(dir)
	if _, err := sign.Release(l, r.Signer); err != nil {
		t.Fatal(err)
	}
	if after := len(fixture.ReadIndex(t, dir).Manifests); after != before {
		t.Errorf("signing twice: %d index entries, then %d", before, after)
	}
}
