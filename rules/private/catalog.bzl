"""Implementation of cacheon_catalog."""

load("//rules:providers.bzl", "CacheonCatalogInfo")
load(":common.bzl", "CACHEON_TOOL_ATTRS", "HERMETIC_ENV")

def _cacheon_catalog_impl(ctx):
    digest = ctx.actions.declare_file(ctx.label.name + ".digest")
    ctx.actions.run_shell(
        outputs = [digest],
        inputs = [ctx.file.src],
        tools = [ctx.executable._cacheon],
        command = '"$1" catalog check "$2" >&2 && "$1" catalog digest "$2" > "$3"',
        arguments = [ctx.executable._cacheon.path, ctx.file.src.path, digest.path],
        env = HERMETIC_ENV,
        mnemonic = "CacheonCatalog",
        progress_message = "Validating catalog %s" % ctx.label,
    )
    return [
        DefaultInfo(files = depset([ctx.file.src, digest])),
        CacheonCatalogInfo(src = ctx.file.src, digest = digest),
    ]

cacheon_catalog = rule(
    implementation = _cacheon_catalog_impl,
    doc = """Validates a target catalog and computes its digest.

Example:

    cacheon_catalog(
        name = "targets",
        src = "targets.hcl",
    )

`bazel build //catalog:targets` fails with the catalog's diagnostics
(file:line:col) when a rule of the catalog is broken.
""",
    attrs = dict(CACHEON_TOOL_ATTRS, **{
        "src": attr.label(
            allow_single_file = [".hcl"],
            mandatory = True,
            doc = "The catalog HCL file.",
        ),
    }),
    provides = [CacheonCatalogInfo],
)
