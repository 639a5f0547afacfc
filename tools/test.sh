#!/usr/bin/env bash
# Sets up whatever is missing, then runs every check once, each with the
# runner that alone can make it, and ends with one line "N passed, N failed"
# (N passed: the Go test packages that passed; N failed: failed packages
# plus failed steps). Each step prints its time; the summary lists them.
#
#   lint                       gofmt, go vet, buildifier, BUILD files up to date
#   go test                    every Go test package, once (go test owns them)
#   fuzz                       every fuzz target, briefly
#   bazel build                //... builds under Bazel (every library, binary
#                              and test binary, the stacks, the release image),
#                              and the tests only Bazel can run (tag bazel-only)
#   bazel rules refuse drift   the Starlark rules' refusals
#   kubernetes manifests       the example manifests against the API schema
#   main job                   the README's first command in a fresh clone, to
#                              its end, and a consumer's checks of its release
#                              (tools/main_job_check.sh)
#   reproducible builds        the outputs bazel build made above against a
#                              cold build in another clone, umask, time zone and
#                              locale in the strictest sandbox that fills a real
#                              HTTP remote cache, then a third clone built from
#                              that cache alone (tools/remote_cache_check.sh)
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$repo"
bash tools/bootstrap.sh test || exit 1

failed_steps=() timings=()
step() {
  local name=$1 t=$SECONDS
  shift
  printf '\n== %s\n' "$name" >&2
  "$@" || failed_steps+=("$name")
  timings+=("$(printf '%5d s  %s' $((SECONDS - t)) "$name")")
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
# No package of ours uses cgo (the NVML backend, vetted with cgo by lint,
# is behind a build tag). The release entrypoint is built with cgo off, and
# so are the binaries the tests build (tools/bazeldeps compares `go build`'s
# module information): with cgo off everywhere, go vet, go test and those
# builds share one build cache instead of compiling every package twice.
export CGO_ENABLED=0

# The targets whose outputs the reproducibility check compares.
repro_targets=(//stacks:incumbent //stacks:candidate_rmsnorm_torch //release:engine)

log=$(mktemp) bazel_log=$(mktemp)
work=$(mktemp -d)
trap 'rm -rf "$log" "$bazel_log" "$work"' EXIT
# go test's own default (10 minutes a package) is too close on a busy
# 2-core machine: the slowest package takes under 4 minutes on a quiet one,
# and took over 25 with three other test runs beside it.
go_test_timeout=${CACHEON_GO_TEST_TIMEOUT:-40m}

bazel_build() {
  # The reproducibility targets' outputs are collected right after this
  # build: the main job below rebuilds the release with other --define
  # values (the entrypoint's source commit), which replaces them.
  bazel build //... || return 1
  bazel build --show_result=1000 "${repro_targets[@]}" >"$bazel_log" 2>&1 || { cat "$bazel_log" >&2; return 1; }
  LC_ALL=C sed -n 's/^  \(bazel-[a-z]*\/.*\)$/\1/p' "$bazel_log" | while read -r f; do
    mkdir -p "$work/repro-a/$(dirname "$f")"
    cp -rL "$f" "$work/repro-a/$f"
  done
  local only
  only=$(bazel query 'attr(tags, "bazel-only", tests(//...))' 2>/dev/null) || return 1
  # shellcheck disable=SC2086 # one label a line
  bazel test $only
}

# The slowest packages first: go test starts packages in the order given,
# two at a time on two cores, so a slow package started last runs alone
# for minutes at the end while the other core idles. The rest follow in
# go list's order (a new slow package only costs that tail until it is
# added here).
slow_first=(evaluator/qualify evaluator/audit evaluator/verify evaluator/prebuild settlement/evaluate
  tools/cli evaluator/quality evaluator/engine kernels/substrate)
go_test() {
  local module pkgs p
  module=$(go list -m) || return 1
  pkgs=("${slow_first[@]/#/$module/}")
  for p in $(go list ./...); do
    [[ " ${pkgs[*]} " == *" $p "* ]] || pkgs+=("$p")
  done
  go test -timeout "$go_test_timeout" "${pkgs[@]}" 2>&1 | tee "$log"
}

step lint bash tools/lint.sh
step "go test" go_test
step "fuzz" bash tools/fuzz.sh
step "bazel build" bazel_build
step "bazel rules refuse drift" bash tools/rules_test.sh
step "kubernetes manifests" bash tools/k8s_manifest_check.sh
step "main job" bash tools/main_job_check.sh
step "reproducible builds, remote cache, strict sandbox" \
  env CACHEON_REPRO_REFERENCE="$work/repro-a" bash tools/remote_cache_check.sh "${repro_targets[@]}"

go_ok=$(grep -c '^ok ' "$log" || true)
go_fail=$(grep -c '^FAIL	' "$log" || true)
printf '\nstep times:\n' >&2
printf '  %s\n' "${timings[@]}" >&2
if ((${#failed_steps[@]})); then
  printf 'failed steps: %s\n' "${failed_steps[*]}" >&2
fi
echo "tests: $go_ok passed, $((go_fail + ${#failed_steps[@]})) failed"
((${#failed_steps[@]} == 0))
