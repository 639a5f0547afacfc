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
// that reads what decides a payout (weights, stack export, crown review)
// never acts on a ledger "ledger check" refuses, such as one whose rows
// were edited past the row record chain. what says what the command would
// have done, for the error.
//
// The check is the quick one from the latest checkpoint, which covers
// every row these commands decide on; a crown review reads history, and
// apply.CrownAt runs the full check itself. A command that writes opens
// the ledger with openWritingLedger instead.
func openCheckedLedger(ctx context.Context, path, what string) (*ledger.Ledger, error) {
	l, err := ledger.Open(ctx, path, ledger.Options{})
	if err != nil {
		return nil, err
	}
	if _, err := l.Check(ctx); err != nil {
		l.Close()
		return nil, fmt.Errorf("%s: no %s from a ledger that fails its check: %w", path, what, err)
	}
	return l, nil
}

// openWritingLedger opens the ledger at path for a command that writes to
// it (settle, qualify --ledger, intake add, intake clear-copy) and runs
// the check before the write, ledger.CheckBeforeWrite: the quick check
// from the latest checkpoint, or, once ledger.AutoCheckpointRecords chain
// records stand since it, the full check and a new checkpoint, so that a
// ledger whose operator never runs "ledger check --full" still opens in
// time independent of its history. Nothing is written onto a ledger the
// check refuses. what says what the command would have done, for the error;
// opts are the open's (intake add creates the ledger it is the first
// write to, and checks it like the others, since its anti-copy and replay
// verdicts read earlier proposals' fingerprints and transitions).
// Clearing a copy verdict rebinds rows the quick check does not read, so
// ledger.ClearCopy runs the full check and records a checkpoint itself
// unless this one just did.
func openWritingLedger(ctx context.Context, path, what string, opts ledger.Options) (*ledger.Ledger, error) {
	l, err := ledger.Open(ctx, path, opts)
	if err != nil {
		return nil, err
	}
	if _, err := l.CheckBeforeWrite(ctx); err != nil {
		l.Close()
		return nil, fmt.Errorf("%s: no %s onto a ledger that fails its check: %w", path, what, err)
	}
	return l, nil
}
