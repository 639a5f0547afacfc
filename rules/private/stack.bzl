"""Implementation of cacheon_stack."""

load("//rules:providers.bzl", "CacheonCatalogInfo", "CacheonContributionInfo", "CacheonStackInfo")
load(":common.bzl", "CACHEON_TOOL_ATTRS", "STAGE", "run_staged")

def materialize_action(ctx, src, catalog, contributions, tree, manifest, mnemonic, generated = False):
    """Registers the action that materializes a stack file into a tree.

    Args:
      ctx: the rule context.
      src: File, the stack HCL.
      catalog: CacheonCatalogInfo.
      contributions: list of CacheonContributionInfo the stack may name.
      tree: the declared output directory.
      manifest: the declared manifest JSON output.
      mnemonic: the action mnemonic.
      generated: the stack file was generated (a planned candidate), so
        contributions may hold more than it names.
    """
    args = ctx.actions.args()
    args.add("stack")
    args.add("materialize")
    args.add(src)
    args.add("--catalog", catalog.src)
    for c in contributions:
        args.add("--contribution", "{}={}/{}".format(c.label, STAGE, c.dir))
    if generated:
        args.add("--allow-unused-contributions")
    args.add("--out", tree.path)
    args.add("--manifest-out", manifest)
    args.add("--quiet")
    run_staged(
        ctx,
        dirs = [c.dir for c in contributions],
        inputs = depset([src, catalog.src], transitive = [c.files for c in contributions]),
        outputs = [tree, manifest],
        tool = ctx.executable._cacheon,
        args = args,
        mnemonic = mnemonic,
        progress_message = "Materializing %s" % ctx.label,
        tree = tree,
    )

def _cacheon_stack_impl(ctx):
    catalog = ctx.attr.catalog[CacheonCatalogInfo]
    contributions = [c[CacheonContributionInfo] for c in ctx.attr.contributions]
    tree = ctx.actions.declare_directory(ctx.label.name + ".tree")
    manifest = ctx.actions.declare_file(ctx.label.name + ".manifest.json")
    materialize_action(ctx, ctx.file.src, catalog, contributions, tree, manifest, "CacheonStack")
    return [
        DefaultInfo(files = depset([tree, manifest])),
        CacheonStackInfo(
            src = ctx.file.src,
            tree = tree,
            manifest = manifest,
            contributions = contributions,
            catalog = catalog,
        ),
    ]

cacheon_stack = rule(
    implementation = _cacheon_stack_impl,
    doc = """Materializes a stack file into a byte-deterministic engine tree.

    cacheon_stack(
        name = "incumbent",
        src = "incumbent.hcl",
        catalog = "//catalog:targets",
        contributions = [
            "//kernels/contributions:rmsnorm_triton",
            "//kernels/contributions:silu_and_mul_triton",
        ],
    )

`contributions` must list exactly the contributions the stack file names:
the build fails with the labels to add or remove when the two drift apart.
Outputs: `<name>.tree/` (the engine tree) and `<name>.manifest.json`.
""",
    attrs = dict(CACHEON_TOOL_ATTRS, **{
        "src": attr.label(
            allow_single_file = [".hcl"],
            mandatory = True,
            doc = "The stack HCL file.",
        ),
        "catalog": attr.label(
            providers = [CacheonCatalogInfo],
            mandatory = True,
            doc = "The cacheon_catalog the stack is validated against.",
        ),
        "contributions": attr.label_list(
            providers = [CacheonContributionInfo],
            doc = "Every cacheon_contribution the stack file names.",
        ),
    }),
    provides = [CacheonStackInfo],
)
