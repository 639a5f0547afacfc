package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cacheon/engine/release/key"
	"github.com/cacheon/engine/release/publish"
	"github.com/cacheon/engine/release/store"
	"github.com/cacheon/engine/release/store/remote"
	"github.com/cacheon/engine/release/verify"
	"github.com/cacheon/engine/tools/reject"
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
	cmd.Flags().BoolVar(&o.insecure, "insecure", false, "use plain HTTP for both registries")
	cmd.Flags().BoolVar(&o.legacyTags, "legacy-tags", false, "also write cosign's legacy sha256-<hex>.sig and .att tags")
	cmd.Flags().BoolVar(&o.jsonOut, "json", false, "print one JSON document")
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
	// check verifies one end; a failed check refuses (exit 2).
	check := func(st store.Store, what string) error {
		if policy == nil {
			return nil
		}
		if _, err := verify.Run(st, verify.Options{Policy: policy}); err != nil {
			var failed *verify.Failure
			if errors.As(err, &failed) {
				return reject.Errorf("%s %s: %w", what, st.Location(), err)
			}
			return err
		}
		return nil
	}
	if err := check(src, "refusing to mirror"); err != nil {
		return err
	}
	var progress func(string)
	if !o.jsonOut {
		progress = releaseProgress(s, "mirror")
	}
	res, err := publish.Mirror(src, dst, publish.Options{Progress: progress, LegacyTags: o.legacyTags})
	if err != nil {
		var mm *store.DigestMismatchError
		if errors.Is(err, publish.ErrIncomplete) || errors.As(err, &mm) || store.IsRejection(err) {
			return reject.Wrap(err)
		}
		return err
	}
	mirror, err := open(o.args[1])
	if err != nil {
		return err
	}
	if err := check(mirror, "the mirror does not verify:"); err != nil {
		return err
	}
	if o.jsonOut {
		return writeJSON(s.Out, struct {
			FormatVersion int  `json:"format_version"`
			Verified      bool `json:"verified"`
			*publish.MirrorResult
		}{1, policy != nil, res})
	}
	fmt.Fprintf(s.Out, "mirrored %s to %s (%s)\n", res.Source, res.Reference, res.ImageDigest)
	if res.Base != "" {
		fmt.Fprintf(s.Out, "  base image %s\n", res.Base)
	}
	for _, a := range res.Artifacts {
		fmt.Fprintf(s.Out, "  %s\n", a)
	}
	for _, t := range res.LegacyTags {
		fmt.Fprintf(s.Out, "  legacy tag %s\n", t)
	}
	for _, n := range res.Notes {
		fmt.Fprintf(s.Out, "  note: %s\n", n)
	}
	if policy != nil {
		fmt.Fprintf(s.Out, "the mirror verifies against %s\n", o.keyPath)
	}
	return nil
}
