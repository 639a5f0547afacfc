package cli

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/cacheon/engine/internal/reject"
	"github.com/cacheon/engine/release/key"
	"github.com/cacheon/engine/tools/cli/enginecli"
)

// releaseKeygenOptions are the flags and arguments of release keygen.
type releaseKeygenOptions struct {
	alg, out string
	jsonOut  bool
	args     []string
}

func newReleaseKeygenCommand(s Streams) *cobra.Command {
	var o releaseKeygenOptions
	cmd := &cobra.Command{
		Use:   "keygen --out PREFIX [--algorithm ed25519|ecdsa-p256]",
		Short: "Generate a release signing key pair (PEM files)",
		Long: `Generate a signing key and write PREFIX.key (PKCS#8 PEM, mode 0600) and
PREFIX.pub (PKIX PEM). Keep the private key offline or in an HSM; any
crypto.Signer works for signing, a file key is the simplest. Publish the
public key through a channel consumers trust: it is what verify checks
against, and no key inside a release is ever trusted.`,
		Example: `  cacheon release keygen --out release-2026
  cacheon release keygen --algorithm ecdsa-p256 --out release-ecdsa`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.args = args
			return runReleaseKeygen(cmd.Context(), s, o)
		},
	}
	cmd.Flags().StringVar(&o.alg, "algorithm", string(key.Ed25519), "ed25519 or ecdsa-p256")
	cmd.Flags().StringVar(&o.out, "out", "", "path prefix of the key files (required)")
	cmd.Flags().BoolVar(&o.jsonOut, "json", false, "print one JSON document")
	cmd.MarkFlagRequired("out")
	return cmd
}

func runReleaseKeygen(_ context.Context, s Streams, o releaseKeygenOptions) error {
	signer, err := key.Generate(key.Algorithm(o.alg))
	if err != nil {
		return reject.Wrap(err)
	}
	priv, err := key.MarshalPrivate(signer)
	if err != nil {
		return err
	}
	pub, err := key.MarshalPublic(signer.Public())
	if err != nil {
		return err
	}
	for _, p := range []string{o.out + ".key", o.out + ".pub"} {
		if _, err := os.Lstat(p); err == nil {
			return fmt.Errorf("%s already exists", p)
		}
	}
	if err := os.WriteFile(o.out+".key", priv, 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(o.out+".pub", pub, 0o644); err != nil {
		return err
	}
	id, _ := key.ID(signer.Public())
	if o.jsonOut {
		return enginecli.WriteJSON(s.Out, map[string]any{"format_version": 1, "private_key": o.out + ".key", "public_key": o.out + ".pub", "key_id": id, "algorithm": o.alg})
	}
	fmt.Fprintf(s.Out, "private key %s.key\npublic key  %s.pub\nkey id      %s\n", o.out, o.out, id)
	return nil
}
