package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cacheon/engine/internal/reject"
	"github.com/cacheon/engine/release/key"
	"github.com/cacheon/engine/release/rebuild"
	"github.com/cacheon/engine/release/verify"
	"github.com/cacheon/engine/tools/cli/enginecli"
)

// releaseRebuildOptions are the flags and arguments of release rebuild.
type releaseRebuildOptions struct {
	keyPath, sourceRepo, work, catalogPath string
	buildUser                              string
	sources, sourceBuildEnv                []string
	insecure, jsonOut, allowToolchain      bool
	entrypointFromImage, runSourceBuild    bool
	args                                   []string
}

func newReleaseRebuildCommand(s Streams) *cobra.Command {
	var o releaseRebuildOptions
	cmd := &cobra.Command{
		Use:   "rebuild --key PUB [--source-repo DIR] LAYOUT|REF",
		Short: "Rebuild a published release from its published inputs and compare digests",
		Long: `Verify a release, rebuild it from what was published and compare every
digest. The inputs come from the release itself: the release stack, review
records, model receipt, substrate and entrypoint from its layers, the pinned
base image from the same layout or repository. With --source-repo (a git
repository holding the review commits) the engine tree is re-materialized
from the reviewed source instead of taken from the image, which also proves
that the shipped tree is what the reviewed source gives; and when the release
records the entrypoint's source (repository, commit, Bazel target), the
entrypoint binary is rebuilt too: a clone of --source-repo at that commit,
its tools/bootstrap.sh, then bazel build of the target, compared byte for
byte (--entrypoint-from-image skips this and says so). On a mismatch the
first differing layer and file is printed and the exit code is 2.

Rebuilding the entrypoint runs the source repository's own build steps:
its tools/bootstrap.sh and its BUILD files are code whoever controls that
commit (for a consumer, the release's signer) chose, and they run on this
machine as your user. They run only with --run-source-build-scripts
(without it such a rebuild is refused, exit 2), and then with an emptied
environment: PATH=/usr/bin:/bin, HOME a fresh directory in the work
directory, LANG=C.UTF-8, TZ=UTC, and only the variables you hand over with
--source-build-env NAME=VALUE (a module proxy, a cache directory; HOME to
reuse your own caches, for a source you trust as you trust yourself). Run
as root, --source-build-user UID:GID runs them as that unprivileged user
instead, handing it only the clone, their HOME and their Bazel output base
(every directory above the work directory must let it search).

The layer bytes depend on the compressor, so the Go toolchain the release
records is part of its identity: rebuild with a cacheon built by that
toolchain (GOTOOLCHAIN=<version>). --allow-toolchain-mismatch compares
anyway and reports layers whose files are equal but whose bytes are not.`,
		Example: `  cacheon release rebuild --key release.pub release-1.0
  cacheon release rebuild --key release.pub --source-repo . --run-source-build-scripts registry.example.com/cacheon/engine:1.0`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.args = args
			return runReleaseRebuild(cmd.Context(), s, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.keyPath, "key", "", "trusted public key (PEM) or key policy file (required)")
	f.StringVar(&o.sourceRepo, "source-repo", "", "git repository holding the review commits: re-materialize the engine tree")
	f.StringArrayVar(&o.sources, "source", nil, "TARGET=PATH: the contribution's directory in --source-repo (default: searched by digest)")
	f.StringVar(&o.catalogPath, "catalog", "", "target catalog HCL file for re-materializing (default: the built-in catalog)")
	f.StringVar(&o.work, "work", "", "scratch directory to keep (default: a temporary one, removed)")
	f.BoolVar(&o.entrypointFromImage, "entrypoint-from-image", false, "take the entrypoint binary from the image even when the release records its source (skips the Bazel rebuild)")
	f.BoolVar(&o.runSourceBuild, "run-source-build-scripts", false, "run the source repository's tools/bootstrap.sh and bazel build (code its owner chose) to rebuild the entrypoint, with an emptied environment")
	f.StringVar(&o.buildUser, "source-build-user", "", "UID:GID: run the source's build steps as this unprivileged user (needs root; with --run-source-build-scripts)")
	f.StringArrayVar(&o.sourceBuildEnv, "source-build-env", nil, "NAME=VALUE: a variable handed to the source's build steps on purpose (with --run-source-build-scripts)")
	f.BoolVar(&o.allowToolchain, "allow-toolchain-mismatch", false, "rebuild even if this binary's Go toolchain is not the release's")
	f.BoolVar(&o.insecure, "insecure", false, "use plain HTTP for the registry")
	f.BoolVar(&o.jsonOut, "json", false, "print one JSON document")
	cmd.MarkFlagRequired("key")
	return cmd
}

func runReleaseRebuild(ctx context.Context, s Streams, o releaseRebuildOptions) error {
	policy, err := key.LoadPolicy(o.keyPath)
	if err != nil {
		return err
	}
	opts := rebuild.Options{Policy: policy, Work: o.work, SourceRepo: o.sourceRepo, AllowToolchainMismatch: o.allowToolchain, EntrypointFromImage: o.entrypointFromImage,
		RunSourceBuild: o.runSourceBuild, SourceBuildEnv: o.sourceBuildEnv, SourcePaths: map[string]string{}}
	if o.buildUser != "" {
		if opts.BuildUser, err = rebuild.ParseBuildUser(o.buildUser); err != nil {
			return err
		}
	}
	for _, src := range o.sources {
		target, p, ok := strings.Cut(src, "=")
		if !ok {
			return reject.Errorf("--source %q: want TARGET=PATH", src)
		}
		opts.SourcePaths[target] = p
	}
	if o.sourceRepo != "" {
		if opts.Catalog, err = enginecli.BundleCatalog(o.catalogPath); err != nil {
			return reject.Wrap(err)
		}
	}
	if !o.jsonOut {
		opts.Progress = enginecli.ReleaseProgress(s, "rebuild")
	}
	st, err := openRelease(ctx, o.args[0], o.insecure)
	if err != nil {
		return err
	}
	res, err := rebuild.Run(st, opts)
	var failed *verify.Failure
	var mismatch *rebuild.Mismatch
	switch {
	case errors.As(err, &failed):
		return reject.Wrap(err)
	case err != nil && !errors.As(err, &mismatch):
		return err
	}
	if o.jsonOut {
		if werr := enginecli.WriteJSON(s.Out, res); werr != nil {
			return werr
		}
		if mismatch != nil {
			return enginecli.AlreadyReported(reject.ErrRejected)
		}
		return nil
	}
	if mismatch != nil {
		return reject.Wrap(err)
	}
	fmt.Fprintf(s.Out, "reproduced %s\n  rebuilt digest %s\n  engine tree    %s", res.ImageDigest, res.RebuiltDigest, res.EngineTreeDigest)
	if res.Rematerialized {
		fmt.Fprint(s.Out, " (re-materialized from the reviewed source)")
	}
	fmt.Fprintf(s.Out, "\n  entrypoint     %s\n  toolchain      %s\n", res.EntrypointSource, res.RebuildGoVersion)
	return nil
}
