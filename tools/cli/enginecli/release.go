package enginecli

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/spf13/cobra"

	"github.com/cacheon/engine/internal/reject"
)

// NewReleaseCommand is the release group with the two commands an engine
// build and its image run: build (the rules' release action) and serve
// (the image's entrypoint). The full command line adds the rest of the
// pipeline to it; the help text describes the whole pipeline either way,
// so the two binaries print the same help for the same command.
func NewReleaseCommand(s Streams) *cobra.Command {
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
		newReleaseBuildCommand(s),
		newReleaseServeCommand(s),
	)
	return cmd
}

// ReleaseProgress prints one line per stage to stderr.
func ReleaseProgress(s Streams, verb string) func(string) {
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
