package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/cacheon/engine/internal/reject"
	"github.com/cacheon/engine/release/intoto"
	"github.com/cacheon/engine/release/key"
	"github.com/cacheon/engine/release/verify"
)

// releaseLinkOptions are the flags and arguments of release link.
type releaseLinkOptions struct {
	step, keyPath, trust, out string
	insecure                  bool
	args                      []string
}

func newReleaseLinkCommand(s Streams) *cobra.Command {
	var o releaseLinkOptions
	cmd := &cobra.Command{
		Use:   "link --step STEP --key KEY --trust PUB --out DIR LAYOUT|REF",
		Short: "Sign your in-toto link for one step of a release's supply chain",
		Long: `Verify a release against the release key (--trust), derive what STEP
consumed and produced for it, and write the in-toto link signed with your
functionary key into DIR as <step>.<keyid>.link. Steps: qualify (each
validator signs the crowned payloads it qualified), review (the
integration reviewer: payloads in, reviewed source and records out),
materialize and build (the builder), sign (the release key).`,
		Example: `  cacheon release link --step qualify --key validator-a.key --trust release.pub --out links release-1.0`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.args = args
			return runReleaseLink(cmd.Context(), s, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.step, "step", "", "supply-chain step: qualify, review, materialize, build or sign (required)")
	f.StringVar(&o.keyPath, "key", "", "your functionary private key, PKCS#8 PEM (required)")
	f.StringVar(&o.trust, "trust", "", "release public key to verify the release with first (required)")
	f.StringVar(&o.out, "out", "", "directory for the link (required)")
	f.BoolVar(&o.insecure, "insecure", false, "use plain HTTP for the registry")
	for _, r := range []string{"step", "key", "trust", "out"} {
		cmd.MarkFlagRequired(r)
	}
	return cmd
}

func runReleaseLink(ctx context.Context, s Streams, o releaseLinkOptions) error {
	policy, err := key.LoadPolicy(o.trust)
	if err != nil {
		return err
	}
	st, err := openRelease(ctx, o.args[0], o.insecure)
	if err != nil {
		return err
	}
	rel, err := verify.Run(st, verify.Options{Policy: policy})
	if err != nil {
		return reportVerification(s, o.args[0], rel.Report, err, false)
	}
	priv, err := os.ReadFile(o.keyPath)
	if err != nil {
		return err
	}
	mb, name, err := intoto.Link(o.step, rel, priv)
	if err != nil {
		return reject.Wrap(err)
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	p := filepath.Join(o.out, name)
	if err := mb.Dump(p); err != nil {
		return err
	}
	fmt.Fprintf(s.Out, "%s\n", p)
	return nil
}
