#!/usr/bin/env bash
# Sets up whatever is missing, then runs the main job on its embedded
# defaults: build the cacheon CLI with Bazel, hash and inspect an example
# contribution, materialize the incumbent engine with
# `bazel build //stacks:incumbent`, and print where everything is.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$repo"
bash tools/bootstrap.sh

say() { printf '\n== %s\n' "$*" >&2; }

say "bazel build //tools/cmd/cacheon"
bazel build //tools/cmd/cacheon
cacheon=bazel-bin/tools/cmd/cacheon/cacheon_/cacheon

example=kernels/contributions/silu_and_mul_triton
if [[ -d $example ]]; then
  say "cacheon hash $example"
  "$cacheon" hash "$example"
fi
