package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cacheon/engine/internal/atomicwrite"
	"github.com/cacheon/engine/internal/reject"
	"github.com/cacheon/engine/release/review"
	"github.com/cacheon/engine/release/review/ledgercrown"
	"github.com/cacheon/engine/settlement/apply"
	"github.com/cacheon/engine/tools/cli/enginecli"
)

// releaseReviewOptions are the flags and arguments of release review.
type releaseReviewOptions struct {
	crownPath, repo, commit, path, reviewer, out, catalogPath string
	ledger, target                                            string
	evidence                                                  []string
	jsonOut                                                   bool
	args                                                      []string
}

func newReleaseReviewCommand(s Streams) *cobra.Command {
	var o releaseReviewOptions
	cmd := &cobra.Command{
		Use:   "review (--ledger DB --target TARGET | --crown FILE) --repo DIR --commit SHA --path DIR --evidence ROLE=FILE... --reviewer NAME --out FILE",
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

--ledger DB --target TARGET takes the crown from the settlement ledger:
the current crown of TARGET (the last one settled there, refused when a
later settlement retired or neutralized it). The ledger must pass its
check, and every field of the crown binding is recomputed from the
ledger's rows: the CROWN event (its digest, candidate and subject), the
settled pair of qualification attempts (paired again to the crowned
candidate, and their settlement evidence digest), the intake row
(target-spec digest, selected payload) and the stack the crown made
current (the attribution, which must re-derive the crowned proposal).
The two attempts' settlement views become the primary_attempt and
reproduction_attempt evidence documents. The ledger is only read; it is
opened as its one writer, so run the review while no settlement or
qualification holds it.

--crown FILE instead reads a crown binding by hand (target_id,
target_spec_digest, proposal_contribution_digest,
settlement_candidate_digest, settlement_evidence_digest,
crown_event_digest, primary_attempt_digest, reproduction_attempt_digest,
selected_payload_digest and attribution_digest), for a crown whose ledger
the reviewer does not hold; the two attempts are then --evidence files
whose SHA-256 must match.

--evidence names the evidence documents, one per role:
license_evidence, provenance_evidence, security_review,
compatibility_evidence and test_evidence, and with --crown also
primary_attempt and reproduction_attempt. All seven must be distinct.
See docs/reference/integration-review.md.`,
		Example: `  cacheon release review --ledger ledger.db --target norm.rmsnorm \
    --repo . --commit 3f6c1e0d9b2a4c5d6e7f8091a2b3c4d5e6f70819 --path kernels/contributions/rmsnorm_torch \
    --evidence license_evidence=evidence/license.json \
    --evidence provenance_evidence=evidence/provenance.json \
    --evidence security_review=evidence/security.json \
    --evidence compatibility_evidence=evidence/compat.json \
    --evidence test_evidence=evidence/tests.json \
    --reviewer "Ada Reviewer <ada@example.com>" --out reviews/rmsnorm.json

  cacheon release review --crown crowns/silu.json \
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
	f.StringVar(&o.ledger, "ledger", "", "settlement ledger database to take the crown from (with --target)")
	f.StringVar(&o.target, "target", "", "the crowned target whose current crown is reviewed (with --ledger)")
	f.StringVar(&o.crownPath, "crown", "", "crown binding JSON, instead of --ledger")
	f.StringVar(&o.repo, "repo", ".", "git repository holding the reviewed source")
	f.StringVar(&o.commit, "commit", "", "full 40-hex commit id of the reviewed source (required)")
	f.StringVar(&o.path, "path", "", "the contribution's directory inside the repository (required)")
	f.StringArrayVar(&o.evidence, "evidence", nil, "ROLE=FILE evidence document (repeat: five roles with --ledger, seven with --crown)")
	f.StringVar(&o.reviewer, "reviewer", "", "who approved the integration (required)")
	f.StringVar(&o.catalogPath, "catalog", "", "target catalog HCL file (default: the built-in catalog)")
	f.StringVar(&o.out, "out", "", "record file to write (required)")
	f.BoolVar(&o.jsonOut, "json", false, "print one JSON document")
	cmd.MarkFlagsMutuallyExclusive("ledger", "crown")
	cmd.MarkFlagsRequiredTogether("ledger", "target")
	cmd.MarkFlagsOneRequired("ledger", "crown")
	for _, r := range []string{"commit", "path", "reviewer", "out"} {
		cmd.MarkFlagRequired(r)
	}
	return cmd
}

func runReleaseReview(ctx context.Context, s Streams, o releaseReviewOptions) error {
	ev, err := review.LoadEvidence(o.evidence)
	if err != nil {
		return fmt.Errorf("--%w", err) // the messages start with "evidence"
	}
	cat, err := enginecli.BundleCatalog(o.catalogPath)
	if err != nil {
		return err
	}
	req := review.Request{Evidence: ev, Reviewer: o.reviewer, Repo: o.repo, Commit: o.commit, Path: o.path, Inspect: review.Inspector(cat, nil)}
	var rec *review.Record
	var crownEvent int64
	if o.ledger != "" {
		l, err := openCheckedLedger(ctx, o.ledger, "crown review")
		if err != nil {
			return err
		}
		defer l.Close()
		var c *apply.Crowned
		if rec, c, err = ledgercrown.Review(ctx, l, o.target, req); err != nil {
			return fmt.Errorf("review the crown at %s in %s: %w", o.target, o.ledger, err)
		}
		crownEvent = c.EventSequence
	} else {
		if req.Crown, err = review.LoadCrown(o.crownPath); err != nil {
			return err
		}
		if rec, err = review.New(req); err != nil {
			return reject.Wrap(err)
		}
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
		return enginecli.WriteJSON(s.Out, map[string]any{
			"format_version": 1, "record": o.out, "record_digest": digest, "integrated_ref": ref,
			"integrated_ref_digest": refDigest, "integrated_source_tree_digest": rec.IntegratedSourceTreeDigest,
			"crown_event_sequence": crownEvent, "crown_event_digest": rec.CrownEventDigest,
		})
	}
	if crownEvent != 0 {
		fmt.Fprintf(s.Out, "crown           event %d of %s (%s)\n", crownEvent, o.ledger, rec.CrownEventDigest)
	}
	fmt.Fprintf(s.Out, "record          %s (%s)\nintegrated ref  %s\nsource tree     %s at %s\n", o.out, digest, refDigest, rec.IntegratedSourceTreeDigest, rec.ReviewCommit)
	return nil
}
