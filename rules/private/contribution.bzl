"""Implementation of cacheon_contribution."""

load("//rules:providers.bzl", "CacheonContributionInfo")
load(":common.bzl", "CACHEON_TOOL_ATTRS", "STAGE", "canonical_label", "run_staged")

def _cacheon_contribution_impl(ctx):
    dir = ctx.attr.dir or ctx.label.name
    root = "/".join([p for p in [ctx.label.workspace_root, ctx.label.package, dir] if p])
    prefix = root + "/"
    for f in ctx.files.srcs:
        if not f.path.startswith(prefix):
            fail("cacheon_contribution {}: srcs must lie in the bundle directory {}, but {} does not; use srcs = glob([\"{}/**\"])".format(
                canonical_label(ctx.label),
                root,
                f.short_path,
                dir,
            ))
    if not ctx.files.srcs:
        fail("cacheon_contribution {}: the bundle directory {} has no files (srcs = glob([\"{}/**\"]))".format(canonical_label(ctx.label), root, dir))

    identity = ctx.actions.declare_file(ctx.label.name + ".identity.json")
    args = ctx.actions.args()
    args.add("bundle")
    args.add("inspect")
    args.add("--json")
    args.add(STAGE + "/" + root)
    run_staged(
        ctx,
        dirs = [root],
        inputs = depset(ctx.files.srcs),
        outputs = [identity],
        tool = ctx.executable._cacheon,
        args = args,
        mnemonic = "CacheonContribution",
        progress_message = "Inspecting contribution %s" % ctx.label,
        stdout = identity,
    )
    files = depset(ctx.files.srcs)
    return [
        DefaultInfo(files = depset([identity], transitive = [files])),
        CacheonContributionInfo(
            label = canonical_label(ctx.label),
            dir = root,
            files = files,
            identity = identity,
        ),
    ]

cacheon_contribution = rule(
    implementation = _cacheon_contribution_impl,
    doc = """A contribution bundle: one directory of Python/Triton/CUDA source.

The bundle directory holds no BUILD file of its own, so its bytes are
exactly what a miner submits; its parent's BUILD file declares it:

    # kernels/contributions/BUILD.bazel
    cacheon_contribution(
        name = "silu_and_mul_triton",
        srcs = glob(["silu_and_mul_triton/**"]),
    )

Stack files then name it `//kernels/contributions:silu_and_mul_triton`.
Building it parses the manifest, resolves the target and computes the
bundle's identities (`<name>.identity.json`); a bundle that does not
resolve fails the build with the reason.
""",
    attrs = dict(CACHEON_TOOL_ATTRS, **{
        "srcs": attr.label_list(
            allow_files = True,
            mandatory = True,
            doc = "Every file of the bundle, usually glob([\"<dir>/**\"]).",
        ),
        "dir": attr.string(
            doc = "The bundle directory, relative to this package (default: the target name).",
        ),
    }),
    provides = [CacheonContributionInfo],
)
