package cli

import (
	"context"
	"crypto"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/cacheon/engine/internal/reject"
	"github.com/cacheon/engine/release/channel"
	"github.com/cacheon/engine/release/key"
	"github.com/cacheon/engine/release/verify"
	"github.com/cacheon/engine/tools/cli/enginecli"
)

func newReleaseChannelCommand(s Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "channel",
		Short: "Publish releases into a signed release channel (TUF) with freshness and revocation",
		Long: `A release channel is a TUF repository (a directory of signed JSON files,
served over HTTP or copied to a mirror) that lists every published release
of a name: its version, image digest, release descriptor digest, signing
key and publication time. Consumers check a release against it with
"cacheon release verify --channel DIR --channel-root ROOT --name NAME", which
refuses:

  - a release that is not the name's current one (an older signed release
    under a new tag), unless a --version pins it;
  - a withdrawn release, naming the reason;
  - a channel whose timestamp has expired (frozen, or a stale mirror);
  - a channel older than the one it accepted last (it keeps state per
    trusted root key, in the cache directory unless --channel-state names
    another; --no-channel-state turns this off);
  - metadata not signed by the keys the channel's root names, or by a key a
    root it accepted before retired.

The release signature's key validity is judged at the publication time the
channel recorded, so retiring a release key does not break older releases.

Three keys sign a channel: the root key (offline; certifies the others),
the targets key (signs the release list) and the online key (signs the
snapshot and the timestamp, which expires after a day: run "refresh" daily).
Keys are PEM PKCS#8 files from "cacheon release keygen".

  init      create a channel
  publish   add a verified release
  withdraw  revoke a release, with a reason
  refresh   sign a new timestamp (a scheduled job)
  rotate    replace a role's key through a new root version
  show      check a channel as a consumer would and list its releases`,
	}
	cmd.AddCommand(
		newReleaseChannelInitCommand(s),
		newReleaseChannelPublishCommand(s),
		newReleaseChannelWithdrawCommand(s),
		newReleaseChannelRefreshCommand(s),
		newReleaseChannelRotateCommand(s),
		newReleaseChannelShowCommand(s),
	)
	return cmd
}

// channelKeyOptions are the private keys and the clock of an operation
// that signs channel metadata.
type channelKeyOptions struct {
	rootKey, targetsKey, onlineKey, now string
	expires                             channel.Expiry
}

func (o *channelKeyOptions) addFlags(f *pflag.FlagSet, roles ...string) {
	for _, r := range roles {
		switch r {
		case channel.RoleRoot:
			f.StringVar(&o.rootKey, "root-key", "", "the channel's root private key (PEM PKCS#8)")
		case channel.RoleTargets:
			f.StringVar(&o.targetsKey, "targets-key", "", "the channel's targets private key (PEM PKCS#8)")
		case channel.RoleOnline:
			f.StringVar(&o.onlineKey, "online-key", "", "the channel's online (snapshot and timestamp) private key (PEM PKCS#8)")
		}
	}
	f.StringVar(&o.now, "now", "", "sign as of this RFC 3339 time instead of now (for tests and reproductions)")
	f.DurationVar(&o.expires.Timestamp, "timestamp-expiry", channel.DefaultExpiry.Timestamp, "how long a new timestamp stays valid")
	f.DurationVar(&o.expires.Snapshot, "snapshot-expiry", channel.DefaultExpiry.Snapshot, "how long a new snapshot stays valid")
	f.DurationVar(&o.expires.Targets, "targets-expiry", channel.DefaultExpiry.Targets, "how long a new release list stays valid")
	f.DurationVar(&o.expires.Root, "root-expiry", channel.DefaultExpiry.Root, "how long a new root stays valid")
}

// keys loads the private keys whose flags were given.
func (o *channelKeyOptions) keys() (channel.Keys, error) {
	var k channel.Keys
	for _, kp := range []struct {
		flag, path string
		dst        *crypto.Signer
	}{{"--root-key", o.rootKey, &k.Root}, {"--targets-key", o.targetsKey, &k.Targets}, {"--online-key", o.onlineKey, &k.Online}} {
		if kp.path == "" {
			continue
		}
		s, err := key.LoadSigner(kp.path)
		if err != nil {
			return k, fmt.Errorf("%s: %w", kp.flag, err)
		}
		*kp.dst = s
	}
	return k, nil
}

func requireFlags(pairs ...string) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] == "" {
			return fmt.Errorf("%s is required", pairs[i])
		}
	}
	return nil
}

// openChannelRepo opens the publisher's channel with the options' keys.
func openChannelRepo(dir string, o channelKeyOptions) (*channel.Repo, channel.Keys, error) {
	keys, err := o.keys()
	if err != nil {
		return nil, keys, err
	}
	now, err := enginecli.ParseNow("--now", o.now)
	if err != nil {
		return nil, keys, err
	}
	// The writer lock is held until the caller closes the repo.
	r, err := channel.OpenWriter(dir, now, o.expires)
	return r, keys, err
}

// printChannelResult prints a publisher command's outcome.
func printChannelResult(s Streams, jsonOut bool, dir, verb string, r *channel.Repo, extra map[string]any) error {
	root, targets, snapshot, timestamp, expires := r.Versions()
	if jsonOut {
		doc := map[string]any{"format_version": 1, "channel": dir, "action": verb,
			"root_version": root, "targets_version": targets, "snapshot_version": snapshot,
			"timestamp_version": timestamp, "timestamp_expires": expires.UTC().Format(time.RFC3339)}
		for k, v := range extra {
			doc[k] = v
		}
		return enginecli.WriteJSON(s.Out, doc)
	}
	fmt.Fprintf(s.Out, "channel %s: %s\n  root v%d, targets v%d, snapshot v%d, timestamp v%d (expires %s)\n", dir, verb, root, targets, snapshot, timestamp, expires.UTC().Format(time.RFC3339))
	return nil
}

type releaseChannelInitOptions struct {
	keys    channelKeyOptions
	jsonOut bool
	args    []string
}

func newReleaseChannelInitCommand(s Streams) *cobra.Command {
	var o releaseChannelInitOptions
	cmd := &cobra.Command{
		Use:   "init DIR --root-key K --targets-key K --online-key K",
		Short: "Create a release channel",
		Long: `Create a release channel in DIR: root version 1 naming the three keys, an
empty release list, a snapshot and a timestamp. DIR/1.root.json is what
consumers pin (--channel-root): hand it out with the release public key.`,
		Example: `  cacheon release keygen --out root && cacheon release keygen --out targets && cacheon release keygen --out online
  cacheon release channel init channel --root-key root.key --targets-key targets.key --online-key online.key`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.args = args
			return runReleaseChannelInit(cmd.Context(), s, o)
		},
	}
	o.keys.addFlags(cmd.Flags(), channel.RoleRoot, channel.RoleTargets, channel.RoleOnline)
	cmd.Flags().BoolVar(&o.jsonOut, "json", false, "print one JSON document")
	return cmd
}

func runReleaseChannelInit(_ context.Context, s Streams, o releaseChannelInitOptions) error {
	if err := requireFlags("--root-key", o.keys.rootKey, "--targets-key", o.keys.targetsKey, "--online-key", o.keys.onlineKey); err != nil {
		return err
	}
	keys, err := o.keys.keys()
	if err != nil {
		return err
	}
	now, err := enginecli.ParseNow("--now", o.keys.now)
	if err != nil {
		return err
	}
	dir := o.args[0]
	if err := channel.Init(dir, keys, now, o.keys.expires); err != nil {
		return err
	}
	r, err := channel.Open(dir, now, o.keys.expires)
	if err != nil {
		return err
	}
	return printChannelResult(s, o.jsonOut, dir, "created; consumers pin "+dir+"/1.root.json", r, nil)
}

type releaseChannelPublishOptions struct {
	keys                           channelKeyOptions
	keyPath, name, version, signed string
	insecure, jsonOut              bool
	args                           []string
}

func newReleaseChannelPublishCommand(s Streams) *cobra.Command {
	var o releaseChannelPublishOptions
	cmd := &cobra.Command{
		Use:   "publish DIR --name NAME --version VERSION --key PUB --targets-key K --online-key K LAYOUT|REF",
		Short: "Add a verified release to the channel",
		Long: `Verify a signed release (an OCI layout directory or a registry reference)
against the trusted key --key, then add it to the channel as NAME VERSION
with its image digest, descriptor digest, signing key and the publication
time (now, or --now). A version names one image forever: publishing the same
release again changes nothing, another image under a published or withdrawn
version is refused. The highest version not withdrawn is the name's
current release.`,
		Example: `  cacheon release channel publish channel --name cacheon-engine --version 0.1.0 \
    --key release.pub --targets-key targets.key --online-key online.key release-layout`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.args = args
			return runReleaseChannelPublish(cmd.Context(), s, o)
		},
	}
	o.keys.addFlags(cmd.Flags(), channel.RoleTargets, channel.RoleOnline)
	cmd.Flags().StringVar(&o.keyPath, "key", "", "trusted release public key or key policy the release must verify against (required)")
	cmd.Flags().StringVar(&o.name, "name", "", "release name, e.g. cacheon-engine (required)")
	cmd.Flags().StringVar(&o.version, "version", "", "semantic version, e.g. 0.1.0 (required)")
	cmd.Flags().BoolVar(&o.insecure, "insecure", false, "use plain HTTP for the registry")
	cmd.Flags().BoolVar(&o.jsonOut, "json", false, "print one JSON document")
	return cmd
}

func runReleaseChannelPublish(ctx context.Context, s Streams, o releaseChannelPublishOptions) error {
	if err := requireFlags("--key", o.keyPath, "--name", o.name, "--version", o.version, "--targets-key", o.keys.targetsKey, "--online-key", o.keys.onlineKey); err != nil {
		return err
	}
	if err := channel.CheckName(o.name); err != nil {
		return reject.Errorf("--name: %w", err)
	}
	if err := channel.CheckVersion(o.version); err != nil {
		return reject.Errorf("--version: %w", err)
	}
	r, keys, err := openChannelRepo(o.args[0], o.keys)
	if err != nil {
		return err
	}
	defer r.Close()
	now := r.Now()
	policy, err := key.LoadPolicy(o.keyPath)
	if err != nil {
		return err
	}
	st, err := openRelease(ctx, o.args[1], o.insecure)
	if err != nil {
		return err
	}
	opts := verify.Options{Policy: policy, Now: now}
	if !o.jsonOut {
		opts.Progress = enginecli.ReleaseProgress(s, "channel publish")
	}
	rel, err := verify.Run(st, opts)
	if err != nil {
		return reject.Errorf("%s does not verify, so it is not published: %w", o.args[1], err)
	}
	rep := rel.Report
	rec := channel.Record{Name: o.name, Version: o.version, ImageDigest: rep.ImageDigest, DescriptorDigest: rep.DescriptorDigest, KeyID: rep.KeyID, PublishedAt: now}
	if err := r.Publish(rec, keys); err != nil {
		return err
	}
	return printChannelResult(s, o.jsonOut, o.args[0], fmt.Sprintf("published %s %s = %s (key %s)", o.name, o.version, rep.ImageDigest, rep.KeyID), r,
		map[string]any{"name": o.name, "version": o.version, "image_digest": rep.ImageDigest, "descriptor_digest": rep.DescriptorDigest, "key_id": rep.KeyID, "published_at": now.Format(time.RFC3339)})
}

type releaseChannelWithdrawOptions struct {
	keys                  channelKeyOptions
	name, version, reason string
	jsonOut               bool
	args                  []string
}

func newReleaseChannelWithdrawCommand(s Streams) *cobra.Command {
	var o releaseChannelWithdrawOptions
	cmd := &cobra.Command{
		Use:   "withdraw DIR --name NAME --version VERSION --reason TEXT --targets-key K --online-key K",
		Short: "Revoke a published release",
		Long: `Mark NAME VERSION withdrawn. From the new timestamp on, consumers checking
against the channel refuse it, quoting the reason; if it was the current
release, the highest remaining version becomes current. The version can
never be published again.`,
		Example: `  cacheon release channel withdraw channel --name cacheon-engine --version 0.2.0 \
    --reason "attention kernel miscomputes at head_dim 256" --targets-key targets.key --online-key online.key`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.args = args
			return runReleaseChannelWithdraw(cmd.Context(), s, o)
		},
	}
	o.keys.addFlags(cmd.Flags(), channel.RoleTargets, channel.RoleOnline)
	cmd.Flags().StringVar(&o.name, "name", "", "release name (required)")
	cmd.Flags().StringVar(&o.version, "version", "", "version to withdraw (required)")
	cmd.Flags().StringVar(&o.reason, "reason", "", "why, shown to every consumer it refuses (required)")
	cmd.Flags().BoolVar(&o.jsonOut, "json", false, "print one JSON document")
	return cmd
}

func runReleaseChannelWithdraw(_ context.Context, s Streams, o releaseChannelWithdrawOptions) error {
	if err := requireFlags("--name", o.name, "--version", o.version, "--targets-key", o.keys.targetsKey, "--online-key", o.keys.onlineKey); err != nil {
		return err
	}
	r, keys, err := openChannelRepo(o.args[0], o.keys)
	if err != nil {
		return err
	}
	defer r.Close()
	if err := r.Withdraw(o.name, o.version, o.reason, keys); err != nil {
		return err
	}
	return printChannelResult(s, o.jsonOut, o.args[0], fmt.Sprintf("withdrew %s %s", o.name, o.version), r,
		map[string]any{"name": o.name, "version": o.version, "reason": o.reason})
}

type releaseChannelRefreshOptions struct {
	keys    channelKeyOptions
	jsonOut bool
	args    []string
}

func newReleaseChannelRefreshCommand(s Streams) *cobra.Command {
	var o releaseChannelRefreshOptions
	cmd := &cobra.Command{
		Use:   "refresh DIR --online-key K",
		Short: "Sign a new snapshot and timestamp (run daily)",
		Long: `Sign a new snapshot and timestamp with fresh expiries. Consumers refuse a
channel whose timestamp has expired (a day by default), so run this from a
scheduled job; a channel nobody refreshes stops being accepted, which is the
point: a frozen mirror cannot keep serving an outdated view. The release
list (targets, 90 days) is re-signed by publish and withdraw.`,
		Example: `  cacheon release channel refresh channel --online-key online.key`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.args = args
			return runReleaseChannelRefresh(cmd.Context(), s, o)
		},
	}
	o.keys.addFlags(cmd.Flags(), channel.RoleOnline)
	cmd.Flags().BoolVar(&o.jsonOut, "json", false, "print one JSON document")
	return cmd
}

func runReleaseChannelRefresh(_ context.Context, s Streams, o releaseChannelRefreshOptions) error {
	if err := requireFlags("--online-key", o.keys.onlineKey); err != nil {
		return err
	}
	r, keys, err := openChannelRepo(o.args[0], o.keys)
	if err != nil {
		return err
	}
	defer r.Close()
	if err := r.Refresh(keys); err != nil {
		return err
	}
	return printChannelResult(s, o.jsonOut, o.args[0], "refreshed", r, nil)
}

type releaseChannelRotateOptions struct {
	keys         channelKeyOptions
	role, newKey string
	jsonOut      bool
	args         []string
}

func newReleaseChannelRotateCommand(s Streams) *cobra.Command {
	var o releaseChannelRotateOptions
	cmd := &cobra.Command{
		Use:   "rotate DIR --role root|targets|online --new-key K --root-key K [--targets-key K] [--online-key K]",
		Short: "Replace a role's key through a new root version",
		Long: `Write root version N+1, in which ROLE's key is --new-key, signed by the
current root key (and, when the root key itself rotates, by the new one),
then re-sign what the role signs with the new key and bump the snapshot and
timestamp. Consumers pinned to any older root walk the chain version by
version, so nobody needs a new root file. Give the keys that must sign:
--targets-key when the online key rotates, --online-key when the targets key
rotates; a root rotation writes the new root alone and needs only the root
keys. A rotation killed part-way is finished by the same command again.`,
		Example: `  cacheon release keygen --out targets-2027
  cacheon release channel rotate channel --role targets --new-key targets-2027.key \
    --root-key root.key --online-key online.key`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.args = args
			return runReleaseChannelRotate(cmd.Context(), s, o)
		},
	}
	o.keys.addFlags(cmd.Flags(), channel.RoleRoot, channel.RoleTargets, channel.RoleOnline)
	cmd.Flags().StringVar(&o.role, "role", "", "root, targets or online (required)")
	cmd.Flags().StringVar(&o.newKey, "new-key", "", "the role's new private key (required)")
	cmd.Flags().BoolVar(&o.jsonOut, "json", false, "print one JSON document")
	return cmd
}

func runReleaseChannelRotate(_ context.Context, s Streams, o releaseChannelRotateOptions) error {
	if err := requireFlags("--role", o.role, "--new-key", o.newKey, "--root-key", o.keys.rootKey); err != nil {
		return err
	}
	newKey, err := key.LoadSigner(o.newKey)
	if err != nil {
		return fmt.Errorf("--new-key: %w", err)
	}
	r, keys, err := openChannelRepo(o.args[0], o.keys)
	if err != nil {
		return err
	}
	defer r.Close()
	if err := r.Rotate(o.role, newKey, keys); err != nil {
		return err
	}
	id, _ := key.ID(newKey.Public())
	return printChannelResult(s, o.jsonOut, o.args[0], fmt.Sprintf("the %s role is now key %s", o.role, id), r, map[string]any{"role": o.role, "key_id": id})
}

// describeSelection is the channel check's detail line.
func describeSelection(sel *channel.Selection) string {
	r := sel.Record
	what := "the current release"
	if r.Version != sel.Current {
		what = "pinned; current is " + sel.Current
	}
	signed := "timestamp v" + fmt.Sprint(sel.Status.TimestampVersion)
	if sel.Status.Age != "" {
		signed += " signed " + sel.Status.Age
	}
	return fmt.Sprintf("%s %s (%s), published %s; %s, expires %s; %s", r.Name, r.Version, what, r.PublishedAt.UTC().Format(time.RFC3339), signed, sel.Status.TimestampExpires.Format(time.RFC3339), enginecli.DescribeState(sel.Status))
}

type releaseChannelShowOptions struct {
	channelRoot, channelState, name string
	now                             string
	jsonOut                         bool
	args                            []string
}

func newReleaseChannelShowCommand(s Streams) *cobra.Command {
	var o releaseChannelShowOptions
	cmd := &cobra.Command{
		Use:   "show DIR|URL --channel-root ROOT [--name NAME]",
		Short: "Check a channel as a consumer would and list its releases",
		Long: `Run the consumer's check of the channel in DIR or at URL (root chain from the root
you trust, timestamp, snapshot and release list, none expired) and list the
releases it holds, withdrawn ones with their reason.`,
		Example: `  cacheon release channel show channel --channel-root 1.root.json
  cacheon release channel show mirror --channel-root 1.root.json --name cacheon-engine --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.args = args
			return runReleaseChannelShow(cmd.Context(), s, o)
		},
	}
	cmd.Flags().StringVar(&o.channelRoot, "channel-root", "", "the channel's root metadata you trust (required)")
	cmd.Flags().StringVar(&o.channelState, "channel-state", "", "writable directory keeping what the check accepted, one file per trusted root key; an older copy of the channel is then refused (show keeps no state unless given one)")
	cmd.Flags().StringVar(&o.name, "name", "", "list only this release name")
	cmd.Flags().StringVar(&o.now, "now", "", "judge expiry at this RFC 3339 time instead of now")
	cmd.Flags().BoolVar(&o.jsonOut, "json", false, "print one JSON document")
	return cmd
}

func runReleaseChannelShow(ctx context.Context, s Streams, o releaseChannelShowOptions) error {
	if err := requireFlags("--channel-root", o.channelRoot); err != nil {
		return err
	}
	now, err := enginecli.ParseNow("--now", o.now)
	if err != nil {
		return err
	}
	root, err := os.ReadFile(o.channelRoot)
	if err != nil {
		return fmt.Errorf("--channel-root: %w", err)
	}
	src, err := channel.OpenSource(ctx, o.args[0])
	if err != nil {
		return err
	}
	ch, err := channel.Load(channel.Options{Source: src, TrustedRoot: root, Now: now, State: o.channelState})
	if err != nil {
		return err
	}
	entries, err := ch.Releases(o.name)
	if err != nil {
		return err
	}
	if entries == nil {
		entries = []channel.Entry{}
	}
	if o.jsonOut {
		return enginecli.WriteJSON(s.Out, map[string]any{"format_version": 1, "channel": ch.Status, "releases": entries})
	}
	st := ch.Status
	fmt.Fprintf(s.Out, "channel %s: root v%d, targets v%d, timestamp v%d signed %s, expires %s\n", st.Source, st.RootVersion, st.TargetsVersion, st.TimestampVersion, st.Age, st.TimestampExpires.Format(time.RFC3339))
	for _, e := range entries {
		status := "published " + e.Record.PublishedAt.UTC().Format(time.RFC3339)
		if e.Withdrawn != nil {
			status = fmt.Sprintf("WITHDRAWN %s: %s", e.Withdrawn.WithdrawnAt.UTC().Format(time.RFC3339), e.Withdrawn.Reason)
		}
		fmt.Fprintf(s.Out, "  %s %s %s %s\n", e.Record.Name, e.Record.Version, e.Record.ImageDigest, status)
	}
	return nil
}

// channelReport is the JSON form of a channel check inside a verification
// report.
func channelReport(sel *channel.Selection) json.RawMessage {
	b, err := json.Marshal(sel)
	if err != nil {
		return nil
	}
	return b
}
