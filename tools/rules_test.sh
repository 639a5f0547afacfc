#!/usr/bin/env bash
# Checks that the Bazel rules refuse what they must, with a message that
# says how to fix it: each target in //rules/tests must fail to build and
# print the expected text. Prints "N passed, N failed".
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$repo"

cases=(
  "//rules/tests:drift_missing_contribution|add //kernels/contributions:rmsnorm_triton to the stack rule's contributions"
  "//rules/tests:drift_extra_contribution|names no contribution with source \"//kernels/contributions:rmsnorm_torch\": remove it"
  "//rules/tests:noop_candidate|a transition must change the selected delta"
)
pass=0 fail=0
for c in "${cases[@]}"; do
  target=${c%%|*} want=${c#*|}
  out=$(bazel build "$target" 2>&1)
  if [[ $? -ne 0 ]] && grep -qF -- "$want" <<<"$out"; then
    echo "PASS $target" >&2
    pass=$((pass + 1))
  else
    echo "FAIL $target: expected the build to fail with: $want" >&2
    tail -20 <<<"$out" >&2
    fail=$((fail + 1))
  fi
done
echo "rules: $pass passed, $fail failed"
((fail == 0))
