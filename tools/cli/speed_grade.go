package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cacheon/engine/evaluator/speed"
	"github.com/cacheon/engine/internal/reject"
	"github.com/cacheon/engine/tools/cli/enginecli"
)

// speedGradeOptions are the flags and arguments of speed grade.
type speedGradeOptions struct {
	policy string
	live   bool
	json   bool
	reads  string
}

func newSpeedGradeCommand(s Streams) *cobra.Command {
	var o speedGradeOptions
	cmd := &cobra.Command{
		Use:   "grade --policy POLICY.json READS.json [--live] [--json]",
		Short: "Re-grade raw speed reads under a policy",
		Long: `Grade the speed reads in READS.json under the policy projection in
POLICY.json and print the decision, the speedup and the policy digest.

POLICY.json is the policy as evidence keeps it: decimals as
17-significant-digit strings, integers as integers, both calibration
digests. READS.json is {"reads": [{"role": "B"|"C"|"B_prime",
"conditioning_tokens": N, "conditioning_seconds": "decimal", "windows":
[{"tokens": N, "seconds": "decimal"}, ...]}, ...]} in read order.

Version 7 reads B′ only when C/B lies between its two-leg limits; version
8 always reads all three. Version 9, this project's own, reads the
policy's "sets" sets of B, C and B′ in that order (each set three fresh
engine processes) and passes when the mean of the sets' speedups (each C
over the mean of its B and B′) is at least 1+min_margin; a set whose B
and B′ differ by more than max_noise is dropped, and more than one dropped
leaves b_prime_kept false (a qualification reads that as NO_DECISION).
Evidence of the wrong shape for its version (a
clear v7 decision with a B′, an inconclusive one without, a v8 set
without three reads, too few windows) is rejected with the reason, exit 2.
--live grades a v7 read set still being taken: an inconclusive B and C
then answer B_PRIME_REQUIRED instead of a rejection.

Exit status: 0 once graded (PASS, FAIL or B_PRIME_REQUIRED: the verdict is
in the output), 2 rejected evidence or policy, 1 a file that cannot be read.`,
		Example: `  cacheon speed grade --policy policy.json reads.json
  cacheon speed grade --policy policy.json reads.json --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.reads = args[0]
			return runSpeedGrade(cmd.Context(), s, o)
		},
	}
	cmd.Flags().StringVar(&o.policy, "policy", "", "policy projection JSON (required)")
	cmd.Flags().BoolVar(&o.live, "live", false, "answer B_PRIME_REQUIRED for an inconclusive v7 B and C")
	cmd.Flags().BoolVar(&o.json, "json", false, "print one JSON document")
	_ = cmd.MarkFlagRequired("policy")
	return cmd
}

// speedGradeJSON is the --json document of speed grade.
type speedGradeJSON struct {
	Decision     string  `json:"decision"`
	Reason       string  `json:"reason"`
	Speedup      string  `json:"speedup"`
	PolicyDigest string  `json:"policy_digest"`
	Version      int     `json:"policy_version"`
	Rates        []rateJ `json:"rates"`
	FailBelow    string  `json:"fail_below,omitempty"`
	PassAt       string  `json:"pass_at,omitempty"`
	Required     string  `json:"required,omitempty"`
	Drift        string  `json:"drift,omitempty"`
	BPrimeKept   *bool   `json:"b_prime_kept,omitempty"`
	Sets         []setJ  `json:"sets,omitempty"`
}

// setJ is one version 9 read set's grade.
type setJ struct {
	Speedup string `json:"speedup"`
	Drift   string `json:"drift"`
	Kept    bool   `json:"kept"`
}

type rateJ struct {
	Role    string `json:"role"`
	Scored  string `json:"scored"`
	Scatter string `json:"scatter"`
}

func runSpeedGrade(_ context.Context, s Streams, o speedGradeOptions) error {
	_, policyJSON, err := readInput(nil, []string{o.policy})
	if err != nil {
		return err
	}
	p, err := speed.ParsePolicy(policyJSON)
	if err != nil {
		return fmt.Errorf("%s: %w", o.policy, err)
	}
	_, readsJSON, err := readInput(nil, []string{o.reads})
	if err != nil {
		return err
	}
	reads, err := speed.ParseReads(readsJSON)
	if err != nil {
		return fmt.Errorf("%s: %w", o.reads, err)
	}
	g, err := speed.GradeReads(p, reads, speed.Options{Live: o.live})
	if err != nil {
		return fmt.Errorf("%s: %w", o.reads, err)
	}
	digest, err := p.Digest()
	if err != nil {
		return reject.Wrap(err)
	}
	doc := speedGradeJSON{Decision: string(g.Decision), Reason: g.Reason, Speedup: speed.Format(g.Speedup), PolicyDigest: digest, Version: p.Version}
	for _, r := range g.Rates {
		doc.Rates = append(doc.Rates, rateJ{Role: string(r.Role), Scored: speed.Format(r.Scored), Scatter: speed.Format(r.Scatter)})
	}
	if p.Version == speed.V7 {
		doc.FailBelow, doc.PassAt = speed.Format(g.FailBelow), speed.Format(g.PassAt)
	}
	if g.Concluded {
		kept := g.BPrimeKept
		doc.Required, doc.Drift, doc.BPrimeKept = speed.Format(g.Required), speed.Format(g.Drift), &kept
	}
	for i := range g.SetSpeedups {
		doc.Sets = append(doc.Sets, setJ{Speedup: speed.Format(g.SetSpeedups[i]), Drift: speed.Format(g.SetDrifts[i]), Kept: g.SetsKept[i]})
	}
	if o.json {
		return enginecli.WriteJSON(s.Out, doc)
	}
	fmt.Fprintf(s.Out, "%s %s: speedup %s (policy v%d %s)\n", g.Decision, g.Reason, doc.Speedup, p.Version, digest)
	return nil
}
