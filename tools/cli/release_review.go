package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cacheon/engine/release/review"
	"github.com/cacheon/engine/tools/atomicwrite"
	"github.com/cacheon/engine/tools/reject"
)

// releaseReviewOptions are the flags and arguments of release review.
type releaseReviewOptions struct {
	crownPath, repo, commit, path, reviewer, out, catalogPath string
	evidence                                                  []string
	jsonOut                                                   bool
	args                                                      []string
}

func newReleaseReviewCommand(s Streams) *cobra.Command {
	var o releaseReviewOptions
	cmd := &cobra.Command{
		Use:   "review --crown FILE --repo DIR --commit SHA --path DIR --evidence ROLE=FILE... --reviewer NAME --out FILE",
		Short: "Record an integration review binding a crowned payload to reviewed source",
		Long: `Write an integration review record: the approval that a crowned
contribution's selected payload is exactly what the reviewed source at a
full git commit selects. The record derives the one integrated
contribution a release stack may hold for the target.

The source is read from the git object store at --commit (never from the
working tree): only regular files (modes 100644 and 100755) are allowed,
the integrated source tree digest is computed from those blobs, and the
source is inspected as intake inspects a bundle (never imported or run).
The review is refused unless it resolves to the crowned target and
target-spec digest and selects exactly the crowned payload.

--crown is the crown binding settlement wrote: target_id,
target_spec_digest, proposal_contribution_digest,
settlement_candidate_digest, settlement_evidence_digest,
crown_event_digest, primary_attempt_digest, reproduction_attempt_digest,
selected_payload_digest and attribution_digest.

--evidence names the seven evidence documents, one per role:
primary_attempt and reproduction_attempt (the two qualification attempts
the crown names; their SHA-256 must match), license_evidence,
provenance_evidence, security_review, compatibility_evidence and
test_evidence. All seven must be distinct.`,
		Example: `  cacheon release review --crown crowns/silu.json \
    --repo . --commit 3f6c1e0d9b2a4c5d6e7f8091a2b3c4d5e6f70819 --path kernels/contributions/silu_and_mul_triton \
    --evidence primary_attempt=evidence/primary.json \
    --evidence reproduction_attempt=evidence/reproduction.json \
    --evidence license_evidence=evidence/license.json \
    --evidence provenance_evidence=evidence/provenance.json \
    --evidence security_review=evidence/security.json \
    --evidence compatibility_evidence=evidence/compat.json \
    --evidence test_evidence=evidence/tests.json \
    --reviewer "Ada Reviewer <ada@example.com>" --out reviews/silu.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.args = args
			return runReleaseReview(cmd.Context(), s, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.crownPath, "crown", "", "crown binding JSON written by settlement (required)")
	f.StringVar(&o.repo, "repo", ".", "git repository holding the reviewed source")
	f.StringVar(&o.commit, "commit", "", "full 40-hex commit id of the reviewed source (required)")
	f.StringVar(&o.path, "path", "", "the contribution's directory inside the repository (required)")
	f.StringArrayVar(&o.evidence, "evidence", nil, "ROLE=FILE evidence document (repeat for all seven roles)")
	f.StringVar(&o.reviewer, "reviewer", "", "who approved the integration (required)")
	f.StringVar(&o.catalogPath, "catalog", "", "target catalog HCL file (default: the built-in catalog)")
	f.StringVar(&o.out, "out", "", "record file to write (required)")
	f.BoolVar(&o.jsonOut, "json", false, "print one JSON document")
	for _, r := range []string{"crown", "commit", "path", "reviewer", "out"} {
		cmd.MarkFlagRequired(r)
	}
	return cmd
}

func runReleaseReview(_ context.Context, s Streams, o releaseReviewOptions) error {
	crown, err := review.LoadCrown(o.crownPath)
	if err != nil {
		return err
	}
	ev, err := review.LoadEvidence(o.evidence)
	if err != nil {
		return fmt.Errorf("--%w", err) // the messages start with "o.evidence"
	}
	cat, err := bundleCatalog(o.catalogPath)
	if err != nil {
		return err
	}
	rec, err := review.New(review.Request{
		Crown: crown, Evidence: ev, Reviewer: o.reviewer, Repo: o.repo, Commit: o.commit, Path: o.path,
		Inspect: review.Inspector(cat, nil),
	})
	if err != nil {
		return reject.Wrap(err)
	}
	b, err := rec.Marshal()
	if err != nil {
		return err
	}
	if err := atomicwrite.WriteFile(o.out, b, 0o644); err != nil {
		return err
	}
	digest, _ := rec.Digest()
	ref, err := rec.IntegratedRef()
	if err != nil {
		return err
	}
	refDigest, _ := ref.RefDigest()
	if o.jsonOut {
		return writeJSON(s.Out, map[string]any{
			"format_version": 1, "record": o.out, "record_digest": digest, "integrated_ref": ref,
			"integrated_ref_digest": refDigest, "integrated_source_tree_digest": rec.IntegratedSourceTreeDigest,
		})
	}
	fmt.Fprintf(s.Out, "record          %s (%s)\nintegrated ref  %s\nsource tree     %s at %s\n", o.out, digest, refDigest, rec.IntegratedSourceTreeDigest, rec.ReviewCommit)
	return nil
}
