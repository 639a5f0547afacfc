package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cacheon/engine/settlement/apply"
	"github.com/cacheon/engine/settlement/ledger"
)

// stackExportOptions are the flags of stack export.
type stackExportOptions struct {
	ledger string
	out    string
	json   bool
}

func newStackExportCommand(s Streams) *cobra.Command {
	var o stackExportOptions
	cmd := &cobra.Command{
		Use:   "export --ledger DB --out FILE [--json]",
		Short: "Write the ledger's current evaluation stack as a stack file",
		Long: `Export writes the HCL rendering of the settlement ledger's current
evaluation stack to FILE, atomically (a reader sees the old file or the
new one, never a part). The ledger is the authority and the file a
rendering of it: settle commits first and the export follows, so a crash
between them leaves the file stale, never the ledger, and exporting again
repairs it.

After a crown the crowned entry's source is the ledger's immutable
publication of the crowned bytes (an absolute directory beside the
ledger, its content hash pinned by artifact_digest), never the path the
miner's bundle came from; every other entry is the incumbent's as it was.
cacheon stack digest FILE and cacheon stack materialize FILE read it
directly. The Bazel rule (bazel build //stacks:incumbent) resolves
contribution sources by label only, so it builds the exported file only
while every entry is a label: a crowned entry sourced from the ledger's
publication is materialized with cacheon stack materialize.

Exit status: 0 when written; 2 when the ledger has no current stack or is
refused; 1 when DB is missing, another process is writing it, or FILE
cannot be written.`,
		Example: `  cacheon stack export --ledger ledger.db --out stacks/incumbent.hcl
  cacheon stack export --ledger ledger.db --out stacks/incumbent.hcl --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runStackExport(cmd.Context(), s, o)
		},
	}
	cmd.Flags().StringVar(&o.ledger, "ledger", "", "ledger database file (required)")
	cmd.Flags().StringVar(&o.out, "out", "", "stack file to write (required)")
	cmd.Flags().BoolVar(&o.json, "json", false, "print one JSON document")
	_ = cmd.MarkFlagRequired("ledger")
	_ = cmd.MarkFlagRequired("out")
	return cmd
}

// stackExportJSON is the --json document of stack export.
type stackExportJSON struct {
	Out           string `json:"out"`
	StackDigest   string `json:"stack_digest"`
	TreeDigest    string `json:"tree_digest"`
	EventSequence int64  `json:"event_sequence"`
}

func runStackExport(ctx context.Context, s Streams, o stackExportOptions) error {
	l, err := ledger.Open(ctx, o.ledger, ledger.Options{})
	if err != nil {
		return err
	}
	defer l.Close()
	st, err := apply.Export(ctx, l, o.out)
	if err != nil {
		return err
	}
	if o.json {
		return writeJSON(s.Out, stackExportJSON{Out: o.out, StackDigest: st.StackDigest, TreeDigest: st.TreeDigest, EventSequence: st.EventSequence})
	}
	fmt.Fprintf(s.Out, "wrote %s: stack %s (tree %s)", o.out, st.StackDigest, st.TreeDigest)
	if st.EventSequence == 0 {
		fmt.Fprintf(s.Out, ", the ledger's initial stack\n")
	} else {
		fmt.Fprintf(s.Out, ", made current by settlement event %d\n", st.EventSequence)
	}
	return nil
}
