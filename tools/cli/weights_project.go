package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cacheon/engine/settlement/weights"
	"github.com/cacheon/engine/tools/cli/enginecli"
)

// weightsProjectOptions are the flags of weights project.
type weightsProjectOptions struct {
	policy    string
	claims    string
	metagraph string
	validator string
	block     uint64
	json      bool
}

func newWeightsProjectCommand(s Streams) *cobra.Command {
	var o weightsProjectOptions
	cmd := &cobra.Command{
		Use:   "project --policy POLICY.json --claims CLAIMS.json --block N --metagraph MEMBERS.json --validator HOTKEY [--json]",
		Short: "Project the weight vector at a block",
		Long: `Project the weight vector of the emissions policy V1 at block N and print
it: one share per hotkey, in parts per million, summing to exactly
1,000,000.

POLICY.json is the policy projection {"half_life_blocks",
"discovery_lifetime_blocks", "discovery_pool_ppm", "schema_version": 1,
"policy_version": "cacheon.emissions.v1"}. CLAIMS.json is {"standing":
[...], "discovery": [...]} with each claim's projection, and optionally
"arenas": the registered arenas and their active entries, which the
standing claims must then match. MEMBERS.json is the metagraph at N, a
JSON array of hotkeys. HOTKEY is the validator projecting: the credit of a
claim holder absent from the metagraph goes to it, and it must be in the
metagraph.

A standing claim earns (speedup_ppm − 10⁶)·h // (h + N − crowned_block);
live discovery claims split the discovery pool by bounty units, and with
none live the pool returns to the standing claims. Each pool is normalized
by largest remainder (ties to the smaller hotkey).

The vector is all or nothing: a stale or duplicated claim, an active
target without a claim, a crown newer than N, credit that has all decayed
to zero, or live discovery claims under a zero discovery pool refuses the
whole projection with the reason, exit 2. A file that cannot be read
exits 1.`,
		Example: `  cacheon weights project --policy docs/examples/weights/policy.json \
      --claims docs/examples/weights/claims.json --block 50000 \
      --metagraph docs/examples/weights/members.json --validator validator
  cacheon weights project --policy docs/examples/weights/policy.json \
      --claims docs/examples/weights/claims.json --block 50000 \
      --metagraph docs/examples/weights/members.json --validator validator --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runWeightsProject(cmd.Context(), s, o)
		},
	}
	cmd.Flags().StringVar(&o.policy, "policy", "", "emissions policy projection JSON (required)")
	cmd.Flags().StringVar(&o.claims, "claims", "", "claims document JSON (required)")
	cmd.Flags().Uint64Var(&o.block, "block", 0, "the block to project at (required)")
	cmd.Flags().StringVar(&o.metagraph, "metagraph", "", "JSON array of the hotkeys registered at the block (required)")
	cmd.Flags().StringVar(&o.validator, "validator", "", "the projecting validator's hotkey (required)")
	cmd.Flags().BoolVar(&o.json, "json", false, "print one JSON document")
	for _, f := range []string{"policy", "claims", "block", "metagraph", "validator"} {
		_ = cmd.MarkFlagRequired(f)
	}
	return cmd
}

// weightsProjectJSON is the --json document of weights project: the
// weight-vector file a chain publisher reads (docs/reference/emissions.md).
type weightsProjectJSON struct {
	PolicyDigest string       `json:"policy_digest"`
	Weights      []weightJSON `json:"weights"`
}

type weightJSON struct {
	Hotkey string `json:"hotkey"`
	PPM    uint64 `json:"ppm"`
}

func runWeightsProject(_ context.Context, s Streams, o weightsProjectOptions) error {
	read := func(path string) ([]byte, error) {
		_, data, err := readInput(nil, []string{path})
		return data, err
	}
	claimsJSON, err := read(o.claims)
	if err != nil {
		return err
	}
	claims, err := weights.ParseClaims(claimsJSON)
	if err != nil {
		return fmt.Errorf("%s: %w", o.claims, err)
	}
	return projectWeights(s, o, claims)
}

// projectWeights reads the policy and the metagraph, projects claims at
// o.block and prints the vector: the one projection both weights and
// weights project print.
func projectWeights(s Streams, o weightsProjectOptions, claims weights.Claims) error {
	read := func(path string) ([]byte, error) {
		_, data, err := readInput(nil, []string{path})
		return data, err
	}
	policyJSON, err := read(o.policy)
	if err != nil {
		return err
	}
	policy, err := weights.ParsePolicy(policyJSON)
	if err != nil {
		return fmt.Errorf("%s: %w", o.policy, err)
	}
	membersJSON, err := read(o.metagraph)
	if err != nil {
		return err
	}
	members, err := weights.ParseMetagraph(membersJSON)
	if err != nil {
		return fmt.Errorf("%s: %w", o.metagraph, err)
	}
	p, err := weights.Project(weights.Input{
		Policy: policy, Standing: claims.Standing, Discovery: claims.Discovery, Arenas: claims.Arenas,
		Block: o.block, Metagraph: members, Validator: o.validator,
	})
	if err != nil {
		return fmt.Errorf("project weights at block %d: %w", o.block, err)
	}
	if o.json {
		doc := weightsProjectJSON{PolicyDigest: p.PolicyDigest.String()}
		for _, w := range p.Weights {
			doc.Weights = append(doc.Weights, weightJSON{Hotkey: w.Hotkey, PPM: w.PPM})
		}
		return enginecli.WriteJSON(s.Out, doc)
	}
	fmt.Fprintf(s.Out, "policy %s\nblock %d: standing pool %d ppm, discovery pool %d ppm (%d standing claims, %d live and %d expired discovery claims)\n\n",
		p.PolicyDigest, p.Block, p.StandingPoolPPM, p.DiscoveryPoolPPM, len(p.Standing), len(p.Discovery), len(p.Expired))
	width := len("HOTKEY")
	for _, w := range p.Weights {
		width = max(width, len(w.Hotkey))
	}
	var total uint64
	fmt.Fprintf(s.Out, "%-*s  %9s  %9s\n", width, "HOTKEY", "PPM", "SHARE")
	for _, w := range p.Weights {
		fmt.Fprintf(s.Out, "%-*s  %9d  %9s\n", width, w.Hotkey, w.PPM, percent(w.PPM))
		total += w.PPM
	}
	fmt.Fprintf(s.Out, "%-*s  %9d  %9s\n", width, "total", total, percent(total))
	return nil
}

// percent writes ppm parts per million as a percentage, exactly: 10⁴ ppm
// is one percent.
func percent(ppm uint64) string {
	return fmt.Sprintf("%d.%04d%%", ppm/10_000, ppm%10_000)
}
