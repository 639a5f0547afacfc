"""Implementation of cacheon_test_model."""

load("//rules:providers.bzl", "CacheonModelInfo")
load(":common.bzl", "CACHEON_TOOL_ATTRS", "HERMETIC_ENV")

def _cacheon_test_model_impl(ctx):
    tree = ctx.actions.declare_directory(ctx.label.name + ".model")
    receipt = ctx.actions.declare_file(ctx.label.name + ".receipt.json")
    args = ctx.actions.args()
    args.add(ctx.executable._cacheon)
    args.add(tree.path)
    args.add(receipt)
    args.add("--seed", str(ctx.attr.seed))
    if ctx.attr.moe:
        args.add("--moe")
    args.add_all(ctx.attr.shape)
    ctx.actions.run_shell(
        outputs = [tree, receipt],
        tools = [ctx.executable._cacheon],
        # Bazel creates the tree artifact's directory; make-test creates
        # its destination itself by an atomic rename.
        command = 'exe=$1 tree=$2 receipt=$3; shift 3; rmdir "$tree" && "$exe" model make-test --out "$tree" "$@" >&2 && "$exe" model provision "$tree" --out "$receipt" >&2',
        arguments = [args],
        env = HERMETIC_ENV,
        mnemonic = "CacheonTestModel",
        progress_message = "Making and sealing test model %s" % ctx.label,
    )
    return [
        # As runfiles too, so a binary that takes the model as data
        # (//evaluator:qualify) finds it beside itself.
        DefaultInfo(files = depset([tree, receipt]), runfiles = ctx.runfiles(files = [tree, receipt])),
        CacheonModelInfo(tree = tree, receipt = receipt),
    ]

cacheon_test_model = rule(
    implementation = _cacheon_test_model_impl,
    doc = """A small deterministic Llama-style model, sealed with a provision receipt.

    cacheon_test_model(
        name = "tiny_llama",
        seed = 1,
    )

Runs `cacheon model make-test` and `cacheon model provision`: the same
seed and shape give the same bytes and the same content digest anywhere.
Production releases pin a real model's receipt instead.
""",
    attrs = dict(CACHEON_TOOL_ATTRS, **{
        "seed": attr.int(default = 1, doc = "Generator seed."),
        "moe": attr.bool(default = False, doc = "Make the Mixtral-style MoE variant."),
        "shape": attr.string_list(doc = "Extra shape flags for make-test, e.g. [\"--layers\", \"4\"]."),
    }),
    provides = [CacheonModelInfo],
)
