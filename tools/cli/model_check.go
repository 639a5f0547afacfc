package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cacheon/engine/internal/reject"
	"github.com/cacheon/engine/models"
	"github.com/cacheon/engine/tools/cli/enginecli"
)

// modelCheckOptions are the flags and arguments of model check.
type modelCheckOptions struct {
	receiptPath string
	workers     int
	asJSON      bool
	args        []string
}

func newModelCheckCommand(s Streams) *cobra.Command {
	var o modelCheckOptions
	cmd := &cobra.Command{
		Use:   "check DIR --receipt RECEIPT [--workers N] [--json]",
		Short: "Verify a model directory against its provision receipt",
		Long: `Re-provision the model directory DIR under the same rules as "model
provision" and compare it with RECEIPT, file by file. The receipt itself is
validated first: closed schema, sorted unique paths, well-formed hashes and
a content digest that matches its files.

Exit 0 when every file matches; exit 2 when a file was added, removed or
changed (each one is listed), when the tree breaks a sealing rule (a
symbolic link, hard link, special file or .cache path, named in the error)
or when the receipt is invalid.`,
		Example: `  cacheon model check /models/llama-tiny \
      --receipt /models/model-provision-sha256-3f2a…json
  cacheon model check /models/llama-tiny --receipt receipt.json --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.args = args
			return runModelCheck(cmd.Context(), s, o)
		},
	}
	cmd.Flags().StringVar(&o.receiptPath, "receipt", "", "provision receipt to verify against (required)")
	cmd.Flags().IntVar(&o.workers, "workers", models.DefaultWorkers, "files hashed concurrently")
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print the result as JSON")
	cmd.MarkFlagRequired("receipt")
	return cmd
}

func runModelCheck(_ context.Context, s Streams, o modelCheckOptions) error {
	root := o.args[0]
	want, err := models.ReadReceipt(o.receiptPath)
	if err != nil {
		return err
	}
	got, err := models.Check(root, want, models.Options{Workers: o.workers, Progress: enginecli.ModelProgress(s.Err)})
	var mismatch *models.MismatchError
	if err != nil && !errors.As(err, &mismatch) {
		return err
	}
	view, verr := enginecli.NewModelReceiptView(root, o.receiptPath, got)
	if verr != nil {
		return verr
	}
	match := mismatch == nil
	view.Match = &match
	if mismatch != nil {
		view.Differences = mismatch.Differences
	}
	if o.asJSON {
		if err := enginecli.WriteJSON(s.Out, view); err != nil {
			return err
		}
		if !match {
			return enginecli.AlreadyReported(reject.ErrRejected)
		}
		return nil
	}
	if !match {
		for _, d := range mismatch.Differences {
			fmt.Fprintln(s.Out, d)
		}
		return reject.Errorf("%s does not match receipt %s: %d file(s) differ", root, o.receiptPath, len(mismatch.Differences))
	}
	fmt.Fprintf(s.Out, "ok: %s matches %s\n", root, o.receiptPath)
	fmt.Fprintf(s.Out, "content digest  %s\n", view.ContentDigest)
	fmt.Fprintf(s.Out, "receipt digest  %s\n", view.ReceiptDigest)
	fmt.Fprintf(s.Out, "files           %d (%d bytes)\n", view.FileCount, view.TotalBytes)
	return nil
}
