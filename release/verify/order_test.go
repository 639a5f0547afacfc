package verify_test

import (
	"strings"
	"testing"

	fixture "github.com/cacheon/engine/release/releasetest"
	"github.com/cacheon/engine/release/store"
	"github.com/cacheon/engine/release/verify"
)

// The report of a good release lists every check that passes, by its
// stable name, in the order the checks run; consumers read the names, so
// splitting the checks into files must not change them or their order.
// Subjects has no line of its own (a subject mismatch fails it), and the
// layout check runs only when a layout is given.
func TestReportNamesEveryCheckInOrder(t *testing.T) {
	r := fixture.New(t)
	dir := buildAndSign(t, r, nil)
	l, err := store.OpenLayout(dir)
	if err != nil {
		t.Fatal(err)
	}
	var stages []string
	rel, err := verify.Run(l, verify.Options{Policy: policyFor(t, r), Progress: func(s string) { stages = append(stages, s) }})
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	want := []string{
		verify.CheckImage, verify.CheckAttestations, verify.CheckKeyPolicy, verify.CheckSignature,
		verify.CheckPredicate, verify.CheckBuilder, verify.CheckBlobs, verify.CheckDescriptor,
		verify.CheckLayers, verify.CheckEngineTree, verify.CheckIntegrations, verify.CheckSubstrate,
		verify.CheckEntrypoint, verify.CheckModelReceipt, verify.CheckSBOM, verify.CheckSBOMAttestation, verify.CheckProvenance,
	}
	var got []string
	for _, c := range rel.Report.Checks {
		got = append(got, c.Name)
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("checks\n got %v\nwant %v", got, want)
	}
	wantStages := []string{"reading the image manifest", "reading attestations", "checking the signature",
		"checking the layers against the provenance", "hashing the image blobs"}
	if strings.Join(stages, "|") != strings.Join(wantStages, "|") {
		t.Errorf("progress\n got %q\nwant %q", stages, wantStages)
	}
}
