package cli

import "github.com/spf13/cobra"

func newLedgerCommand(s Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ledger",
		Short: "Inspect and back up the settlement ledger",
		Long: `The settlement ledger is one SQLite file a validator keeps: intake
proposals and their statuses, screens and qualifications, the settlement
events as a hash chain, crowns and claims, and the history of evaluation
stacks with exactly one current. See docs/operator-guide/ledger.md.`,
	}
	cmd.AddCommand(newLedgerCheckCommand(s), newLedgerBackupCommand(s))
	return cmd
}
