"""Attributes and helpers shared by the private rule implementations."""

# Every action runs the one cacheon-engine binary, the engine build of the
# command line (tools/cli/enginecli): the commands the rules and the image
# run, without the ledger, signing and registry code of the full cacheon,
# which roughly halves what a cold build compiles (docs/results/front-door.md
# measures it); Starlark only wires files (as rules_go's builder does). It
# is built for the target platform, not the execution platform: the
# release image's entrypoint is the same binary (cacheon_release's
# entrypoint), so one build serves both and a cold build compiles it once
# instead of twice. The cost is that the execution platform must run
# target binaries: releases are linux/amd64 images built on linux/amd64
# hosts. A cross build would set this back to "exec"
# (docs/reference/bazel-rules.md).
CACHEON_TOOL_ATTRS = {
    "_cacheon": attr.label(
        default = Label("//tools/cmd/cacheon-engine"),
        executable = True,
        cfg = "target",
        doc = "The cacheon-engine command line the actions run (the release entrypoint's build).",
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

# Actions must not depend on the host's locale or time zone, nor read or
# write the tools' own caches between runs (Bazel's cache is the one).
HERMETIC_ENV = {
    "CACHEON_CACHE": "off",
    "LC_ALL": "C",
    "TZ": "UTC",
}

# The placeholder that stands for the staging directory in the arguments of
# run_staged actions.
STAGE = "@STAGE@"

# Bazel's local sandboxes present each input file as a symbolic link, and
# the cacheon tools refuse links inside a bundle (they must never follow
# one). So an action first copies the declared files of each source
# directory, dereferenced, into a private staging directory and runs the
# tool on the copies: the tool sees exactly the declared inputs' bytes.
# The staging directory sits beside the action's first output, so its path
# is private to the action and the same in every build (a tool that echoes
# an input path prints the same bytes each time).
# Arguments: the staging directory, the file for standard output ("" for none), the tree-artifact
# directory to remove first ("" for none; Bazel creates it empty, and the
# materializer creates its destination itself by an atomic rename), the
# number N of directories to stage, the N directories, then the command;
# every @STAGE@ in the command becomes the staging directory.
_RUN_STAGED = """
set -euo pipefail
stage=$1 stdout=$2 tree=$3 n=$4
shift 4
rm -rf "$stage"
mkdir -p "$stage"
trap 'chmod -R u+w "$stage" 2>/dev/null; rm -rf "$stage"' EXIT
for ((i = 0; i < n; i++)); do
  mkdir -p "$stage/$1"
  cp -RL "$1/." "$stage/$1/"
  shift
done
# Bazel rewrites the modes and times of outputs it hands on (a materialized
# tree arrives 0555 with fresh mtimes); give every staged tree the
# deterministic form our tools write and check: files 0444, directories
# 0755, times at the Unix epoch. Contents, which identities cover, are
# untouched.
find "$stage" -type f -exec chmod 0444 {} +
find "$stage" -type d -exec chmod 0755 {} +
find "$stage" -depth -exec touch -h -d @0 {} +
[[ -z $tree ]] || rmdir "$tree"
cmd=()
for a in "$@"; do cmd+=("${a//@STAGE@/$stage}"); done
if [[ -z $stdout ]]; then exec "${cmd[@]}"; fi
# A refusal printed as JSON on standard output belongs in the build log.
"${cmd[@]}" >"$stdout" || { status=$?; cat "$stdout" >&2; exit $status; }
"""

def run_staged(ctx, dirs, inputs, outputs, tool, args, mnemonic, progress_message, stdout = None, tree = None):
    """Runs tool with args after staging dirs as real files.

    Args:
      ctx: the rule context.
      dirs: list of execroot-relative directories to stage.
      inputs: depset of the input files.
      outputs: list of declared outputs.
      tool: the executable File.
      args: an Args object; write staged paths as STAGE + "/" + dir.
      mnemonic: the action mnemonic.
      progress_message: the progress message.
      stdout: a declared File that receives the tool's standard output.
      tree: a declared directory the tool creates itself.
    """
    head = ctx.actions.args()
    head.add(outputs[0].path + ".stage")
    head.add(stdout.path if stdout else "")
    head.add(tree.path if tree else "")
    head.add(str(len(dirs)))
    head.add_all(dirs)
    head.add(tool)
    ctx.actions.run_shell(
        outputs = outputs,
        inputs = inputs,
        tools = [tool],
        command = _RUN_STAGED,
        arguments = [head, args],
        env = HERMETIC_ENV,
        mnemonic = mnemonic,
        progress_message = progress_message,
    )
