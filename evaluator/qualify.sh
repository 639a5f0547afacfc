#!/usr/bin/env bash
# `bazel run //evaluator:qualify -- --candidate BUNDLE [flags]`: cacheon
# qualify run from the workspace, serving the test model Bazel built and
# sealed (//release:tiny_llama). Every flag of `cacheon qualify --help`
# passes through; relative paths are relative to the workspace.
set -euo pipefail
cacheon=$(pwd)/$1
shift
model=""
while (($#)) && [[ $1 != -- ]]; do
  [[ $1 == *.model ]] && model=$(readlink -f "$1") # runfiles are links; the model is sealed as a directory
  shift
done
shift || true
[[ -n $model ]] || { echo "qualify: no model tree among the runfiles" >&2; exit 1; }
cd "${BUILD_WORKSPACE_DIRECTORY:?run this with bazel run}"
exec "$cacheon" qualify --model "$model" "$@"
