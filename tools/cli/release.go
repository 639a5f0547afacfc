package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cacheon/engine/internal/reject"
	"github.com/cacheon/engine/release/store"
	"github.com/cacheon/engine/release/store/remote"
)

func newReleaseCommand(s Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "release",
		Short: "Build, sign, verify, publish and rebuild engine releases",
		Long: `A release is an OCI image of a release stack's engine tree, on a base image
pinned by digest, with an SPDX 2.3 SBOM and an in-toto SLSA v1 provenance
statement attached to it, signed with an external key as a sigstore bundle.

The pipeline, in order:

  review    bind a crowned payload to reviewed source at a git commit
  build     build the image, SBOM and provenance into an OCI layout
  sign      sign the provenance with your key and attach the bundle
  verify    check everything offline against a trusted public key
  publish   push the release to any OCI registry (tag written last)
  mirror    copy a published release to another registry, attestations too
  channel   list releases in a signed channel: current, withdrawn, fresh
  rebuild   rebuild a published release and compare digests

Everything works offline and without a chain: a consumer needs the release
(an OCI layout directory or a registry reference) and the public key.
Exit codes: 0 success, 2 a check failed or the input was rejected, 1 a usage
or I/O error.`,
	}
	cmd.AddCommand(
		newReleaseReviewCommand(s),
		newReleaseBaseCommand(s),
		newReleaseKeygenCommand(s),
		newReleaseBuildCommand(s),
		newReleaseSignCommand(s),
		newReleaseVerifyCommand(s),
		newReleasePublishCommand(s),
		newReleaseMirrorCommand(s),
		newReleaseChannelCommand(s),
		newReleaseRebuildCommand(s),
		newReleaseLayoutCommand(s),
		newReleaseLinkCommand(s),
		newReleaseServeCommand(s),
	)
	return cmd
}

// releaseProgress prints one line per stage to stderr.
func releaseProgress(s Streams, verb string) func(string) {
	return func(stage string) { fmt.Fprintf(s.Err, "cacheon release %s: %s\n", verb, stage) }
}

// buildError classifies an error of release build. release/build does not
// mark its refusals with the rejection root yet, so until it does a build
// error that is not about a missing or unreadable file is taken as a
// refusal of its inputs (exit 2), as it always was. Every other command
// returns its libraries' errors as they are.
func buildError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return err
	}
	return reject.Wrap(err)
}

// openRelease opens LAYOUT|REF: a directory holding an OCI layout, or a
// registry reference whose requests stop when ctx is cancelled.
func openRelease(ctx context.Context, arg string, insecure bool) (store.Store, error) {
	if info, err := os.Stat(arg); err == nil && info.IsDir() {
		return store.OpenLayout(arg)
	}
	if strings.HasPrefix(arg, ".") || strings.HasPrefix(arg, "/") {
		return nil, fmt.Errorf("%s: no such OCI layout directory", arg)
	}
	return remote.Open(arg, insecure, remote.WithContext(ctx))
}
