package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/cacheon/engine/internal/atomicwrite"
	"github.com/cacheon/engine/internal/reject"
	"github.com/cacheon/engine/release/channel"
	"github.com/cacheon/engine/release/image"
	"github.com/cacheon/engine/release/intoto"
	"github.com/cacheon/engine/release/key"
	"github.com/cacheon/engine/release/store/remote"
	"github.com/cacheon/engine/release/verify"
	"github.com/cacheon/engine/tools/cli/enginecli"
)

// releaseVerifyOptions are the flags and arguments of release verify.
type releaseVerifyOptions struct {
	keyPath, now, layoutPath, linkDir, bundleOut string
	rootfs                                       string
	layoutKeys                                   []string
	channel                                      enginecli.ChannelCheckOptions
	insecure, jsonOut                            bool
	args                                         []string
}

func newReleaseVerifyCommand(s Streams) *cobra.Command {
	var o releaseVerifyOptions
	cmd := &cobra.Command{
		Use:   "verify --key PUB [--layout-key PUB [--layout FILE --links DIR]] LAYOUT|REF",
		Short: "Verify a release offline against a trusted public key",
		Long: `Verify a release with nothing but the release itself (an OCI layout
directory or a registry reference) and the public key you trust. No chain,
wallet, miner URL, referee database, transparency log or timestamp service
is consulted.

--key is a PEM public key, or a key policy file listing trusted keys with
validity windows:
  {"type":"cacheon.release-keys.v1","keys":[{"public_key":"-----BEGIN ...",
   "not_before":"2026-01-01T00:00:00Z","not_after":"2027-01-01T00:00:00Z"}]}
Key validity is checked at verification time (--now to check another time):
signatures carry no trusted time without a timestamp service. With --channel
it is checked at the publication time the signed channel recorded instead.

Checks, each named in its failure: image-manifest, attestations, key-policy,
signature, predicate-type, builder, subjects, layers, image-blobs,
release-descriptor, engine-tree, integrations, substrate, entrypoint,
model-receipt, sbom, sbom-attestation, provenance.

Every signature bundle attached to the image is tried: the release passes
when one verifies with a trusted key and signs a statement about this very
image, so a bundle of another release attached beside the genuine one
changes nothing. The SBOM must also be attached signed, as an in-toto
attestation (predicate type https://spdx.dev/Document, cosign's spdxjson)
by a trusted key about this image whose predicate is the release's SBOM
(sbom-attestation). Referrers the verification does not need (other artifact
types, or ones whose manifest or blob is missing, oversized or does not
match its digest) are skipped and listed as notes in the report; when no
usable candidate of a type the release needs remains, its check fails.
Attacker-controlled input never ends in exit 1: a missing or oversized
blob, or a layer that does not decompress or unpack, fails a named check
(exit 2). With --json one report is printed on every path, with "error"
set when verification did not complete.

With --layout-key the release is also checked against its chain of
custody, the project's signed in-toto supply-chain layout (see "cacheon
release layout"): the layout's signature by a --layout-key and its expiry,
the functionaries' links (two qualifications by distinct validator keys,
the review, the materialization, the build and the signature), the
artifact rules between the steps, and that the links describe this very
release (check in-toto-layout). The layout and the links are read from the
release itself, where "cacheon release attach-custody" attached them (a
release that carries none fails the check); --layout FILE and --links DIR
check a layout and links held beside the release instead. Without
--layout-key, a chain the release carries is not checked, and a note says
so.

With --channel the release is also checked against a signed release channel
(see "cacheon release channel"), starting from the root metadata you trust
(--channel-root): the channel must be fresh (its timestamp unexpired at
--now), and the release must be the current release of --name (or the
--version you pin, or the current one at or above --min-version), not
withdrawn, and signed by the key the channel recorded (check channel).
Pin the newest channel root you hold as --channel-root.

The check keeps what it accepted (the newest root and the highest versions)
in a state file per trusted root key, under --channel-state DIR or, by
default, channel-state in the cache directory ($CACHEON_CACHE, else
~/.cache/cacheon). A later check then refuses an older copy of the channel
(a stale mirror, a rolled-back channel), naming both versions and the file,
and a mirror that withholds a root rotation cannot bring a retired key's
timestamps back. --no-channel-state checks without state and warns that
rollback protection is off. The report's "channel" object holds the
selected record and the channel's versions, age and state file.`,
		Example: `  cacheon release verify --key release.pub release-1.0
  cacheon release verify --key release.pub --layout-key owner.pub release-1.0
  cacheon release verify --key release.pub --layout root.layout --layout-key owner.pub --links links release-1.0
  cacheon release verify --key release.pub --json registry.example.com/cacheon/engine:1.0
  cacheon release verify --key release.pub --channel https://example.com/channel --channel-root 2.root.json \
    --name cacheon-engine registry.example.com/cacheon/engine:1.0`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.args = args
			return runReleaseVerify(cmd.Context(), s, o)
		},
	}
	cmd.Flags().StringVar(&o.keyPath, "key", "", "trusted public key (PEM) or key policy file (required)")
	cmd.Flags().StringVar(&o.now, "now", "", "evaluate key validity at this RFC 3339 time instead of now")
	cmd.Flags().StringVar(&o.layoutPath, "layout", "", "signed in-toto supply-chain layout to check the release against, instead of the one the release carries")
	cmd.Flags().StringArrayVar(&o.layoutKeys, "layout-key", nil, "public key of the layout's owner (repeat): check the chain of custody (the release's own, or --layout and --links)")
	cmd.Flags().StringVar(&o.linkDir, "links", "", "directory of the functionaries' in-toto links (with --layout)")
	cmd.Flags().StringVar(&o.rootfs, "rootfs", "", "after it verified, unpack the image's root filesystem into this new directory (to run with chroot, unshare or an OCI runtime)")
	cmd.Flags().StringVar(&o.bundleOut, "bundle-out", "", "write the signature bundle that verified to FILE (for the entrypoint's trust mount)")
	cmd.Flags().BoolVar(&o.insecure, "insecure", false, "use plain HTTP for the registry")
	cmd.Flags().BoolVar(&o.jsonOut, "json", false, "print the verification report as JSON")
	o.channel.AddFlags(cmd.Flags())
	cmd.MarkFlagRequired("key")
	return cmd
}

func runReleaseVerify(ctx context.Context, s Streams, o releaseVerifyOptions) error {
	rel, err := verifyRelease(ctx, s, o)
	var rep *verify.Report
	if rel != nil {
		rep = rel.Report
	}
	if err == nil && o.bundleOut != "" {
		// Only a bundle that verified is handed out, for the
		// entrypoint's trust mount.
		if werr := atomicwrite.WriteFile(o.bundleOut, rel.Bundle, 0o644); werr != nil {
			err = werr
		}
	}
	if err == nil && o.rootfs != "" {
		err = unpackVerified(ctx, s, o, rel)
	}
	return reportVerification(s, o.args[0], rep, err, o.jsonOut)
}

// verifyRelease loads the key policy and the optional layout check, opens
// the release and verifies it. The release it returns carries the report
// (nil when verification never started).
func verifyRelease(ctx context.Context, s Streams, o releaseVerifyOptions) (*verify.Release, error) {
	policy, err := key.LoadPolicy(o.keyPath)
	if err != nil {
		return nil, err
	}
	opts := verify.Options{Policy: policy}
	if o.now != "" {
		if opts.Now, err = time.Parse(time.RFC3339, o.now); err != nil {
			return nil, reject.Errorf("--now: %w", err)
		}
	}
	if err := o.channel.Validate(); err != nil {
		return nil, err
	}
	var sel *channel.Selection
	if o.channel.Enabled() {
		checkNow := opts.Now
		if checkNow.IsZero() {
			checkNow = time.Now()
		}
		if sel, err = o.channel.SelectRelease(ctx, s.Err, "release verify", checkNow); err != nil {
			if !reject.Is(err) {
				return nil, err
			}
			rep := &verify.Report{FormatVersion: verify.FormatVersion, Location: o.args[0], Contributions: []string{}, Checks: []verify.CheckResult{}, Notes: []string{}}
			rep.AddCheck(verify.CheckChannel, false, err.Error())
			return &verify.Release{Report: rep}, &verify.Failure{Check: verify.CheckChannel, Err: err}
		}
		// The signing key must have been valid when the release was
		// published, not necessarily now.
		opts.Now = sel.Record.PublishedAt
	}
	if !o.jsonOut {
		opts.Progress = enginecli.ReleaseProgress(s, "verify")
	}
	switch {
	case o.layoutPath != "":
		if len(o.layoutKeys) == 0 || o.linkDir == "" {
			return nil, errors.New("--layout needs --layout-key and --links")
		}
		check, err := intoto.LoadCheck(o.layoutPath, o.layoutKeys, o.linkDir)
		if err != nil {
			return nil, err
		}
		opts.Layout = check
	case o.linkDir != "":
		return nil, errors.New("--links needs --layout (without both, --layout-key checks the chain of custody the release carries)")
	case len(o.layoutKeys) > 0:
		// The chain of custody the release carries.
		check, err := intoto.AttachedCheck(o.layoutKeys)
		if err != nil {
			return nil, err
		}
		opts.Layout = check
	}
	st, err := openRelease(ctx, o.args[0], o.insecure)
	if err != nil {
		return nil, err
	}
	rel, err := verify.Run(st, opts)
	if err != nil || sel == nil {
		return rel, err
	}
	rep := rel.Report
	rep.Channel = channelReport(sel)
	if err := sel.Match(rep.ImageDigest, rep.DescriptorDigest, rep.KeyID); err != nil {
		rep.AddCheck(verify.CheckChannel, false, err.Error())
		rep.Verified = false
		return rel, &verify.Failure{Check: verify.CheckChannel, Err: err}
	}
	rep.AddCheck(verify.CheckChannel, true, describeSelection(sel))
	return rel, nil
}

// reportVerification prints a verification report and maps its outcome
// to an exit code: a failed check is 2, an I/O error 1. With --json it
// prints one report on every path: a verification that never started
// (a key that does not load, a release that does not open) gets a report
// with no checks and the error.
func reportVerification(s Streams, location string, rep *verify.Report, err error, jsonOut bool) error {
	var failed *verify.Failure
	isCheck := errors.As(err, &failed)
	if rep == nil {
		rep = &verify.Report{FormatVersion: verify.FormatVersion, Location: location, Contributions: []string{}, Checks: []verify.CheckResult{}, Notes: []string{}}
	}
	if err != nil && rep.Error == "" {
		rep.Error = err.Error()
	}
	if jsonOut {
		if werr := enginecli.WriteJSON(s.Out, rep); werr != nil {
			return werr
		}
		switch {
		case isCheck:
			return enginecli.AlreadyReported(reject.Wrap(err))
		case err != nil:
			// The document is out; the message still goes to stderr,
			// and the exit code is the error's.
			fmt.Fprintf(s.Err, "cacheon: %v\n", err)
			return enginecli.AlreadyReported(err)
		}
		return nil
	}
	for _, c := range rep.Checks {
		mark := "ok  "
		if !c.OK {
			mark = "FAIL"
		}
		fmt.Fprintf(s.Out, "%s %-19s %s\n", mark, c.Name, c.Detail)
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(s.Out, "note %s\n", n)
	}
	if err != nil && !isCheck {
		return err
	}
	if isCheck {
		return reject.Wrap(err)
	}
	fmt.Fprintf(s.Out, "verified %s@%s\n  engine tree %s\n  descriptor  %s\n  signed by   %s\n", rep.Image, rep.ImageDigest, rep.EngineTreeDigest, rep.DescriptorDigest, rep.KeyID)
	return nil
}

// unpackVerified unpacks the verified image into a new directory at
// o.rootfs, through a temporary sibling renamed into place, so a failed
// unpack (a layer served with other bytes than the verifier read) leaves
// nothing behind.
func unpackVerified(ctx context.Context, s Streams, o releaseVerifyOptions, rel *verify.Release) error {
	if _, err := os.Lstat(o.rootfs); err == nil {
		return fmt.Errorf("--rootfs %s already exists", o.rootfs)
	}
	st, err := openRelease(ctx, o.args[0], o.insecure)
	if err != nil {
		return err
	}
	img, err := remote.Image(st, rel.Image.Digest)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(o.rootfs), "."+filepath.Base(o.rootfs)+".tmp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if !o.jsonOut {
		fmt.Fprintf(s.Err, "cacheon release verify: unpacking %d layers into %s\n", len(rel.Manifest.Layers), o.rootfs)
	}
	if err := image.UnpackRootfs(img, tmp); err != nil {
		return fmt.Errorf("unpack %s: %w", o.rootfs, err)
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	return os.Rename(tmp, o.rootfs)
}
