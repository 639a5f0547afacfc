"""Implementation of cacheon_release."""

load("//rules:providers.bzl", "CacheonModelInfo", "CacheonReleaseInfo", "CacheonStackInfo")
load(":common.bzl", "CACHEON_TOOL_ATTRS", "STAGE", "run_staged")

def _cacheon_release_impl(ctx):
    stack = ctx.attr.stack[CacheonStackInfo]
    model = ctx.attr.model[CacheonModelInfo]
    layout = ctx.actions.declare_directory(ctx.label.name + ".oci")
    substrate_dir = "/".join([p for p in [ctx.label.workspace_root, ctx.attr.substrate_dir] if p])

    args = ctx.actions.args()
    args.add("release")
    args.add("build")
    args.add("--engine-tree", STAGE + "/" + stack.tree.path)
    args.add("--release-manifest", stack.manifest)
    args.add_all(ctx.files.reviews, before_each = "--review")
    args.add("--substrate", STAGE + "/" + substrate_dir)
    args.add("--model-receipt", model.receipt)
    args.add("--entrypoint", ctx.executable.entrypoint)

    # --define, not a Starlark flag: a Starlark flag on the command line
    # moves every output to another configuration directory on Bazel 4,
    # rebuilding the world; a --define changes only this action.
    source_repo = ctx.var.get("entrypoint_source_repo", "")
    source_commit = ctx.var.get("entrypoint_source_commit", "")
    if source_repo or source_commit:
        args.add("--entrypoint-source-repo", source_repo)
        args.add("--entrypoint-source-commit", source_commit)
        args.add("--entrypoint-bazel-target", str(ctx.attr.entrypoint.label).replace("@//", "//"))

        # A local path is refused unless asked for by name: the release
        # then records an unpublished checkout, which consumers cannot fetch.
        if ctx.var.get("entrypoint_allow_local_source", "") == "1":
            args.add("--allow-local-source")
    args.add("--name", ctx.attr.image_name)
    args.add("--source-date-epoch", str(ctx.attr.source_date_epoch))
    args.add("--out", layout.path)
    run_staged(
        ctx,
        dirs = [substrate_dir, stack.tree.path],
        inputs = depset(
            [stack.manifest, model.receipt, ctx.executable.entrypoint] + ctx.files.reviews,
            transitive = [depset([stack.tree]), depset(ctx.files.substrate)],
        ),
        outputs = [layout],
        tool = ctx.executable._cacheon,
        args = args,
        mnemonic = "CacheonRelease",
        progress_message = "Building release image %s" % ctx.label,
        tree = layout,
    )
    return [
        DefaultInfo(files = depset([layout])),
        CacheonReleaseInfo(layout = layout, stack = stack),
    ]

cacheon_release = rule(
    implementation = _cacheon_release_impl,
    doc = """An engine release image: an OCI image layout with SBOM and provenance.

    cacheon_release(
        name = "engine",
        stack = "//stacks:release",
        substrate = "//kernels:substrate",
        model = ":tiny_llama",
        image_name = "cacheon-engine:0.1.0",
    )

Runs `cacheon release build` over the materialized release stack, the
substrate, the sealed model's receipt and the static `cacheon` entrypoint:
(with --define=entrypoint_source_repo=URL, a URL consumers clone, and
--define=entrypoint_source_commit=$(git rev-parse HEAD) the descriptor,
provenance and SBOM record what the entrypoint is built from, so
`cacheon release rebuild --source-repo` rebuilds it; a local path needs
--define=entrypoint_allow_local_source=1 and is recorded as an unpublished
local checkout);
layers from sorted tars with fixed times, owners and modes, explicit OCI
media types, an SPDX 2.3 SBOM and an in-toto SLSA provenance statement.
Signing happens outside the build graph (`cacheon release sign`): no key
ever enters an action.
""",
    attrs = dict(CACHEON_TOOL_ATTRS, **{
        "stack": attr.label(
            providers = [CacheonStackInfo],
            mandatory = True,
            doc = "The release cacheon_stack (integrated contributions only).",
        ),
        "reviews": attr.label_list(
            allow_files = [".json"],
            doc = "One integration review record per integrated contribution.",
        ),
        "substrate": attr.label(
            mandatory = True,
            allow_files = True,
            doc = "The engine substrate's files (a filegroup of its directory).",
        ),
        "substrate_dir": attr.string(
            default = "kernels/substrate",
            doc = "The substrate directory, relative to the workspace root.",
        ),
        "model": attr.label(
            providers = [CacheonModelInfo],
            mandatory = True,
            doc = "The sealed model the release serves.",
        ),
        "entrypoint": attr.label(
            default = Label("//tools/cmd/cacheon-engine"),
            executable = True,
            cfg = "target",
            doc = "The cacheon binary the image runs as /cacheon/bin/cacheon (static: .bazelrc builds pure Go); it verifies the signed release before serving. The default, cacheon-engine, is the engine build of the command line, also the rules' tool.",
        ),
        "image_name": attr.string(mandatory = True, doc = "The image name, e.g. cacheon-engine:0.1.0."),
        "source_date_epoch": attr.int(
            default = 0,
            doc = "Seconds since the Unix epoch used for every date in the image.",
        ),
    }),
    provides = [CacheonReleaseInfo],
)
