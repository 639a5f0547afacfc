package cli

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/cacheon/engine/internal/reject"
	"github.com/cacheon/engine/kernels/bundle"
)

// hashOptions are the flags and arguments of hash.
type hashOptions struct {
	committed bool
	args      []string
}

func newHashCommand(s Streams) *cobra.Command {
	var o hashOptions
	cmd := &cobra.Command{
		Use:   "hash [--committed] DIR",
		Short: "Print the content hash of a contribution bundle",
		Long: `Print the bundle content hash of DIR: the identity a proposal is committed
under. Every regular file below DIR is hashed in path-component order with
its relative path and length; __pycache__ and .git trees, .pyc/.pyo files
and names starting with "._" are left out. Modes, mtimes and the name of
DIR do not matter.

DIR is read as intake reads a bundle, before any content: the intake limits
apply (at most 4,096 files, 1,024 directories, 16 MiB per file, 8 MiB per
.py/.cu/.cuh/.patch/.diff/.toml/.json file and 32 MiB of them, 256 MiB in
all), and symbolic links, special files, non-UTF-8 names and paths that
collide after Unicode NFC normalization or case folding reject DIR. A file
that changes while it is hashed, or is replaced by a FIFO or device,
rejects it too; no file is read past the size the walk saw.

--committed leaves out the top-level validator carrier receipt
(.cacheon-native-artifact.json).`,
		Example: `  cacheon hash kernels/contributions/silu_and_mul_torch
  cacheon hash --committed ./my-bundle`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.args = args
			return runHash(cmd.Context(), s, o)
		},
	}
	cmd.Flags().BoolVar(&o.committed, "committed", false, "exclude the top-level carrier receipt")
	return cmd
}

func runHash(_ context.Context, s Streams, o hashOptions) error {
	dir := o.args[0]
	info, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if !info.IsDir() {
		return reject.Errorf("%s: not a directory", dir)
	}
	tree, err := bundle.ReadTree(dir)
	if err != nil {
		return err // a bundle.ErrInvalid class is a rejection already
	}
	d, err := tree.ContentHash(o.committed)
	if err != nil {
		// An empty bundle, an unreadable file or a file changing
		// under the hash all reject the bundle as given.
		return reject.Wrap(err)
	}
	fmt.Fprintln(s.Out, d)
	return nil
}
