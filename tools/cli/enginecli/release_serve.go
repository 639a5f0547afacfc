package enginecli

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/cacheon/engine/internal/reject"
	"github.com/cacheon/engine/release/channel"
	"github.com/cacheon/engine/release/entrypoint"
	"github.com/cacheon/engine/release/key"
)

// releaseServeOptions are the flags and arguments of release serve.
type releaseServeOptions struct {
	root, keyPath, bundlePath, modelDir, now string
	channel                                  ChannelCheckOptions
	dryRun                                   bool
	args                                     []string
}

func newReleaseServeCommand(s Streams) *cobra.Command {
	var o releaseServeOptions
	cmd := &cobra.Command{
		Use:   "serve [--key PUB] [--bundle FILE] [--model DIR]",
		Short: "Verify the installed release, then exec its serve command (image entrypoint)",
		Long: `The entrypoint of a release image. Before any contribution is loaded it
verifies the signed release against the public key given with --key (mounted
from outside the image: a key inside the image is never trusted) and the
signature bundle given with --bundle, checks the engine tree, substrate,
release records and this binary on disk against the signed digests and the
mounted model against the signed receipt, and only then replaces itself with
the signed serve command. Any mismatch refuses to start (exit 2), naming what
differed.

The served process gets a fresh environment: the signed serve environment,
PATH, and CACHEON_RELEASE_VERIFIED (the descriptor digest),
CACHEON_RELEASE_REQUIRED=1, CACHEON_RELEASE_ENGINE_TREE_DIGEST and
CACHEON_RELEASE_KEY_ID. Nothing else from the container's environment
reaches it.

With --channel (a release channel directory mounted from outside the image,
see "cacheon release channel") it also refuses to start a release that is
not the channel's current release of --name (or the --version pinned), or
that was withdrawn, or when the channel's timestamp has expired; the key's
validity is then judged at the release's recorded publication time, so a
release key retired since does not stop a release it signed from serving.
The channel check keeps its state as "release verify" does (--channel-state,
default channel-state in the cache directory). A container's file system is
read-only and the trust mount too: mount a writable directory for the state
and pass it as --channel-state, or pass --no-channel-state to start without
rollback protection (a warning says so). Its log says which channel, release
and state it checked, or, on a line of its own, that it checked no channel.`,
		Example: `  docker run --gpus all \
    -v $PWD/trust:/cacheon/trust:ro -v /models/llama:/cacheon/model:ro \
    registry.example.com/cacheon/engine@sha256:<digest>

  # the same checks without starting anything
  cacheon release serve --dry-run --root rootfs --key release.pub \
    --bundle release.sigstore.json --model /models/llama

  # only while it is the channel's current, unwithdrawn release, keeping
  # the channel's state in a writable mount
  docker run --gpus all --read-only \
    -v $PWD/trust:/cacheon/trust:ro -v /models/llama:/cacheon/model:ro \
    -v $PWD/channel-state:/cacheon/state \
    registry.example.com/cacheon/engine@sha256:<digest> \
    --channel /cacheon/trust/channel --channel-root /cacheon/trust/1.root.json \
    --name cacheon-engine --channel-state /cacheon/state`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.args = args
			return runReleaseServe(cmd.Context(), s, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.root, "root", "/", "root filesystem of the installed release")
	f.StringVar(&o.keyPath, "key", entrypoint.DefaultKey, "expected public key or key policy (from outside the image)")
	f.StringVar(&o.bundlePath, "bundle", entrypoint.DefaultBundle, "signature bundle of the release (from outside the image)")
	f.StringVar(&o.modelDir, "model", "", "mounted model directory (default: the signed model mount)")
	f.BoolVar(&o.dryRun, "dry-run", false, "verify and print what would run, as JSON, without starting it")
	f.StringVar(&o.now, "now", "", "judge key validity and the channel's expiry at this RFC 3339 time instead of now (tests)")
	o.channel.AddFlags(f)
	return cmd
}

func runReleaseServe(ctx context.Context, s Streams, o releaseServeOptions) error {
	policy, err := key.LoadPolicy(o.keyPath)
	if err != nil {
		return reject.Errorf("%w: expected key: %v", entrypoint.ErrRefused, err)
	}
	bundle, err := os.ReadFile(o.bundlePath)
	if err != nil {
		return reject.Errorf("%w: signature bundle: %v", entrypoint.ErrRefused, err)
	}
	now, err := ParseNow("--now", o.now)
	if err != nil {
		return err
	}
	if err := o.channel.Validate(); err != nil {
		return err
	}
	keyTime := now
	var sel *channel.Selection
	if o.channel.Enabled() {
		if sel, err = o.channel.SelectRelease(ctx, s.Err, "release serve", now); err != nil {
			if !reject.Is(err) {
				// An unreachable channel or a state directory that
				// cannot be written gave no verdict (exit 1).
				return fmt.Errorf("cannot start: %w", err)
			}
			return reject.Errorf("%w: %v", entrypoint.ErrRefused, err)
		}
		keyTime = sel.Record.PublishedAt
	}
	v, err := entrypoint.Verify(entrypoint.Options{Root: o.root, Policy: policy, Bundle: bundle, Model: o.modelDir, Now: keyTime})
	if err != nil {
		return reject.Wrap(err)
	}
	if sel != nil {
		// Inside the image the manifest digest is unknown; the signed
		// release descriptor identifies the release.
		if err := sel.Match("", v.DescriptorDigest, v.KeyID); err != nil {
			return reject.Errorf("%w: %v", entrypoint.ErrRefused, err)
		}
	}
	// Say what was checked before anything runs: an operator reading the
	// log must tell a release checked against a channel from one that
	// was not.
	fmt.Fprintln(s.Err, serveChannelLine(o.channel, sel))
	if o.dryRun {
		doc := map[string]any{
			"format_version": 1, "verified": true, "descriptor_digest": v.DescriptorDigest,
			"engine_tree_digest": v.Descriptor.EngineTreeDigest, "key_id": v.KeyID, "argv": v.Argv, "env": v.Env,
		}
		if sel != nil {
			doc["channel"] = sel
		}
		return WriteJSON(s.Out, doc)
	}
	fmt.Fprintf(s.Err, "cacheon release serve: release %s verified (key %s); starting %s\n", v.DescriptorDigest, v.KeyID, v.Argv[0])
	return reject.Wrap(entrypoint.Exec(v))
}

// serveChannelLine is serve's log line about the channel: which channel,
// release and state it checked, or that it checked none.
func serveChannelLine(o ChannelCheckOptions, sel *channel.Selection) string {
	if sel == nil {
		return "cacheon release serve: no release channel checked (no --channel): a withdrawn or superseded release would start as well"
	}
	r, st := sel.Record, sel.Status
	return fmt.Sprintf("cacheon release serve: channel %s: %s %s is %s (root v%d, timestamp v%d signed %s); %s",
		st.Source, r.Name, r.Version, selectionRole(sel), st.RootVersion, st.TimestampVersion, orUnknown(st.Age), DescribeState(st))
}

// selectionRole says whether the selected release is the current one or
// a pinned older one.
func selectionRole(sel *channel.Selection) string {
	if sel.Record.Version == sel.Current {
		return "the current release"
	}
	return "pinned (current is " + sel.Current + ")"
}

func orUnknown(s string) string {
	if s == "" {
		return "at an unrecorded time"
	}
	return s
}
