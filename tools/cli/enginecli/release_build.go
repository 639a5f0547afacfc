package enginecli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cacheon/engine/internal/reject"
	"github.com/cacheon/engine/release/build"
	"github.com/cacheon/engine/release/descriptor"
	"github.com/cacheon/engine/release/layer"
)

// releaseBuildOptions are the flags and arguments of release build.
type releaseBuildOptions struct {
	in                                     build.Inputs
	compression                            string
	sourceRepo, sourceCommit, sourceTarget string
	allowLocalSource                       bool
	jsonOut                                bool
	args                                   []string
}

func newReleaseBuildCommand(s Streams) *cobra.Command {
	var o releaseBuildOptions
	cmd := &cobra.Command{
		Use:   "build --engine-tree DIR --release-manifest FILE --review FILE... --substrate DIR --model-receipt FILE --entrypoint FILE --name NAME --out DIR",
		Short: "Build a release image, SBOM and provenance into an OCI layout",
		Long: `Build the release of a release stack: an OCI image holding the
materialized engine tree, the substrate, the release descriptor with the
review records and model receipt, and the static cacheon binary as its
fail-closed entrypoint, on a base image pinned by digest. The SBOM (SPDX
2.3) and the provenance (in-toto Statement v1, SLSA provenance v1) are
attached to the image as OCI artifacts. The output is a new OCI image
layout at --out; sign it next.

Checks before anything is written: the release stack holds integrated
contributions only, each covered by exactly one approved review record;
the engine tree has the materializer's published shape and was
materialized from this release stack; the model receipt is valid.

Every input is a flag; nothing depends on the working directory, umask,
timezone, locale or clock, so a build action gets byte-identical output
wherever it runs. Dates are --source-date-epoch. The Go toolchain of this
binary is part of the release identity (it decides the gzip bytes), and is
recorded in the descriptor and provenance.

With --entrypoint-source-repo URL and --entrypoint-source-commit, the
descriptor, provenance and SBOM record where the entrypoint's source is
fetched from, so consumers can clone it and rebuild the binary (release
rebuild --source-repo). The URL must be one a consumer can fetch
(https://, ssh://, git://, or user@host:path): a local path or file:// URL
is refused, since it names a directory on the builder's machine only and
would publish its layout. --allow-local-source accepts one anyway, with a
warning, and records the source as an unpublished local checkout (the
commit, not the path).`,
		Example: `  cacheon release build \
    --engine-tree bazel-bin/stacks/release_tree \
    --release-manifest bazel-bin/stacks/release_manifest.json \
    --review reviews/silu.json \
    --substrate kernels/substrate \
    --model-receipt models/model-provision-sha256-<digest>.json \
    --entrypoint bazel-bin/tools/cmd/cacheon-engine/cacheon-engine_/cacheon-engine \
    --base-layout base-layout --base-digest sha256:<digest> --base-name scratch \
    --name cacheon-engine:1.0 --source-date-epoch 1767225600 \
    --entrypoint-source-repo https://example.com/cacheon/engine.git \
    --entrypoint-source-commit $(git rev-parse HEAD) \
    --out release-1.0`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.args = args
			return runReleaseBuild(cmd.Context(), s, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.in.EngineTree, "engine-tree", "", "materialized engine tree of the release stack (required)")
	f.StringVar(&o.in.ReleaseManifest, "release-manifest", "", "release stack manifest, canonical JSON (required)")
	f.StringArrayVar(&o.in.Reviews, "review", nil, "integration review record; one per integrated contribution")
	f.StringVar(&o.in.Substrate, "substrate", "", "substrate directory (required)")
	f.StringVar(&o.in.ModelReceipt, "model-receipt", "", "provision receipt of the sealed model (required)")
	f.StringVar(&o.in.Entrypoint, "entrypoint", "", "static cacheon binary to ship as the entrypoint (required)")
	f.StringVar(&o.sourceRepo, "entrypoint-source-repo", "", "record the repository the entrypoint is built from, a URL consumers clone (https://, ssh://, git://, or user@host:path), with --entrypoint-source-commit, so they rebuild it; a local path or file:// URL is refused without --allow-local-source")
	f.BoolVar(&o.allowLocalSource, strings.TrimPrefix(allowLocalSourceFlag, "--"), false, "accept a local path as --entrypoint-source-repo: the release records only that the source is an unpublished local checkout (not the path), so consumers need the commit from elsewhere")
	f.StringVar(&o.sourceCommit, "entrypoint-source-commit", "", "the full git commit the entrypoint is built from")
	f.StringVar(&o.sourceTarget, "entrypoint-bazel-target", "//tools/cmd/cacheon-engine", "the Bazel target that builds the entrypoint at that commit")
	f.StringVar(&o.in.BaseLayout, "base-layout", "", "OCI layout holding the base image (default: the scratch base)")
	f.StringVar(&o.in.BaseDigest, "base-digest", "", "manifest digest pinning the base image, sha256:<hex>")
	f.StringVar(&o.in.BaseName, "base-name", "", "name of the base image, recorded in the SBOM and provenance")
	f.StringVar(&o.in.Platform, "platform", "linux/amd64", "image platform os/arch[/variant]")
	f.StringVar(&o.in.Name, "name", "", "image name, e.g. cacheon-engine:1.0 (required)")
	f.StringArrayVar(&o.in.ServeCommand, "serve-arg", nil, "argument of the command the entrypoint runs after verifying (repeat; placeholders {engine_tree} {substrate} {model}; default: python3 -m cacheon_substrate.serve --engine-tree {engine_tree} --model {model})")
	f.StringArrayVar(&o.in.ServeEnv, "serve-env", nil, "KEY=VALUE for the served process (repeat; default PYTHONDONTWRITEBYTECODE=1 and PYTHONPATH={substrate}:{engine_tree})")
	f.StringVar(&o.in.ModelMount, "model-mount", "/cacheon/model", "where the model is mounted at run time")
	f.Int64Var(&o.in.Epoch, "source-date-epoch", 0, "seconds since the Unix epoch used for every date")
	f.StringVar(&o.compression, "compression", string(layer.Gzip), "layer compression: gzip or zstd")
	f.IntVar(&o.in.Level, "compression-level", 0, "compression level (0: the compressor's default)")
	f.StringVar(&o.in.Out, "out", "", "new OCI layout directory (required; must not exist or be empty)")
	f.BoolVar(&o.jsonOut, "json", false, "print one JSON document")
	for _, r := range []string{"engine-tree", "release-manifest", "substrate", "model-receipt", "entrypoint", "name", "out"} {
		cmd.MarkFlagRequired(r)
	}
	return cmd
}

func runReleaseBuild(_ context.Context, s Streams, o releaseBuildOptions) error {
	o.in.Compression = layer.Compression(o.compression)
	switch {
	case o.sourceRepo != "" && o.sourceCommit != "":
		repo, err := sourceRepository(s, o.sourceRepo, o.sourceCommit, o.allowLocalSource)
		if err != nil {
			return err
		}
		src := &descriptor.EntrypointSource{Repository: repo, Commit: o.sourceCommit, BazelTarget: o.sourceTarget}
		if err := src.Validate(); err != nil {
			return reject.Errorf("--entrypoint-source-*: %w", err)
		}
		o.in.EntrypointSource = src
	case o.sourceRepo != "" || o.sourceCommit != "":
		return reject.New("--entrypoint-source-repo and --entrypoint-source-commit go together")
	case o.allowLocalSource:
		return reject.Errorf("%s goes with --entrypoint-source-repo", allowLocalSourceFlag)
	}
	var progress build.Progress
	if !o.jsonOut {
		progress = ReleaseProgress(s, "build")
	}
	res, err := build.Build(o.in, progress)
	if err != nil {
		return buildError(err)
	}
	if o.jsonOut {
		return WriteJSON(s.Out, struct {
			FormatVersion int `json:"format_version"`
			*build.Result
		}{1, res})
	}
	fmt.Fprintf(s.Out, "layout       %s\nimage        %s@%s\nengine tree  %s\ndescriptor   %s\nintegrations %d\ngo           %s\n",
		res.Layout, res.Image, res.ImageDigest, res.EngineTreeDigest, res.DescriptorDigest, res.Contributions, res.GoVersion)
	return nil
}

// allowLocalSourceFlag is the builder's explicit consent to a release
// whose entrypoint source no consumer can fetch.
const allowLocalSourceFlag = "--allow-local-source"

// sourceRepository is the repository the release records for its
// entrypoint's source. The release is published and signed: what it
// names must be something a consumer can clone, so a URL is recorded in
// its normalized form, and a local path or file:// URL (which names a
// directory on this machine only, and would publish its layout) is
// refused unless allowed. An allowed local source is recorded as
// descriptor.UnpublishedRepository, never as the path: a rebuild takes
// its checkout from release rebuild --source-repo, so the path would
// add nothing but the leak, and the release bytes stay independent of
// where the checkout lies. The warning goes to stderr, loudly, because
// the release it makes cannot be rebuilt from its own documents.
func sourceRepository(s Streams, repo, commit string, allowLocal bool) (string, error) {
	recorded, kind, err := descriptor.ClassifyRepository(repo)
	if err != nil {
		return "", reject.Errorf("--entrypoint-source-repo: %w", err)
	}
	if kind == descriptor.Fetchable {
		return recorded, nil
	}
	if !allowLocal {
		return "", reject.Errorf("--entrypoint-source-repo %q is a local path: a consumer cannot fetch it, and the signed provenance and SBOM "+
			"would publish this machine's file-system layout; give the URL consumers clone the repository from "+
			"(https://..., ssh://..., or user@host:path; for a checkout, its `git remote get-url origin`), or pass %s "+
			"to record the source as an unpublished local checkout", repo, allowLocalSourceFlag)
	}
	fmt.Fprintf(s.Err, "cacheon release build: WARNING: %s: the entrypoint's source %q is a local path that no consumer can fetch; "+
		"the release records it as %q with commit %s, so a consumer can rebuild the entrypoint only from a copy of that commit "+
		"obtained elsewhere (release rebuild --source-repo DIR). Publish the repository and pass its URL for a release others rebuild.\n",
		allowLocalSourceFlag, repo, descriptor.UnpublishedRepository, commit)
	return descriptor.UnpublishedRepository, nil
}
