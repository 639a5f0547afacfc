package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cacheon/engine/internal/reject"
	"github.com/cacheon/engine/release/key"
	"github.com/cacheon/engine/release/publish"
	"github.com/cacheon/engine/release/store"
	"github.com/cacheon/engine/release/store/remote"
	"github.com/cacheon/engine/release/verify"
	"github.com/cacheon/engine/tools/cli/enginecli"
)

// releasePublishOptions are the flags and arguments of release publish.
type releasePublishOptions struct {
	keyPath                       string
	insecure, jsonOut, legacyTags bool
	args                          []string
}

func newReleasePublishCommand(s Streams) *cobra.Command {
	var o releasePublishOptions
	cmd := &cobra.Command{
		Use:   "publish [--key PUB] LAYOUT REF",
		Short: "Push a signed release from an OCI layout to a registry",
		Long: `Push the release in LAYOUT to the registry reference REF: the image by
digest, then the SBOM, the provenance and the signature bundles as OCI 1.1
referrers (registries without the referrers API get the sha256-<hex> tag
fallback), and the tag in REF last. Every blob of the layout is checked
before the first request, and an unsigned layout is refused, so nothing is
ever published half-way. With --key the release is fully verified first.

--legacy-tags also writes cosign's legacy tag scheme, for clients that
look signatures and attestations up by tag instead of through referrers:
sha256-<hex>.sig names the signature bundle's manifest, and
sha256-<hex>.att an image whose layers are the bundles' DSSE envelopes,
each annotated with its predicate type. Both are written before the tag
in REF, and read back.`,
		Example: `  cacheon release publish --key release.pub release-1.0 registry.example.com/cacheon/engine:1.0
  cacheon release publish release-1.0 127.0.0.1:5000/engine:1.0
  cacheon release publish --legacy-tags release-1.0 registry.example.com/cacheon/engine:1.0`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.args = args
			return runReleasePublish(cmd.Context(), s, o)
		},
	}
	cmd.Flags().StringVar(&o.keyPath, "key", "", "verify the release against this public key before publishing")
	addPushFlags(cmd, "use plain HTTP for the registry", &o.insecure, &o.legacyTags, &o.jsonOut)
	return cmd
}

// addPushFlags adds the flags publish and mirror share.
func addPushFlags(cmd *cobra.Command, insecureHelp string, insecure, legacyTags, jsonOut *bool) {
	cmd.Flags().BoolVar(insecure, "insecure", false, insecureHelp)
	cmd.Flags().BoolVar(legacyTags, "legacy-tags", false, "also write cosign's legacy sha256-<hex>.sig and .att tags")
	cmd.Flags().BoolVar(jsonOut, "json", false, "print one JSON document")
}

// refuseUnverified verifies st against policy (nothing without one); a
// failed check refuses (exit 2), prefixed with what.
func refuseUnverified(st store.Store, policy *key.Policy, what string) error {
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

// pushError maps a publish or mirror failure: a source that is
// incomplete, or not what its digests say, is a rejected input (exit 2);
// anything else (the registry) is exit 1.
func pushError(err error) error {
	var mm *store.DigestMismatchError
	if errors.Is(err, publish.ErrIncomplete) || errors.As(err, &mm) || store.IsRejection(err) {
		return reject.Wrap(err)
	}
	return err
}

// printPushed lists what a publish or mirror wrote besides the image.
func printPushed(s Streams, artifacts, legacyTags []string) {
	for _, a := range artifacts {
		fmt.Fprintf(s.Out, "  %s\n", a)
	}
	for _, t := range legacyTags {
		fmt.Fprintf(s.Out, "  legacy tag %s\n", t)
	}
}

func runReleasePublish(ctx context.Context, s Streams, o releasePublishOptions) error {
	l, err := store.OpenLayout(o.args[0])
	if err != nil {
		return err
	}
	if o.keyPath != "" {
		policy, err := key.LoadPolicy(o.keyPath)
		if err != nil {
			return err
		}
		if err := refuseUnverified(l, policy, "refusing to publish"); err != nil {
			return err
		}
	}
	target, err := remote.Open(o.args[1], o.insecure, remote.WithContext(ctx))
	if err != nil {
		return reject.Wrap(err)
	}
	var progress func(string)
	if !o.jsonOut {
		progress = enginecli.ReleaseProgress(s, "publish")
	}
	res, err := publish.Publish(l, target, publish.Options{Progress: progress, LegacyTags: o.legacyTags})
	if err != nil {
		return pushError(err)
	}
	if o.jsonOut {
		return enginecli.WriteJSON(s.Out, struct {
			FormatVersion int `json:"format_version"`
			*publish.Result
		}{1, res})
	}
	fmt.Fprintf(s.Out, "published %s (%s)\n", res.Reference, res.ImageDigest)
	printPushed(s, res.Artifacts, res.LegacyTags)
	return nil
}
