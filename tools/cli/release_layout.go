package cli

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/cacheon/engine/internal/atomicwrite"
	"github.com/cacheon/engine/internal/reject"
	"github.com/cacheon/engine/release/intoto"
)

// releaseLayoutOptions are the flags and arguments of release layout.
type releaseLayoutOptions struct {
	ownerKey, out, expires                                    string
	qualify, reviewKeys, materializeKeys, buildKeys, signKeys []string
	args                                                      []string
}

func newReleaseLayoutCommand(s Streams) *cobra.Command {
	var o releaseLayoutOptions
	cmd := &cobra.Command{
		Use:   "layout --owner-key KEY --qualify PUB --qualify PUB --review PUB --materialize PUB --build PUB --sign PUB --expires TIME --out FILE",
		Short: "Write the project's signed in-toto supply-chain layout",
		Long: `Write the in-toto layout that states how a release is made, signed by the
project owner's key: two qualifications by distinct validator keys
(threshold 2), the integration review, the materialization of the release
stack, the build and the signature, each by the functionaries whose public
keys are given, with artifact rules chaining each step's materials to the
previous step's products. The qualify links name the qualification
reports the crown rests on and the evidence they reference, and the review
must consume exactly those (see "cacheon release link --report"). Consumers check releases against it with
"cacheon release verify --layout".`,
		Example: `  cacheon release layout --owner-key owner.key \
    --qualify validator-a.pub --qualify validator-b.pub --review reviewer.pub \
    --materialize builder.pub --build builder.pub --sign release.pub \
    --expires 2027-01-01T00:00:00Z --out root.layout`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.args = args
			return runReleaseLayout(cmd.Context(), s, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.ownerKey, "owner-key", "", "project owner's private key that signs the layout (required)")
	f.StringArrayVar(&o.qualify, "qualify", nil, "validator public key (at least two)")
	f.StringArrayVar(&o.reviewKeys, "review", nil, "integration reviewer public key")
	f.StringArrayVar(&o.materializeKeys, "materialize", nil, "builder public key for materialization")
	f.StringArrayVar(&o.buildKeys, "build", nil, "builder public key")
	f.StringArrayVar(&o.signKeys, "sign", nil, "release signing public key")
	f.StringVar(&o.expires, "expires", "", "RFC 3339 expiry of the layout (required)")
	f.StringVar(&o.out, "out", "", "layout file to write (required)")
	for _, r := range []string{"owner-key", "expires", "out"} {
		cmd.MarkFlagRequired(r)
	}
	return cmd
}

func runReleaseLayout(_ context.Context, s Streams, o releaseLayoutOptions) error {
	owner, err := os.ReadFile(o.ownerKey)
	if err != nil {
		return err
	}
	exp, err := time.Parse(time.RFC3339, o.expires)
	if err != nil {
		return reject.Errorf("--expires: %w", err)
	}
	f := intoto.Functionaries{}
	for step, paths := range map[string][]string{
		intoto.StepQualify: o.qualify, intoto.StepReview: o.reviewKeys, intoto.StepMaterialize: o.materializeKeys,
		intoto.StepBuild: o.buildKeys, intoto.StepSign: o.signKeys,
	} {
		for _, p := range paths {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			f[step] = append(f[step], b)
		}
	}
	mb, err := intoto.New(owner, f, exp)
	if err != nil {
		return reject.Wrap(err)
	}
	if _, err := os.Lstat(o.out); err == nil {
		return fmt.Errorf("%s already exists", o.out)
	}
	if err := writeMetablock(o.out, mb, atomicwrite.CreateFile); err != nil {
		return err
	}
	fmt.Fprintf(s.Out, "layout %s (expires %s)\n", o.out, exp.UTC().Format(time.RFC3339))
	return nil
}
