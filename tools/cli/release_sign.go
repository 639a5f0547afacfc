package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cacheon/engine/release/key"
	"github.com/cacheon/engine/release/sign"
	"github.com/cacheon/engine/tools/cli/enginecli"
)

// releaseSignOptions are the flags and arguments of release sign.
type releaseSignOptions struct {
	keyPath           string
	insecure, jsonOut bool
	args              []string
}

func newReleaseSignCommand(s Streams) *cobra.Command {
	var o releaseSignOptions
	cmd := &cobra.Command{
		Use:   "sign --key KEY LAYOUT|REF",
		Short: "Sign a release's provenance and SBOM and attach the sigstore bundles",
		Long: `Sign the provenance statement attached to a release with KEY (PKCS#8 PEM,
Ed25519 or ECDSA P-256) as a sigstore bundle (v0.3, DSSE), and attach the
bundle to the image: in an OCI layout as an artifact whose subject is the
image, in a registry through the referrers API or its tag fallback.

The SBOM is signed too, as an in-toto attestation: a statement whose
predicate type is https://spdx.dev/Document (cosign's spdxjson), whose
predicate is the SPDX document the provenance names and whose subject is
the image, attached as a second bundle (title sbom.sigstore.json,
annotated with the predicate type) beside the provenance's.

No certificate authority, transparency log or timestamp service is used,
and nothing goes over the network except to the registry you name. The
statement must name the image it is attached to.`,
		Example: `  cacheon release sign --key release.key release-1.0
  cacheon release sign --key release.key registry.example.com/cacheon/engine:1.0`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.args = args
			return runReleaseSign(cmd.Context(), s, o)
		},
	}
	cmd.Flags().StringVar(&o.keyPath, "key", "", "private key, PKCS#8 PEM (required)")
	cmd.Flags().BoolVar(&o.insecure, "insecure", false, "use plain HTTP for the registry")
	cmd.Flags().BoolVar(&o.jsonOut, "json", false, "print one JSON document")
	cmd.MarkFlagRequired("key")
	return cmd
}

func runReleaseSign(ctx context.Context, s Streams, o releaseSignOptions) error {
	signer, err := key.LoadSigner(o.keyPath)
	if err != nil {
		return err
	}
	st, err := openRelease(ctx, o.args[0], o.insecure)
	if err != nil {
		return err
	}
	res, err := sign.Release(st, signer)
	if err != nil {
		return err
	}
	if o.jsonOut {
		return enginecli.WriteJSON(s.Out, struct {
			FormatVersion int `json:"format_version"`
			*sign.Signed
		}{1, res})
	}
	fmt.Fprintf(s.Out, "signed %s with key %s\nbundle %s\nSBOM attestation bundle %s\n", res.ImageDigest, res.KeyID, res.BundleDigest, res.SBOMBundleDigest)
	return nil
}
