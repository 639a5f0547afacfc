"""Implementation of cacheon_candidate: the incumbent plus one bundle."""

load("//rules:providers.bzl", "CacheonContributionInfo", "CacheonStackInfo")
load(":common.bzl", "CACHEON_TOOL_ATTRS", "STAGE", "run_staged")
load(":stack.bzl", "materialize_action")

def _cacheon_candidate_impl(ctx):
    incumbent = ctx.attr.incumbent[CacheonStackInfo]
    bundle = ctx.attr.bundle[CacheonContributionInfo]
    stack = ctx.actions.declare_file(ctx.label.name + ".hcl")
    plan = ctx.actions.declare_file(ctx.label.name + ".plan.json")

    args = ctx.actions.args()
    args.add("stack")
    args.add("plan")
    args.add("--incumbent", incumbent.src)
    args.add("--candidate", STAGE + "/" + bundle.dir)
    args.add("--candidate-label", bundle.label)
    args.add("--catalog", incumbent.catalog.src)
    for c in incumbent.contributions:
        args.add("--contribution", "{}={}/{}".format(c.label, STAGE, c.dir))
    args.add("--out", stack)
    args.add("--json")
    run_staged(
        ctx,
        dirs = [bundle.dir] + [c.dir for c in incumbent.contributions],
        inputs = depset(
            [incumbent.src, incumbent.catalog.src],
            transitive = [bundle.files] + [c.files for c in incumbent.contributions],
        ),
        outputs = [plan, stack],
        tool = ctx.executable._cacheon,
        args = args,
        mnemonic = "CacheonPlan",
        progress_message = "Planning candidate %s" % ctx.label,
        stdout = plan,
    )

    tree = ctx.actions.declare_directory(ctx.label.name + ".tree")
    manifest = ctx.actions.declare_file(ctx.label.name + ".manifest.json")
    materialize_action(ctx, stack, incumbent.catalog, incumbent.contributions + [bundle], tree, manifest, "CacheonCandidate", generated = True)
    return [
        DefaultInfo(files = depset([stack, plan, tree, manifest])),
        CacheonStackInfo(
            src = stack,
            tree = tree,
            manifest = manifest,
            contributions = incumbent.contributions + [bundle],
            catalog = incumbent.catalog,
        ),
    ]

cacheon_candidate = rule(
    implementation = _cacheon_candidate_impl,
    doc = """The candidate stack: the incumbent with exactly one target transition.

    cacheon_candidate(
        name = "candidate_rmsnorm_torch",
        incumbent = "//stacks:incumbent",
        bundle = "//kernels/contributions:rmsnorm_torch",
    )

Plans the transition (same-target replacement or atomic displacement; a
no-op or a stale target spec fails the build with the reason), writes the
candidate stack file and the marginal arm plan, and materializes the
candidate tree from scratch.
""",
    attrs = dict(CACHEON_TOOL_ATTRS, **{
        "incumbent": attr.label(
            providers = [CacheonStackInfo],
            mandatory = True,
            doc = "The incumbent cacheon_stack.",
        ),
        "bundle": attr.label(
            providers = [CacheonContributionInfo],
            mandatory = True,
            doc = "The cacheon_contribution proposed on top of the incumbent.",
        ),
    }),
    provides = [CacheonStackInfo],
)
