package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cacheon/engine/settlement/ledger"
)

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

// openCheckedLedger opens the ledger at path and runs its check: a command
// that reads what decides a payout (settle, weights, stack export, crown
// review, qualify --ledger) never acts on a ledger "ledger check" refuses,
// such as one whose rows were edited past the row record chain. what says
// what the command would have done, for the error.
//
// The check is the quick one from the latest checkpoint, which covers
// every row these commands decide on; a crown review reads history, and
// apply.CrownAt runs the full check itself.
func openCheckedLedger(ctx context.Context, path, what string) (*ledger.Ledger, error) {
	return openCheckedLedgerWith(ctx, path, what, ledger.Options{})
}

// openCheckedLedgerWith is openCheckedLedger with the open's options:
// intake add creates the ledger it is the first write to, and checks it
// like the others, since its anti-copy and replay verdicts read earlier
// proposals' fingerprints and transitions.
func openCheckedLedgerWith(ctx context.Context, path, what string, opts ledger.Options) (*ledger.Ledger, error) {
	l, err := ledger.Open(ctx, path, opts)
	if err != nil {
		return nil, err
	}
	if _, err := l.Check(ctx); err != nil {
		l.Close()
		return nil, fmt.Errorf("%s: no %s from a ledger that fails its check: %w", path, what, err)
	}
	return l, nil
}
