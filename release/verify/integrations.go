package verify

import (
	"strings"

	"github.com/cacheon/engine/release/descriptor"
	"github.com/cacheon/engine/release/review"
	"github.com/cacheon/engine/stacks/materialize"
	"github.com/cacheon/engine/stacks/stack"
)

// checkIntegrations (CheckIntegrations) reports the coverage
// CheckReleaseFiles established while checking the engine tree: every
// entry of the release stack is an integrated contribution covered by
// exactly one approved review record shipped in the image.
func (v *verification) checkIntegrations() error {
	v.rep.Contributions = v.targets
	v.rel.Records = v.records
	v.rep.pass(CheckIntegrations, "%d integrated contribution(s), each covered by exactly one approved review record", len(v.targets))
	return nil
}

// CheckReleaseFiles checks the release layer's files (by image path)
// against the descriptor: the release stack hashes to the descriptor's
// digest, the engine tree metadata (treeMetadata) names that stack and
// its entries, every review record parses and sits at its digest's path,
// the records cover the stack's entries one to one, and the descriptor's
// integration rows are what the records say. It returns the records and
// the covered targets.
func CheckReleaseFiles(d *descriptor.Descriptor, files map[string][]byte, treeMetadata []byte) ([]*review.Record, []string, error) {
	mb := files[descriptor.ManifestPath]
	if mb == nil {
		return nil, nil, failf(CheckIntegrations, "/%s is missing from the release", descriptor.ManifestPath)
	}
	rm, err := stack.ParseManifest(mb)
	if err != nil {
		return nil, nil, fail(CheckIntegrations, err)
	}
	if md, _ := rm.Digest(); md.String() != d.ReleaseManifestDigest {
		return nil, nil, failf(CheckIntegrations, "the release stack in the image has digest %s, the descriptor says %s", md, d.ReleaseManifestDigest)
	}
	if treeMetadata == nil {
		return nil, nil, failf(CheckEngineTree, "%s is missing from the engine tree", materialize.TreeMetadataName)
	}
	if err := materialize.CheckReleaseStack(materialize.TreeMetadataName, treeMetadata, rm); err != nil {
		return nil, nil, fail(CheckEngineTree, err)
	}
	var records []*review.Record
	for p, b := range files {
		if !strings.HasPrefix(p, descriptor.ReviewDir+"/") {
			continue
		}
		r, err := review.Parse(b)
		if err != nil {
			return nil, nil, failf(CheckIntegrations, "/%s: %v", p, err)
		}
		dg, _ := r.Digest()
		if descriptor.ReviewPath(dg) != p {
			return nil, nil, failf(CheckIntegrations, "/%s holds record %s", p, dg)
		}
		records = append(records, r)
	}
	covered, err := review.CheckCoverage(rm, records)
	if err != nil {
		return nil, nil, fail(CheckIntegrations, err)
	}
	if len(covered) != len(d.Integrations) {
		return nil, nil, failf(CheckIntegrations, "%d integrations covered, the descriptor lists %d", len(covered), len(d.Integrations))
	}
	targets := []string{}
	for i, c := range covered {
		want := d.Integrations[i]
		got := descriptor.Integration{
			TargetID: c.TargetID, IntegratedRefDigest: c.IntegratedRefDigest.String(), IntegrationRecordDigest: c.RecordDigest,
			IntegratedSourceTreeDigest: c.Record.IntegratedSourceTreeDigest, SelectedPayloadDigest: c.Record.SelectedPayloadDigest,
			ReviewCommit: c.Record.ReviewCommit, Reviewer: c.Record.Reviewer,
			RecordSHA256: descriptor.SHA256(files[descriptor.ReviewPath(c.RecordDigest)]),
		}
		if got != want {
			return nil, nil, failf(CheckIntegrations, "integration %s: the records in the image give %+v, the descriptor says %+v", c.TargetID, got, want)
		}
		targets = append(targets, c.TargetID)
	}
	return records, targets, nil
}
