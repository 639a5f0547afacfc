package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cacheon/engine/internal/reject"
	"github.com/cacheon/engine/release/key"
	"github.com/cacheon/engine/release/publish"
	"github.com/cacheon/engine/release/store/remote"
	"github.com/cacheon/engine/tools/cli/enginecli"
)

// releaseMirrorOptions are the flags and arguments of release mirror.
type releaseMirrorOptions struct {
	keyPath                       string
	insecure, jsonOut, legacyTags bool
	args                          []string
}

func newReleaseMirrorCommand(s Streams) *cobra.Command {
	var o releaseMirrorOptions
	cmd := &cobra.Command{
		Use:   "mirror [--key PUB] SRC DST",
		Short: "Copy a published release to another registry with its signature and attestations",
		Long: `Copy the release at the registry reference SRC to DST, another repository
of the same registry or of another one: the pinned base image, the image by
digest, then every referrer of the image (the SBOM, the provenance, the
signed SBOM attestation and the signature bundles, and anything else
attached) as the source's very manifests, so each keeps its digest and
signature, and the tag in DST last.

A plain image copy (crane copy, skopeo copy) copies the image alone: the
attestations are other manifests whose subject is the image, which a copy
by reference does not know, and release verify of such a copy fails its
attestations check. Every manifest and blob read from SRC is checked
against its digest; a referrer that cannot be read is left out with a
note, and a source without the release's attestations is refused before
anything is written.

With --key the source is fully verified before anything is copied and the
mirror after, so the command succeeds only when the mirror verifies.
--legacy-tags also writes cosign's legacy .sig and .att tags in DST (see
release publish).`,
		Example: `  cacheon release mirror --key release.pub registry.example.com/cacheon/engine:1.0 mirror.example.org/cacheon/engine:1.0
  cacheon release mirror 127.0.0.1:5000/engine:1.0 127.0.0.1:5001/engine:1.0`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.args = args
			return runReleaseMirror(cmd.Context(), s, o)
		},
	}
	cmd.Flags().StringVar(&o.keyPath, "key", "", "verify the source before copying and the mirror after against this public key")
	addPushFlags(cmd, "use plain HTTP for both registries", &o.insecure, &o.legacyTags, &o.jsonOut)
	return cmd
}

func runReleaseMirror(ctx context.Context, s Streams, o releaseMirrorOptions) error {
	var policy *key.Policy
	if o.keyPath != "" {
		var err error
		if policy, err = key.LoadPolicy(o.keyPath); err != nil {
			return err
		}
	}
	open := func(ref string) (*remote.Registry, error) {
		r, err := remote.Open(ref, o.insecure, remote.WithContext(ctx))
		if err != nil {
			return nil, reject.Wrap(err)
		}
		return r, nil
	}
	src, err := open(o.args[0])
	if err != nil {
		return err
	}
	dst, err := open(o.args[1])
	if err != nil {
		return err
	}
	if err := refuseUnverified(src, policy, "refusing to mirror"); err != nil {
		return err
	}
	var progress func(string)
	if !o.jsonOut {
		progress = enginecli.ReleaseProgress(s, "mirror")
	}
	res, err := publish.Mirror(src, dst, publish.Options{Progress: progress, LegacyTags: o.legacyTags})
	if err != nil {
		return pushError(err)
	}
	mirror, err := open(o.args[1])
	if err != nil {
		return err
	}
	if err := refuseUnverified(mirror, policy, "the mirror does not verify:"); err != nil {
		return err
	}
	if o.jsonOut {
		return enginecli.WriteJSON(s.Out, struct {
			FormatVersion int  `json:"format_version"`
			Verified      bool `json:"verified"`
			*publish.MirrorResult
		}{1, policy != nil, res})
	}
	fmt.Fprintf(s.Out, "mirrored %s to %s (%s)\n", res.Source, res.Reference, res.ImageDigest)
	if res.Base != "" {
		fmt.Fprintf(s.Out, "  base image %s\n", res.Base)
	}
	printPushed(s, res.Artifacts, res.LegacyTags)
	for _, n := range res.Notes {
		fmt.Fprintf(s.Out, "  note: %s\n", n)
	}
	if policy != nil {
		fmt.Fprintf(s.Out, "the mirror verifies against %s\n", o.keyPath)
	}
	return nil
}
