package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cacheon/engine/settlement/ledger"
	"github.com/cacheon/engine/tools/cli/enginecli"
)

// ledgerBackupOptions are the flags of ledger backup.
type ledgerBackupOptions struct {
	ledger string
	out    string
	json   bool
}

func newLedgerBackupCommand(s Streams) *cobra.Command {
	var o ledgerBackupOptions
	cmd := &cobra.Command{
		Use:   "backup --ledger DB OUT [--json]",
		Short: "Write a consistent, checked copy of a ledger",
		Long: `Backup opens the ledger DB as its writer and writes a copy of it to OUT
with SQLite's VACUUM INTO: the database as one transaction sees it,
including what is still in the write-ahead log, which a plain cp of the
file misses (a committed settlement among it). The copy is then checked
as "ledger check --full" checks a ledger (its whole history, whatever
checkpoint it holds), and only a copy that passes is
published at OUT (atomically, mode 0600). OUT must not exist.

To restore, stop every writer, check the backup with
"cacheon ledger check --full --ledger OUT", and put it in the ledger's
place.

Exit status: 0 the backup is written and checks; 2 the ledger or the copy
is refused (the reason is printed) and nothing is written; 1 when DB is
missing, OUT exists, or another process is writing DB.`,
		Example: `  cacheon ledger backup --ledger /srv/validator/ledger.db /backup/ledger-2026-12-05.db
  cacheon ledger backup --ledger ledger.db ledger.bak --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.out = args[0]
			return runLedgerBackup(cmd.Context(), s, o)
		},
	}
	cmd.Flags().StringVar(&o.ledger, "ledger", "", "ledger database file (required)")
	cmd.Flags().BoolVar(&o.json, "json", false, "print one JSON document")
	_ = cmd.MarkFlagRequired("ledger")
	return cmd
}

// ledgerBackupJSON is the --json document of ledger backup.
type ledgerBackupJSON struct {
	Ledger string `json:"ledger"`
	Backup string `json:"backup"`
	*ledger.Report
}

func runLedgerBackup(ctx context.Context, s Streams, o ledgerBackupOptions) error {
	l, err := ledger.Open(ctx, o.ledger, ledger.Options{})
	if err != nil {
		return err
	}
	defer l.Close()
	r, err := l.Backup(ctx, o.out)
	if err != nil {
		return err
	}
	if o.json {
		return enginecli.WriteJSON(s.Out, ledgerBackupJSON{Ledger: o.ledger, Backup: o.out, Report: r})
	}
	fmt.Fprintf(s.Out, "backup %s of %s: ok (schema %d, chain head %d, %d proposals, %d events)\n",
		o.out, o.ledger, r.SchemaVersion, r.Head.Sequence, r.Counts.Proposals, r.Counts.Events)
	return nil
}
