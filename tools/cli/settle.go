package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/cacheon/engine/internal/identity"
	"github.com/cacheon/engine/internal/reject"
	"github.com/cacheon/engine/kernels/contribution"
	"github.com/cacheon/engine/settlement/apply"
	"github.com/cacheon/engine/settlement/ledger"
	"github.com/cacheon/engine/stacks/stack"
	"github.com/cacheon/engine/tools/cli/enginecli"
)

// settleOptions are the flags of settle.
type settleOptions struct {
	ledger    string
	workspace string
	init      string
	initTree  string
	json      bool
	deps      enginecli.BundleDeps
}

func newSettleCommand(s Streams) *cobra.Command {
	o := settleOptions{deps: enginecli.DefaultBundleDeps()}
	cmd := &cobra.Command{
		Use:   "settle --ledger DB [--workspace ROOT] [--init STACK.hcl --init-tree DIGEST] [--json]",
		Short: "Settle the ledger's qualified proposals: crown one, hold the rest",
		Long: `Settle takes every qualified proposal of the ledger that is not yet
settled, pairs its two passing qualifications (they must be independent
reproductions: equal reproduction identity, none of the seven authority
and evidence digests shared, audited with different seeds or with the
lanes exchanged), and plans them against the ledger's current evaluation
stack: one winner per incumbent (the greatest conservative speedup, ties
to the earliest finalized), HOLD stale_incumbent, conflict_lost or
incumbent_advanced for the others.

The winner's CROWN, RETIREMENT, NEUTRALIZATION, ADOPTION and
STACK_TRANSITION events, the new current stack (digest, tree digest and
HCL rendering), the crown, its standing claim and every row's outcome are
committed in one ledger transaction; a held proposal moves to held with
its reason and must requalify. The new stack is the current one with the
winner's transition applied, its crowned entry sourced from the ledger's
immutable publication of the bytes (content hash pinned), and it must
assemble to the candidate stack both qualifications measured. Any refusal
or failure writes nothing: the old stack stays current.

ROOT is the repository the current stack's //labels resolve against
(default: found above the working directory). --init records STACK.hcl as
the ledger's first evaluation stack (tree digest DIGEST, as printed by
cacheon stack materialize) when the ledger has none.

Then run cacheon stack export to rewrite the incumbent file from the
ledger. See docs/validator-guide/settlement.md.

With nothing queued it commits nothing and says why: each proposal
evaluation has not decided, with its status and last reason (a speed
verdict under the uncalibrated default policy leaves a proposal in
no_decision with reason uncalibrated_policy; calibrate the lanes with
cacheon qualify calibrate and qualify again). --json lists them under
"undecided".

Exit status: 0 when a settlement was committed or nothing was queued; 2
when the ledger's contents are refused as settlement input (the reason
names the rule and the proposal); 1 when DB is missing or another process
is writing it.`,
		Example: `  cacheon settle --ledger ledger.db
  cacheon settle --ledger ledger.db --json
  cacheon settle --ledger ledger.db --init stacks/incumbent.hcl --init-tree $TREE`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runSettle(cmd.Context(), s, o)
		},
	}
	cmd.Flags().StringVar(&o.ledger, "ledger", "", "ledger database file (required)")
	cmd.Flags().StringVar(&o.workspace, "workspace", "", "repository root that the stack's //labels resolve against")
	cmd.Flags().StringVar(&o.init, "init", "", "record this stack file as the first evaluation stack (only while the ledger has none)")
	cmd.Flags().StringVar(&o.initTree, "init-tree", "", "the tree digest of the --init stack (cacheon stack materialize prints it)")
	cmd.Flags().BoolVar(&o.json, "json", false, "print one JSON document")
	_ = cmd.MarkFlagRequired("ledger")
	return cmd
}

// settleJSON is the --json document of settle.
type settleJSON struct {
	Ledger string `json:"ledger"`
	// Initialized is the stack --init recorded, if any.
	Initialized *ledger.Stack `json:"initialized,omitempty"`
	*apply.Result
	// Events shadows Result.Events to carry each event's body, the
	// canonical JSON its digest is computed over.
	Events     []settleEventJSON `json:"events"`
	PlanDigest string            `json:"plan_digest"`
}

type settleEventJSON struct {
	Sequence  int64           `json:"sequence"`
	EventType string          `json:"event_type"`
	Digest    string          `json:"digest"`
	Body      json.RawMessage `json:"body"`
}

func runSettle(ctx context.Context, s Streams, o settleOptions) error {
	if (o.init == "") != (o.initTree == "") {
		return reject.Errorf("--init and --init-tree go together")
	}
	digests, err := enginecli.PatcherDigests("")
	if err != nil {
		return err
	}
	payload := contribution.PayloadOptions{Closure: o.deps.Closure, CUDACheck: o.deps.CUDACheck, PatcherDigests: digests}
	// Settlement writes crowns and claims: never onto a ledger that
	// "ledger check" refuses.
	l, err := openWritingLedger(ctx, o.ledger, "settlement", ledger.Options{})
	if err != nil {
		return err
	}
	defer l.Close()
	doc := settleJSON{Ledger: o.ledger}
	if o.init != "" {
		if doc.Initialized, err = initStack(ctx, l, o, payload); err != nil {
			return err
		}
	}
	res, err := apply.Settle(ctx, l, apply.Options{Workspace: o.workspace, Payload: payload})
	if err != nil {
		return fmt.Errorf("settle %s: %w", o.ledger, err)
	}
	doc.Result = res
	doc.Events = []settleEventJSON{}
	for _, e := range res.Events {
		doc.Events = append(doc.Events, settleEventJSON{Sequence: e.Sequence, EventType: e.EventType, Digest: e.Digest, Body: e.Body})
	}
	if res.Plan != nil {
		doc.PlanDigest = res.Plan.Digest.String()
	}
	if o.json {
		return enginecli.WriteJSON(s.Out, doc)
	}
	if doc.Initialized != nil {
		fmt.Fprintf(s.Out, "initial stack %s (tree %s) recorded from %s\n", doc.Initialized.StackDigest, doc.Initialized.TreeDigest, o.init)
	}
	if !res.Committed {
		writeNothingToCrown(s.Out, res.Undecided)
		if res.Stack != nil {
			fmt.Fprintf(s.Out, "incumbent %s (tree %s)\n", res.Stack.StackDigest, res.Stack.TreeDigest)
		}
		return nil
	}
	fmt.Fprintf(s.Out, "settlement plan %s over %d proposals\n", doc.PlanDigest, len(res.Rows))
	for _, r := range res.Rows {
		fmt.Fprintf(s.Out, "  proposal %-5d %-16s %-19s %s at %d/%d/%d, speedup %s\n", r.ProposalID, r.Outcome, r.Reason,
			r.TargetID, r.Finalized.Block, r.Finalized.EventIndex, r.Finalized.SubeventIndex, r.Speedup)
	}
	for _, e := range res.Events {
		fmt.Fprintf(s.Out, "event %d %-16s %s\n", e.Sequence, e.EventType, e.Digest)
	}
	if res.Winner == 0 {
		fmt.Fprintf(s.Out, "no crown: the incumbent stays %s\n", res.Stack.StackDigest)
		return nil
	}
	fmt.Fprintf(s.Out, "crowned proposal %d: new incumbent %s (tree %s)\n", res.Winner, res.Stack.StackDigest, res.Stack.TreeDigest)
	fmt.Fprintf(s.Out, "run `cacheon stack export --ledger %s --out stacks/incumbent.hcl` to write it\n", o.ledger)
	return nil
}

// writeNothingToCrown says why a settlement had nothing to crown: no
// qualified proposal was queued, and each proposal evaluation has not
// decided, with its status and the reason it was left there (an
// uncalibrated speed verdict, an infrastructure NO_DECISION, a hold).
func writeNothingToCrown(w io.Writer, undecided []apply.Undecided) {
	if len(undecided) == 0 {
		fmt.Fprintf(w, "nothing to crown: no qualified proposal waits for settlement, and no proposal waits for evaluation\n")
		return
	}
	fmt.Fprintf(w, "nothing to crown: no qualified proposal waits for settlement\n")
	for _, u := range undecided {
		fmt.Fprintf(w, "proposal %d is %s", u.ProposalID, u.Status)
		if u.Reason != "" && u.Reason != string(u.Status) {
			fmt.Fprintf(w, " (%s)", u.Reason)
		}
		fmt.Fprintf(w, "\n")
	}
}

// initStack records the stack file at o.init as the ledger's first
// evaluation stack.
func initStack(ctx context.Context, l *ledger.Ledger, o settleOptions, payload contribution.PayloadOptions) (*ledger.Stack, error) {
	if err := identity.CheckDigest("--init-tree", o.initTree, false); err != nil {
		return nil, reject.Wrap(err)
	}
	data, err := os.ReadFile(o.init)
	if err != nil {
		return nil, err
	}
	ws := o.workspace
	if ws == "" {
		if ws, err = stack.FindWorkspace(filepath.Dir(o.init)); err != nil {
			return nil, fmt.Errorf("%s names //labels: %w (pass --workspace ROOT)", o.init, err)
		}
	}
	digest, _, err := apply.Assemble(data, ws, payload, "")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", o.init, err)
	}
	return l.InitStack(ctx, ledger.Stack{StackDigest: digest, TreeDigest: o.initTree, HCL: string(data)})
}
