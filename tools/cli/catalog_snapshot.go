package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cacheon/engine/tools/cli/enginecli"
)

// catalogSnapshotOptions are the flags and arguments of catalog snapshot.
type catalogSnapshotOptions struct {
	args []string
}

func newCatalogSnapshotCommand(s Streams) *cobra.Command {
	var o catalogSnapshotOptions
	cmd := &cobra.Command{
		Use:   "snapshot [FILE]",
		Short: "Print the canonical catalog snapshot",
		Long: `Print the canonical JSON of the catalog snapshot of FILE, or of the default
catalog: the exact bytes whose H("cacheon.target-catalog", ·) is the catalog
digest. Stacks carry this snapshot so a reader can check their catalog
without the HCL.`,
		Example: `  cacheon catalog snapshot > catalog.snapshot.json
  cacheon catalog snapshot | cacheon digest --domain cacheon.target-catalog`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.args = args
			return runCatalogSnapshot(cmd.Context(), s, o)
		},
	}
	return cmd
}

func runCatalogSnapshot(_ context.Context, s Streams, o catalogSnapshotOptions) error {
	l, err := enginecli.LoadValidCatalog(o.args, s.Err)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(s.Out, "%s\n", l.Catalog.Snapshot())
	return err
}
