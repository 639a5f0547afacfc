package cli

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/cacheon/engine/tools/bundlehash"
)

func newHashCommand(s Streams) *cobra.Command {
	var committed bool
	cmd := &cobra.Command{
		Use:   "hash [--committed] DIR",
		Short: "Print the content hash of a contribution bundle",
		Long: `Print the bundle content hash of DIR: the identity a proposal is committed
under. Every regular file below DIR is hashed in path-component order with
its relative path and length; symbolic links and special files are skipped
and never followed, as are __pycache__ and .git trees, .pyc/.pyo files and
names starting with "._". Modes, mtimes and the name of DIR do not matter.

--committed leaves out the top-level validator carrier receipt
(.cacheon-native-artifact.json).`,
		Example: `  cacheon hash kernels/silu_and_mul_torch
  cacheon hash --committed ./my-bundle`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			info, err := os.Stat(dir)
			if err != nil {
				return err
			}
			if !info.IsDir() {
				return Rejected(fmt.Errorf("%s: not a directory", dir))
			}
			hash := bundlehash.ContentHash
			if committed {
				hash = bundlehash.CommittedContentHash
			}
			d, err := hash(dir)
			if err != nil {
				// An empty bundle, an unreadable file or a file changing
				// under the hash all reject the bundle as given.
				return Rejected(err)
			}
			fmt.Fprintln(s.Out, d)
			return nil
		},
	}
	cmd.Flags().BoolVar(&committed, "committed", false, "exclude the top-level carrier receipt")
	return cmd
}
