package enginecli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cacheon/engine/internal/identity"
	"github.com/cacheon/engine/models"
)

// modelProvisionOptions are the flags and arguments of model provision.
type modelProvisionOptions struct {
	out, expected string
	workers       int
	asJSON        bool
	args          []string
}

func newModelProvisionCommand(s Streams) *cobra.Command {
	var o modelProvisionOptions
	cmd := &cobra.Command{
		Use:   "provision DIR [--out RECEIPT] [--expected-content-digest D] [--workers N] [--json]",
		Short: "Seal a model directory into a provision receipt",
		Long: `Walk the model directory DIR, hash every file and publish its provision
receipt: {"type": "cacheon.model-provision", "schema_version": 1,
"content_digest": ..., "files": [{"path", "size", "sha256"}]} with files
sorted by path. Prints the content digest H("cacheon.model-content",
{"files": ...}) and the receipt digest
H("cacheon.model-provision-receipt", receipt).

The tree must be concrete. Rejected (exit 2), naming the path: symbolic
links (never followed), hard links (a file with more than one link),
FIFOs, sockets and devices, any ".cache" path component, two paths that
differ only by case, an empty tree, and a file or tree that changes while
it is hashed (each file's status is compared before and after reading,
through its path and its open descriptor, and the tree is walked twice).

The receipt is written outside the model, by default beside DIR as
model-provision-sha256-<receipt digest>.json; a destination inside DIR is
refused. It is written atomically and read-only (0444). An identical
receipt already there is accepted; a different file is never replaced.

--expected-content-digest is a hard precondition: a tree with another
content digest is rejected and no receipt is written. --workers files are
hashed at once (default 4); the receipt does not depend on it.`,
		Example: `  cacheon model provision /models/llama-tiny
  cacheon model provision /models/llama-tiny --out /receipts/llama-tiny.json
  cacheon model provision /models/llama-tiny --workers 16 \
      --expected-content-digest 3f2a…(64 hex) --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.args = args
			return runModelProvision(cmd.Context(), s, o)
		},
	}
	cmd.Flags().StringVar(&o.out, "out", "", "receipt path (default: beside DIR, named by the content digest)")
	cmd.Flags().StringVar(&o.expected, "expected-content-digest", "", "reject the tree unless its content digest is this (64 hex)")
	cmd.Flags().IntVar(&o.workers, "workers", models.DefaultWorkers, "files hashed concurrently")
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print the result as JSON")
	return cmd
}

func runModelProvision(_ context.Context, s Streams, o modelProvisionOptions) error {
	root := o.args[0]
	if o.expected != "" {
		if err := identity.CheckDigest("--o.expected-content-digest", o.expected, false); err != nil {
			return err
		}
	}
	// A refused destination is cheap to find o.out before hashing
	// a large model.
	if o.out != "" {
		if err := models.CheckReceiptDestination(o.out, root); err != nil {
			return err
		}
	}
	r, err := models.Provision(root, models.Options{
		Workers:               o.workers,
		ExpectedContentDigest: o.expected,
		Progress:              ModelProgress(s.Err),
	})
	if err != nil {
		return err
	}
	dest := o.out
	if dest == "" {
		if dest, err = models.DefaultReceiptPath(root, r); err != nil {
			return err
		}
	}
	if err := models.WriteReceipt(dest, root, r); err != nil {
		return err
	}
	view, err := NewModelReceiptView(root, dest, r)
	if err != nil {
		return err
	}
	if o.asJSON {
		return WriteJSON(s.Out, view)
	}
	fmt.Fprintf(s.Out, "content digest  %s\n", view.ContentDigest)
	fmt.Fprintf(s.Out, "receipt digest  %s\n", view.ReceiptDigest)
	fmt.Fprintf(s.Out, "receipt         %s\n", dest)
	fmt.Fprintf(s.Out, "files           %d (%d bytes)\n", view.FileCount, view.TotalBytes)
	return nil
}
