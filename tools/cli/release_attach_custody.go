package cli

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/cacheon/engine/release/intoto"
	"github.com/cacheon/engine/release/key"
	"github.com/cacheon/engine/release/verify"
	"github.com/cacheon/engine/tools/cli/enginecli"
)

// releaseAttachCustodyOptions are the flags and arguments of release
// attach-custody.
type releaseAttachCustodyOptions struct {
	keyPath, layoutPath, linkDir string
	layoutKeys                   []string
	insecure, jsonOut            bool
	args                         []string
}

func newReleaseAttachCustodyCommand(s Streams) *cobra.Command {
	var o releaseAttachCustodyOptions
	cmd := &cobra.Command{
		Use:   "attach-custody --key PUB --layout FILE --layout-key PUB --links DIR LAYOUT|REF",
		Short: "Attach a release's chain of custody (in-toto layout and links) to the release",
		Long: `Attach the chain of custody of a release to the release itself, so that
whoever pulls or mirrors the release gets it: the owner's signed in-toto
layout (--layout, see "cacheon release layout") and every *.link file in
--links (see "cacheon release link") become referrers of the release's
image, each its own OCI artifact with one blob: the layout of artifact
type application/vnd.dev.cacheon.in-toto.layout+json titled root.layout,
each link of type application/vnd.dev.cacheon.in-toto.link+json titled
<step>.<keyid>.link. In an OCI layout directory they are listed in its
index; in a registry they are pushed through the referrers API or its tag
fallback, like the release's other attestations.

A broken chain is never shipped: the release is first verified against
the release key (--key, a PEM public key or key policy file), and the
chain is checked against it as "release verify --layout" checks it (the
layout's signature by a --layout-key and its expiry, every step's links,
thresholds and artifact rules, and that the links describe this very
release). Once attached, "release verify --key PUB --layout-key OWNER.pub
RELEASE" checks the chain the release carries.

Refused with exit 2, naming the file and the reason, attaching nothing: a
--links directory without *.link files, a file that is not a signed in-toto
layout or link (or a link not named <step>.<keyid>.link as in-toto names
it), a chain that does not verify against the release, and a release that
already carries another chain of custody (a release carries one chain).

Attaching the same chain again is safe and is how an interrupted attach
is finished: the layout and links already attached are kept and reported
as already attached, and only the missing ones are attached (nothing,
exit 0, when all of them are there).`,
		Example: `  cacheon release attach-custody --key release.pub --layout root.layout --layout-key owner.pub --links links release-1.0
  cacheon release attach-custody --key release.pub --layout root.layout --layout-key owner.pub --links links \
    registry.example.com/cacheon/engine:1.0`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.args = args
			return runReleaseAttachCustody(cmd.Context(), s, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.keyPath, "key", "", "trusted release public key (PEM) or key policy file, to verify the release first (required)")
	f.StringVar(&o.layoutPath, "layout", "", "the owner's signed in-toto layout (required)")
	f.StringArrayVar(&o.layoutKeys, "layout-key", nil, "public key of the layout's owner, to check the chain before attaching it (repeat; required)")
	f.StringVar(&o.linkDir, "links", "", "directory of the functionaries' signed *.link files (required)")
	f.BoolVar(&o.insecure, "insecure", false, "use plain HTTP for the registry")
	f.BoolVar(&o.jsonOut, "json", false, "print one JSON document")
	for _, r := range []string{"key", "layout", "layout-key", "links"} {
		cmd.MarkFlagRequired(r)
	}
	return cmd
}

func runReleaseAttachCustody(ctx context.Context, s Streams, o releaseAttachCustodyOptions) error {
	policy, err := key.LoadPolicy(o.keyPath)
	if err != nil {
		return err
	}
	var owners [][]byte
	for _, p := range o.layoutKeys {
		b, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("layout owner key: %w", err)
		}
		owners = append(owners, b)
	}
	chain, err := intoto.ReadChain(o.layoutPath, o.linkDir)
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
	attached, err := intoto.AttachChecked(st, rel, chain, owners)
	if err != nil {
		return err
	}
	if o.jsonOut {
		return enginecli.WriteJSON(s.Out, struct {
			FormatVersion int               `json:"format_version"`
			ImageDigest   string            `json:"image_digest"`
			Attached      []intoto.Attached `json:"attached"`
		}{1, rel.Image.Digest.String(), attached})
	}
	before := 0
	for _, a := range attached {
		if a.AlreadyAttached {
			before++
		}
	}
	switch before {
	case 0:
		fmt.Fprintf(s.Out, "attached the chain of custody to %s (%d links)\n", rel.Image.Digest, len(attached)-1)
	case len(attached):
		fmt.Fprintf(s.Out, "the chain of custody is already attached to %s (%d links): nothing to attach\n", rel.Image.Digest, len(attached)-1)
	default:
		fmt.Fprintf(s.Out, "attached the rest of the chain of custody to %s (%d links; %d of %d artifacts were already attached)\n",
			rel.Image.Digest, len(attached)-1, before, len(attached))
	}
	for _, a := range attached {
		note := ""
		if a.AlreadyAttached {
			note = "  (already attached)"
		}
		fmt.Fprintf(s.Out, "  %-40s %s%s\n", a.Title, a.Digest, note)
	}
	return nil
}
