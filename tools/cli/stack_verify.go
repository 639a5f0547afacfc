package cli

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/cacheon/engine/internal/reject"
	"github.com/cacheon/engine/stacks/materialize"
	"github.com/cacheon/engine/tools/cli/enginecli"
)

// stackVerifyOptions are the inputs of stack verify.
type stackVerifyOptions struct {
	dir  string // the engine tree
	json bool
}

func newStackVerifyCommand(s Streams) *cobra.Command {
	var o stackVerifyOptions
	cmd := &cobra.Command{
		Use:   "verify DIR",
		Short: "Check a materialized engine tree and print its digest",
		Long: `Verify reopens the engine tree at DIR as a consumer does before loading
it: every file 0444 and directory 0755 with times at the epoch, no links
or special files, no empty directory, a tree metadata file in canonical
form whose contribution rows recompute (namespace = selected delta) and
whose file inventory equals the tree, and a runtime manifest exactly when
the stack has contributions. It prints the stack digest the tree was
built from and the tree digest.

Exit codes: 0 the tree is well-formed; 2 it is not; 1 an I/O error.`,
		Example: `  cacheon stack verify /tmp/engine
  cacheon stack verify --json bazel-bin/stacks/incumbent`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.dir = args[0]
			return runStackVerify(cmd.Context(), s, o)
		},
	}
	cmd.Flags().BoolVar(&o.json, "json", false, "print one JSON document")
	return cmd
}

func runStackVerify(_ context.Context, s Streams, o stackVerifyOptions) error {
	if _, err := os.Stat(o.dir); err != nil {
		return err
	}
	res, err := materialize.Verify(o.dir)
	if err != nil {
		return reject.Errorf("%s: %w", o.dir, err)
	}
	if o.json {
		return enginecli.WriteJSON(s.Out, enginecli.TreeDoc(o.dir, "", res))
	}
	fmt.Fprintf(s.Out, "stack %s\ntree  %s\n", res.StackDigest, res.TreeDigest)
	return nil
}
