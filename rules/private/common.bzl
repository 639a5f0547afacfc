"""Attributes and helpers shared by the private rule implementations."""

# Every action runs the one cacheon binary, built for the execution
# platform; Starlark only wires files (as rules_go's builder does).
CACHEON_TOOL_ATTRS = {
    "_cacheon": attr.label(
        default = Label("//tools/cmd/cacheon"),
        executable = True,
        cfg = "exec",
        doc = "The cacheon command line the actions run.",
    ),
}

def canonical_label(label):
    """Returns //package:name for a label of the main repository.

    Args:
      label: a Label.

    Returns:
      The label as stack files spell it.
    """
    return "//{}:{}".format(label.package, label.name)

# Actions must not depend on the host's locale or time zone.
HERMETIC_ENV = {
    "LC_ALL": "C",
    "TZ": "UTC",
}
