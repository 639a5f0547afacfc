package cli

import "github.com/spf13/cobra"

func newIntakeCommand(s Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "intake",
		Short: "Take finalized reveals into the settlement ledger",
		Long: `Intake is how a proposal enters the settlement ledger: a finalized reveal
(who revealed which bundle at which finalized block, event and subevent)
reserves its position, and the bundle's bytes are published once,
immutable and content-addressed, beside the ledger. Anti-copy runs at
intake: a proposal that copies an earlier one of another hotkey at its
arena and target, or one of the project's seed contributions, is failed
at its position naming what it copies; clear-copy corrects a wrong
verdict before settlement.

intake add is the chain-independent stand-in for a finalized reveal: a
chain adapter drives it (or the ledger package) with the bundle it fetched;
an operator can drive it by hand. See docs/operator-guide/ledger.md.`,
	}
	cmd.AddCommand(newIntakeAddCommand(s), newIntakeClearCopyCommand(s))
	return cmd
}
