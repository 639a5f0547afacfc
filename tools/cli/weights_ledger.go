package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cacheon/engine/internal/identity"
	"github.com/cacheon/engine/internal/reject"
	"github.com/cacheon/engine/settlement/ledger"
	"github.com/cacheon/engine/settlement/weights"
)

// weightsLedgerOptions are the flags of weights itself: the projection
// from a ledger's claims.
type weightsLedgerOptions struct {
	ledger    string
	policy    string
	metagraph string
	validator string
	block     uint64
	json      bool
}

// addWeightsLedger makes cmd (weights) project from a ledger: `cacheon
// weights --ledger DB ...` reads the claims settlement wrote, where
// `weights project` reads exported ones.
func addWeightsLedger(cmd *cobra.Command, s Streams) {
	var o weightsLedgerOptions
	cmd.Use = "weights --ledger DB --block N --metagraph MEMBERS.json --validator HOTKEY --policy POLICY.json [--json]"
	cmd.Long += `

With --ledger, weights projects the vector from the ledger's own
standing and discovery claims (those settlement committed), exactly as
weights project does from a claims file: POLICY.json, MEMBERS.json and
HOTKEY as there. The active entries the standing claims are checked
against are derived from the claims themselves. --json prints the same
weight-vector document, {"policy_digest", "weights": [{"hotkey", "ppm"}]}
sorted by hotkey. The ledger is checked first as "ledger check" checks
it, and no weights come from one that fails. Exit 2 when the policy
refuses the inputs or the ledger fails its check, with the reason; 1
when a file is missing or the ledger is being written.`
	cmd.Example = `  cacheon weights --ledger ledger.db --block 4200000 --metagraph members.json \
      --validator 5Fvalidator --policy policy.json
  cacheon weights --ledger ledger.db --block 4200000 --metagraph members.json \
      --validator 5Fvalidator --policy policy.json --json`
	cmd.Args = cobra.NoArgs
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		return runWeightsLedger(cmd.Context(), s, o)
	}
	cmd.Flags().StringVar(&o.ledger, "ledger", "", "ledger database file (required)")
	cmd.Flags().StringVar(&o.policy, "policy", "", "emissions policy projection JSON (required)")
	cmd.Flags().Uint64Var(&o.block, "block", 0, "the block to project at (required)")
	cmd.Flags().StringVar(&o.metagraph, "metagraph", "", "JSON array of the hotkeys registered at the block (required)")
	cmd.Flags().StringVar(&o.validator, "validator", "", "the projecting validator's hotkey (required)")
	cmd.Flags().BoolVar(&o.json, "json", false, "print one JSON document")
	for _, f := range []string{"ledger", "policy", "block", "metagraph", "validator"} {
		_ = cmd.MarkFlagRequired(f)
	}
}

func runWeightsLedger(ctx context.Context, s Streams, o weightsLedgerOptions) error {
	// Weights are money: never computed from a ledger that "ledger check"
	// refuses (a damaged page, a row edited past the row record chain).
	l, err := openCheckedLedger(ctx, o.ledger, "weights")
	if err != nil {
		return err
	}
	standing, discovery, err := ledgerClaims(ctx, l)
	l.Close()
	if err != nil {
		return fmt.Errorf("%s: %w", o.ledger, err)
	}
	return projectWeights(s, weightsProjectOptions{policy: o.policy, metagraph: o.metagraph, validator: o.validator, block: o.block, json: o.json},
		weights.Claims{Standing: standing, Discovery: discovery})
}

// ledgerClaims reads the ledger's claims as the projection takes them.
func ledgerClaims(ctx context.Context, l *ledger.Ledger) ([]weights.StandingClaim, []weights.DiscoveryClaim, error) {
	digest := func(what, v string) (identity.Digest, error) {
		d, err := identity.Parse(v)
		if err != nil {
			return d, reject.Errorf("%s: %v", what, err)
		}
		return d, nil
	}
	sc, err := l.StandingClaims(ctx)
	if err != nil {
		return nil, nil, err
	}
	standing := []weights.StandingClaim{}
	for _, c := range sc {
		w := weights.StandingClaim{TargetID: c.TargetID, Hotkey: c.Hotkey, SpeedupPPM: uint64(c.SpeedupPPM), CrownedBlock: uint64(c.CrownedBlock)}
		where := fmt.Sprintf("standing claim of %s", c.TargetID)
		for _, f := range []struct {
			dst *identity.Digest
			v   string
		}{{&w.Arena, c.ArenaDigest}, {&w.TargetSpec, c.TargetSpecDigest}, {&w.Contribution, c.ContributionDigest}, {&w.RetainedEvidence, c.EvidenceDigest}} {
			if *f.dst, err = digest(where, f.v); err != nil {
				return nil, nil, err
			}
		}
		standing = append(standing, w)
	}
	dc, err := l.DiscoveryClaims(ctx)
	if err != nil {
		return nil, nil, err
	}
	discovery := []weights.DiscoveryClaim{}
	for _, c := range dc {
		where := fmt.Sprintf("discovery claim of event %d", c.EventSequence)
		w := weights.DiscoveryClaim{Hotkey: c.Hotkey, BountyUnits: weights.BountyUnits(uint64(c.SpeedupPPM)), AwardedBlock: uint64(c.AwardedBlock)}
		if w.Proposal, err = digest(where, c.ContributionDigest); err != nil {
			return nil, nil, err
		}
		if w.RetainedEvidence, err = digest(where, c.EvidenceDigest); err != nil {
			return nil, nil, err
		}
		discovery = append(discovery, w)
	}
	return standing, discovery, nil
}
