package cli

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cacheon/engine/settlement/ledger"
	"github.com/cacheon/engine/tools/cli/enginecli"
)

// intakeClearCopyOptions are the flags of intake clear-copy.
type intakeClearCopyOptions struct {
	ledger   string
	proposal int64
	reason   string
	json     bool
}

func newIntakeClearCopyCommand(s Streams) *cobra.Command {
	var o intakeClearCopyOptions
	cmd := &cobra.Command{
		Use:   "clear-copy --ledger DB --proposal ID --reason TEXT [--json]",
		Short: "Clear a wrong copy verdict of intake before settlement",
		Long: `Clear-copy corrects a copy verdict an operator found wrong: proposal ID,
failed at intake as copy_of:..., is returned to published (its bytes were
published at intake), from where it is screened like any other proposal.

The correction is durable and accountable: a COPY_CLEARED event naming the
proposal, its content hash, the verdict cleared, the comparison's account
and TEXT (one line) is chained into the ledger's intake hash chain, and
the proposal's transition back to published names that event
(copy_cleared:<sequence>).

Clearing rebinds the proposal's rows into the ledger's row record chain,
rows the quick check skips while the proposal is failed. So before it
writes, clear-copy replays the whole history as "ledger check --full" does
and records a checkpoint: a ledger with a row edited by hand anywhere is
refused (exit 2, naming the row), and the edit is never bound.

It is refused (exit 2) when the proposal has no standing copy verdict,
and once settlement has decided the proposal or any proposal at a later
finalized position at its arena and target: a verdict is corrected before
settlement or not at all. See docs/reference/anti-copy.md.`,
		Example: `  cacheon intake clear-copy --ledger ledger.db --proposal 7 --reason "shared vendor helper, reviewed by ops"`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runIntakeClearCopy(cmd.Context(), s, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.ledger, "ledger", "", "ledger database file (required)")
	f.Int64Var(&o.proposal, "proposal", 0, "the proposal whose copy verdict is wrong (required)")
	f.StringVar(&o.reason, "reason", "", "why the verdict is wrong, one line (required)")
	f.BoolVar(&o.json, "json", false, "print one JSON document")
	for _, name := range []string{"ledger", "proposal", "reason"} {
		_ = cmd.MarkFlagRequired(name)
	}
	return cmd
}

// intakeClearCopyJSON is the --json document of intake clear-copy.
type intakeClearCopyJSON struct {
	Proposal *ledger.Proposal `json:"proposal"`
	Event    ledger.Event     `json:"event"`
	Body     json.RawMessage  `json:"body"`
}

func runIntakeClearCopy(ctx context.Context, s Streams, o intakeClearCopyOptions) error {
	l, err := openWritingLedger(ctx, o.ledger, "copy clearing", ledger.Options{})
	if err != nil {
		return err
	}
	defer l.Close()
	// ClearCopy replays the whole history and records a checkpoint
	// before it writes: a hand edit of the rows it rebinds is refused
	// here, never bound.
	p, ev, err := l.ClearCopy(ctx, o.proposal, o.reason)
	if err != nil {
		return err
	}
	if o.json {
		return enginecli.WriteJSON(s.Out, intakeClearCopyJSON{Proposal: p, Event: ev, Body: json.RawMessage(ev.Body)})
	}
	fmt.Fprintf(s.Out, "proposal %d at %s: %s (%s)\n", p.ID, p.Position, p.Status, p.Reason)
	fmt.Fprintf(s.Out, "  intake event %d %s %s\n", ev.Sequence, ev.EventType, ev.Digest)
	return nil
}
