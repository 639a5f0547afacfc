package cli

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/cacheon/engine/settlement/ledger"
	"github.com/cacheon/engine/tools/cli/enginecli"
)

// ledgerCheckOptions are the flags of ledger check.
type ledgerCheckOptions struct {
	ledger string
	full   bool
	json   bool
}

func newLedgerCheckCommand(s Streams) *cobra.Command {
	var o ledgerCheckOptions
	cmd := &cobra.Command{
		Use:   "check --ledger DB [--json]",
		Short: "Check a ledger's integrity, schema and settlement chain",
		Long: `Check opens the ledger DB as its writer (so it sees no write half-way) and
checks, in order: SQLite's integrity_check and foreign_key_check, the
schema version against this build's, the whole settlement hash chain
(sequences contiguous from 1, every body canonical JSON agreeing with its
columns, every previous_event_digest and every digest recomputed), the
intake chain (the corrections of intake verdicts) and the lease chain
(who evaluates which proposal until when) the same way, exactly one
current evaluation stack once any exists, every proposal's status and
lease, and that every standing copy verdict's proposal is failed by it.
It prints the head of the chain, the current stack and the row counts,
names every proposal stranded in flight (its lease expired, or held by a
run on this host, which is dead since this check holds the ledger, or no
lease at all), and every proposal under the live lease of a run on
another host, with the holder and expiry. Stranded is not damage: the
next "qualify --ledger" reclaims it (docs/reference/ledger.md).

With a checkpoint the check is quick: it verifies each chain from the
heads the latest checkpoint names, and every row a decision reads against
the row records from the checkpoint on, so it costs what happened since
rather than the whole history; SQLite's page checks and history no
decision reads are left out. --full replays everything, as a ledger with
no checkpoint always gets, and when everything holds records a new
checkpoint (a hashed row record rebinding every live row). Run it
regularly, and pin the record head it prints. The commands that write
record checkpoints too: settle, qualify --ledger and intake add run the
full check and record one before they write once ` + strconv.Itoa(ledger.AutoCheckpointRecords) + ` chain records
(settlement, intake and lease events and row records) stand since the
latest, and intake clear-copy before every clearing.

Exit status: 0 when everything holds; 2 when the ledger is refused (damaged
or not a ledger, a newer schema, a tampered event, a broken invariant: the
reason is printed); 1 when DB is missing or another process is writing it.`,
		Example: `  cacheon ledger check --ledger ledger.db
  cacheon ledger check --ledger ledger.db --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runLedgerCheck(cmd.Context(), s, o)
		},
	}
	cmd.Flags().StringVar(&o.ledger, "ledger", "", "ledger database file (required)")
	cmd.Flags().BoolVar(&o.full, "full", false, "replay the whole history and, when it holds, record a checkpoint")
	cmd.Flags().BoolVar(&o.json, "json", false, "print one JSON document")
	_ = cmd.MarkFlagRequired("ledger")
	return cmd
}

// ledgerCheckJSON is the --json document of ledger check.
type ledgerCheckJSON struct {
	OK     bool   `json:"ok"`
	Ledger string `json:"ledger"`
	*ledger.Report
}

func runLedgerCheck(ctx context.Context, s Streams, o ledgerCheckOptions) error {
	l, err := ledger.Open(ctx, o.ledger, ledger.Options{})
	if err != nil {
		return err
	}
	defer l.Close()
	var r *ledger.Report
	if o.full {
		r, _, err = l.Checkpoint(ctx)
	} else {
		r, err = l.Check(ctx)
	}
	if err != nil {
		for _, p := range r.Problems {
			fmt.Fprintf(s.Err, "problem: %s\n", p)
		}
	}
	if o.json {
		if werr := enginecli.WriteJSON(s.Out, ledgerCheckJSON{OK: err == nil, Ledger: o.ledger, Report: r}); werr != nil {
			return werr
		}
		return enginecli.AlreadyReported(err)
	}
	if err != nil {
		return err
	}
	cur := r.CurrentStack
	if cur == "" {
		cur = "(none yet)"
	}
	fmt.Fprintf(s.Out, "ledger %s: ok (schema %d, integrity %s)\n", o.ledger, r.SchemaVersion, r.Integrity)
	switch {
	case o.full:
		fmt.Fprintf(s.Out, "  full check      every event and row replayed; checkpoint recorded at row record %d\n", r.Checkpoint.Sequence)
	case r.Full:
		fmt.Fprintf(s.Out, "  full check      every event and row replayed (no checkpoint yet: ledger check --full records one)\n")
	default:
		fmt.Fprintf(s.Out, "  quick check     from the checkpoint at row record %d; ledger check --full replays everything\n", r.Checkpoint.Sequence)
	}
	if r.Head.Sequence == 0 {
		fmt.Fprintf(s.Out, "  chain head      (no events yet)\n")
	} else {
		fmt.Fprintf(s.Out, "  chain head      %d %s\n", r.Head.Sequence, r.Head.Digest)
	}
	if r.RecordHead.Sequence == 0 {
		fmt.Fprintf(s.Out, "  record head     (no bound rows yet)\n")
	} else {
		fmt.Fprintf(s.Out, "  record head     %d %s\n", r.RecordHead.Sequence, r.RecordHead.Digest)
	}
	fmt.Fprintf(s.Out, "  current stack   %s\n", cur)
	c := r.Counts
	fmt.Fprintf(s.Out, "  proposals %d, attempts %d, events %d, stacks %d, crowns %d, standing claims %d, discovery claims %d, settlement outcomes %d\n",
		c.Proposals, c.Attempts, c.Events, c.Stacks, c.Crowns, c.StandingClaims, c.DiscoveryClaims, c.Outcomes)
	fmt.Fprintf(s.Out, "  copy verdicts %d, intake events %d, lease events %d\n", c.CopyVerdicts, c.IntakeEvents, c.LeaseEvents)
	for _, st := range r.Stranded {
		fmt.Fprintf(s.Out, "  stranded: proposal %d is %s with no run evaluating it (%s); the next qualify --ledger reclaims it\n", st.Proposal, st.Status, strandedWhy(st))
	}
	for _, st := range r.Leased {
		fmt.Fprintf(s.Out, "  leased: proposal %d is %s, leased by %s until %s (attempt %d)\n", st.Proposal, st.Status, st.Lease.Holder, st.Lease.ExpiresAt.Format(time.RFC3339), st.Lease.Attempts)
	}
	return nil
}

// strandedWhy says why a proposal in flight has no live run.
func strandedWhy(f ledger.InFlight) string {
	switch f.Cause {
	case ledger.CauseExpired:
		return fmt.Sprintf("stuck past its lease: %s's lease expired at %s", f.Lease.Holder, f.Lease.ExpiresAt.Format(time.RFC3339))
	case ledger.CauseHolderGone:
		return fmt.Sprintf("%s, which held its lease until %s, is gone: a run died", f.Lease.Holder, f.Lease.ExpiresAt.Format(time.RFC3339))
	}
	return "no lease: a run died"
}
