package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cacheon/engine/release/image"
	"github.com/cacheon/engine/tools/reject"
)

// releaseBaseOptions are the flags and arguments of release base.
type releaseBaseOptions struct {
	platform, out string
	jsonOut       bool
	args          []string
}

func newReleaseBaseCommand(s Streams) *cobra.Command {
	var o releaseBaseOptions
	cmd := &cobra.Command{
		Use:   "base --out DIR [--platform os/arch]",
		Short: "Write the project's minimal (scratch) base image as an OCI layout",
		Long: `Write an empty base image (no layers, an OCI config naming only the
platform) as a new OCI image layout and print its manifest digest. Its
digest depends on the platform alone, so it can be pinned like any base.

Production releases pin a real base (a CUDA/PyTorch image) the same way:
save it as an OCI layout (for example "crane pull --format=oci IMAGE DIR"
on a machine that can reach the registry), and pass --base-layout DIR
--base-digest sha256:... to release build.`,
		Example: `  cacheon release base --out base-layout
  cacheon release base --platform linux/arm64 --out base-arm64`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.args = args
			return runReleaseBase(cmd.Context(), s, o)
		},
	}
	cmd.Flags().StringVar(&o.platform, "platform", "linux/amd64", "platform os/arch[/variant]")
	cmd.Flags().StringVar(&o.out, "out", "", "new OCI layout directory (required)")
	cmd.Flags().BoolVar(&o.jsonOut, "json", false, "print one JSON document")
	cmd.MarkFlagRequired("out")
	return cmd
}

func runReleaseBase(_ context.Context, s Streams, o releaseBaseOptions) error {
	p, err := image.ParsePlatform(o.platform)
	if err != nil {
		return reject.Wrap(err)
	}
	d, err := image.WriteScratchLayout(o.out, p)
	if err != nil {
		return err
	}
	if o.jsonOut {
		return writeJSON(s.Out, map[string]any{"format_version": 1, "layout": o.out, "digest": d.String(), "o.platform": p.String()})
	}
	fmt.Fprintln(s.Out, d)
	return nil
}
