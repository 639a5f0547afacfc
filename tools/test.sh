#!/usr/bin/env bash
# Sets up whatever is missing, then runs every check: lint, the Go tests
# (which drive real worker processes, a real registry and real SQLite),
# and `bazel test //...`. Ends with one line "N passed, N failed".
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$repo"
bash tools/bootstrap.sh || exit 1

failed_steps=()
step() {
  local name=$1
  shift
  printf '\n== %s\n' "$name" >&2
  "$@" || failed_steps+=("$name")
}

# The worker sandbox must work here: its tests fail instead of skipping.
export CACHEON_REQUIRE_SANDBOX=1
# The HTML report tests render in headless Chromium (installed above).
export CACHEON_REQUIRE_BROWSER=1
# The consumer guide's cosign and oras commands run for real (built by the
# bootstrap into .cache/tools/bin).
export PATH="$repo/.cache/tools/bin:$PATH"
export CACHEON_REQUIRE_STOCK_TOOLS=1
# The prebuild tests compile torch extensions (libtorch-dev and g++,
# installed above).
export CACHEON_REQUIRE_CXX_TORCH=1

log=$(mktemp)
trap 'rm -f "$log"' EXIT
step lint bash tools/lint.sh
step "go test" bash -c "set -o pipefail; go test ./... 2>&1 | tee '$log'"
step "fuzz" bash tools/fuzz.sh
step "bazel test" bazel test //...
step "bazel rules refuse drift" bash tools/rules_test.sh
step "kubernetes manifests" bash tools/k8s_manifest_check.sh
step "servable image serves with no network" bash tools/servable_check.sh
step "entrypoint rebuilt from source" bash tools/entrypoint_rebuild_check.sh
# The reproducibility check (tools/repro_check.sh: two real builds from
# scratch, compared byte for byte) runs inside the remote-cache check, whose
# HTTP cache its first build fills, in the strictest local sandbox; a third
# clone then builds with every action a remote cache hit.
step "reproducible builds, remote cache, strict sandbox" bash tools/remote_cache_check.sh //stacks:incumbent //stacks:candidate_rmsnorm_torch //release:engine

go_ok=$(grep -c '^ok ' "$log" || true)
go_fail=$(grep -c '^FAIL	' "$log" || true)
printf '\n' >&2
if ((${#failed_steps[@]})); then
  printf 'failed steps: %s\n' "${failed_steps[*]}" >&2
fi
echo "tests: $go_ok passed, $((go_fail + ${#failed_steps[@]})) failed"
((${#failed_steps[@]} == 0))
