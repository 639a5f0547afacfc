package cli

import (
	"github.com/spf13/cobra"
)

func newWeightsCommand(s Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "weights",
		Short: "Project the reward weight vector (emissions policy V1)",
		Long: `The weights subcommands turn the standing and discovery claims that
settlement wrote into the weight vector a validator sets: a pure function
of the emissions policy, the claims, the metagraph and a block, so anyone
holding the same inputs re-derives the same vector. Publishing the vector
to a chain is not part of this tool. See docs/reference/emissions.md.`,
	}
	cmd.AddCommand(newWeightsProjectCommand(s))
	addWeightsLedger(cmd, s)
	return cmd
}
