package cli

import (
	"github.com/spf13/cobra"
)

func newSpeedCommand(s Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "speed",
		Short: "Grade speed reads under a resident speed policy (v7, v8, v9)",
		Long: `Speed reads are what a qualification's engines measured: B (the incumbent),
C (the candidate) and B′ (the incumbent again). The speed subcommands
re-grade retained reads with no GPU, with the same code the controller
decides with. See docs/reference/speed-policy.md.`,
	}
	cmd.AddCommand(newSpeedGradeCommand(s))
	return cmd
}
