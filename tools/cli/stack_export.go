package cli

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/cacheon/engine/kernels/contribution"
	"github.com/cacheon/engine/settlement/apply"
	"github.com/cacheon/engine/settlement/ledger"
	"github.com/cacheon/engine/tools/cli/enginecli"
)

// stackExportOptions are the flags of stack export.
type stackExportOptions struct {
	ledger    string
	out       string
	workspace string
	json      bool
	deps      enginecli.BundleDeps
}

func newStackExportCommand(s Streams) *cobra.Command {
	o := stackExportOptions{deps: enginecli.DefaultBundleDeps()}
	cmd := &cobra.Command{
		Use:   "export --ledger DB (--out FILE | --workspace DIR) [--json]",
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
directly.

--workspace DIR makes the crowned incumbent buildable by Bazel in the
repository at DIR instead (bazel build //stacks:incumbent): each crowned
entry's bundle is copied from the ledger's publication to
kernels/crowned/c_<16 hex of its content hash> (declared in
kernels/crowned/BUILD.bazel) and checked against the content hash the
stack pins; stacks/incumbent.hcl names it by label, and
stacks/incumbent_contributions.bzl lists every contribution label for
the incumbent rule. The written stack must assemble to the ledger's
stack digest; identities come from the manifest, not from where the
bytes sit.

Exit status: 0 when written; 2 when the ledger has no current stack or is
refused; 1 when DB is missing, another process is writing it, or FILE
cannot be written.`,
		Example: `  cacheon stack export --ledger ledger.db --out /tmp/incumbent.hcl
  cacheon stack export --ledger ledger.db --workspace . && bazel build //stacks:incumbent
  cacheon stack export --ledger ledger.db --workspace . --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runStackExport(cmd.Context(), s, o)
		},
	}
	cmd.Flags().StringVar(&o.ledger, "ledger", "", "ledger database file (required)")
	cmd.Flags().StringVar(&o.out, "out", "", "stack file to write")
	cmd.Flags().StringVar(&o.workspace, "workspace", "", "repository root to make the incumbent buildable in (stacks/incumbent.hcl, its .bzl list, kernels/crowned)")
	cmd.Flags().BoolVar(&o.json, "json", false, "print one JSON document")
	_ = cmd.MarkFlagRequired("ledger")
	cmd.MarkFlagsOneRequired("out", "workspace")
	cmd.MarkFlagsMutuallyExclusive("out", "workspace")
	return cmd
}

// stackExportJSON is the --json document of stack export.
type stackExportJSON struct {
	Out           string            `json:"out"`
	StackDigest   string            `json:"stack_digest"`
	TreeDigest    string            `json:"tree_digest"`
	EventSequence int64             `json:"event_sequence"`
	Labels        []string          `json:"labels"`  // --workspace: the incumbent's contribution labels
	Crowned       map[string]string `json:"crowned"` // --workspace: crowned label -> content hash
}

func runStackExport(ctx context.Context, s Streams, o stackExportOptions) error {
	l, err := openCheckedLedger(ctx, o.ledger, "stack export")
	if err != nil {
		return err
	}
	defer l.Close()
	doc := stackExportJSON{Out: o.out, Labels: []string{}, Crowned: map[string]string{}}
	var st *ledger.Stack
	if o.workspace != "" {
		ex, err := apply.ExportWorkspace(ctx, l, o.workspace, contribution.PayloadOptions{Closure: o.deps.Closure, CUDACheck: o.deps.CUDACheck})
		if err != nil {
			return err
		}
		st, doc.Out, doc.Labels, doc.Crowned = ex.Stack, filepath.Join(o.workspace, ex.StackFile), ex.Labels, ex.Crowned
	} else if st, err = apply.Export(ctx, l, o.out); err != nil {
		return err
	}
	doc.StackDigest, doc.TreeDigest, doc.EventSequence = st.StackDigest, st.TreeDigest, st.EventSequence
	if o.json {
		return enginecli.WriteJSON(s.Out, doc)
	}
	o.out = doc.Out
	for label, content := range doc.Crowned {
		fmt.Fprintf(s.Out, "crowned %s: copied from the ledger's publication %s\n", label, content)
	}
	fmt.Fprintf(s.Out, "wrote %s: stack %s (tree %s)", o.out, st.StackDigest, st.TreeDigest)
	if st.EventSequence == 0 {
		fmt.Fprintf(s.Out, ", the ledger's initial stack\n")
	} else {
		fmt.Fprintf(s.Out, ", made current by settlement event %d\n", st.EventSequence)
	}
	return nil
}
