package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	toto "github.com/in-toto/in-toto-golang/in_toto"
	"github.com/spf13/cobra"

	"github.com/cacheon/engine/internal/atomicwrite"
	"github.com/cacheon/engine/internal/reject"
	"github.com/cacheon/engine/release/intoto"
	"github.com/cacheon/engine/release/key"
	"github.com/cacheon/engine/release/verify"
)

// releaseLinkOptions are the flags and arguments of release link.
type releaseLinkOptions struct {
	step, keyPath, trust, out string
	reports                   []string
	insecure                  bool
	args                      []string
}

func newReleaseLinkCommand(s Streams) *cobra.Command {
	var o releaseLinkOptions
	cmd := &cobra.Command{
		Use:   "link --step STEP --key KEY --trust PUB [--report FILE...] --out DIR LAYOUT|REF",
		Short: "Sign your in-toto link for one step of a release's supply chain",
		Long: `Verify a release against the release key (--trust), derive what STEP
consumed and produced for it, and write the in-toto link signed with your
functionary key into DIR as <step>.<keyid>.link. Steps: qualify (each
validator signs the crowned payloads and the qualification reports the
crown rests on), review (the integration reviewer: payloads and those
reports in, reviewed source and records out), materialize and build (the
builder), sign (the release key).

The qualify and review links name the qualification reports (--report,
at least two passing cacheon qualify reports, one the reproduction of
another on exchanged lanes) by file name and SHA-256, and the
evidence artifacts each references by digest; the layout requires the
review to consume exactly what the qualify links produced. Both
validators' qualify links name the same reports (in-toto's threshold
needs their links to agree).`,
		Example: `  cacheon release link --step qualify --key validator-a.key --trust release.pub \
    --report qualification/proposal-1/report-1.json --report qualification/proposal-1/report-2.json \
    --out links release-1.0`,
		Args: cobra.ExactArgs(1),
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
	f.StringArrayVar(&o.reports, "report", nil, "qualification report the crown rests on (qualify and review steps; at least two)")
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
	var records intoto.Records
	if len(o.reports) > 0 {
		if records, err = intoto.QualificationRecords(o.reports); err != nil {
			var pathErr *fs.PathError
			if errors.As(err, &pathErr) {
				return err
			}
			return reject.Errorf("--report: %w", err)
		}
	}
	mb, name, err := intoto.Link(o.step, rel, priv, records)
	if err != nil {
		return reject.Wrap(err)
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	p := filepath.Join(o.out, name)
	if err := writeMetablock(p, mb, atomicwrite.WriteFile); err != nil {
		return err
	}
	fmt.Fprintf(s.Out, "%s\n", p)
	return nil
}

// writeMetablock writes signed in-toto metadata as in-toto's Dump lays it
// out (indented JSON), but through write (an atomicwrite function), so a
// reader never sees half a layout or link.
func writeMetablock(path string, mb *toto.Metablock, write func(string, []byte, fs.FileMode) error) error {
	data, err := json.MarshalIndent(mb, "", "  ")
	if err != nil {
		return err
	}
	return write(path, data, 0o644)
}
