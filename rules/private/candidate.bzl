"""Implementation of cacheon_candidate: the incumbent plus one bundle."""

load("//rules:providers.bzl", "CacheonContributionInfo", "CacheonStackInfo")
load(":common.bzl", "CACHEON_TOOL_ATTRS", "STAGE", "run_staged")

def _cacheon_candidate_impl(ctx):
    incumbent = ctx.attr.incumbent[CacheonStackInfo]
    bundle = ctx.attr.bundle[CacheonContributionInfo]
    stack = ctx.actions.declare_file(ctx.label.name + ".hcl")
    plan = ctx.actions.declare_file(ctx.label.name + ".plan.json")
    tree = ctx.actions.declare_directory(ctx.label.name + ".tree")
    manifest = ctx.actions.declare_file(ctx.label.name + ".manifest.json")

    # One action plans the transition and publishes the candidate's tree:
    # the incumbent's tree is reused as arm B (verified, not materialized
    # again) and the candidate is materialized once.
    args = ctx.actions.args()
    args.add("stack")
    args.add("plan")
    args.add("--incumbent", incumbent.src)
    args.add("--incumbent-tree", STAGE + "/" + incumbent.tree.path)
    args.add("--candidate", STAGE + "/" + bundle.dir)
    args.add("--candidate-label", bundle.label)
    args.add("--catalog", incumbent.catalog.src)
    for c in incumbent.contributions:
        args.add("--contribution", "{}={}/{}".format(c.label, STAGE, c.dir))
    args.add("--out", stack)
    args.add("--tree-out", tree.path)
    args.add("--manifest-out", manifest)
    args.add("--json")
    run_staged(
        ctx,
        dirs = [incumbent.tree.path, bundle.dir] + [c.dir for c in incumbent.contributions],
        inputs = depset(
            [incumbent.src, incumbent.catalog.src, incumbent.tree],
            transitive = [bundle.files] + [c.files for c in incumbent.contributions],
        ),
        outputs = [plan, stack, tree, manifest],
        tool = ctx.executable._cacheon,
        args = args,
        mnemonic = "CacheonCandidate",
        progress_message = "Planning and materializing candidate %s" % ctx.label,
        stdout = plan,
        tree = tree,
    )
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
candidate tree, in one action. The incumbent's tree is reused as arm B:
verified and checked to be the incumbent stack's, not materialized again.
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
