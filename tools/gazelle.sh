#!/usr/bin/env bash
# Regenerates the BUILD.bazel files of our Go packages from their sources.
# Run after adding a package or an import; CI fails when BUILD files are
# stale (tools/lint.sh runs this with -mode=diff).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
[[ -x .cache/gazelle && -f .cache/godeps/WORKSPACE.gazelle ]] || bash tools/bootstrap.sh build
.cache/gazelle \
  -repo_root="$repo" \
  -go_prefix=github.com/cacheon/engine \
  -go_naming_convention=import \
  -go_naming_convention_external=import \
  -external=external \
  -proto=disable_global \
  -repo_config=.cache/godeps/WORKSPACE.gazelle \
  "$@" "$repo"
# Keep MODULE.bazel's go_deps repositories equal to what the BUILD files name,
# and each released binary's Go module information equal to go.mod and go.sum.
binaries=(tools/cmd/cacheon tools/cmd/cacheon-engine)
if [[ " $* " != *" -mode=diff "* ]]; then
  go run ./tools/cmd/bazeldeps -module MODULE.bazel
  for bin in "${binaries[@]}"; do
    go run ./tools/cmd/bazeldeps -modinfo "$bin/modinfo.bzl" -main "github.com/cacheon/engine/$bin"
  done
else
  for bin in "${binaries[@]}"; do
    go run ./tools/cmd/bazeldeps -modinfo "${TMPDIR:-/tmp}/modinfo.bzl.$$" -main "github.com/cacheon/engine/$bin"
    if ! diff -u "$bin/modinfo.bzl" "${TMPDIR:-/tmp}/modinfo.bzl.$$"; then
      rm -f "${TMPDIR:-/tmp}/modinfo.bzl.$$"
      echo "gazelle: $bin/modinfo.bzl is stale; run tools/gazelle.sh" >&2
      exit 1
    fi
    rm -f "${TMPDIR:-/tmp}/modinfo.bzl.$$"
  done
  cp MODULE.bazel "${TMPDIR:-/tmp}/MODULE.bazel.$$"
  go run ./tools/cmd/bazeldeps -module "${TMPDIR:-/tmp}/MODULE.bazel.$$"
  if ! diff -u MODULE.bazel "${TMPDIR:-/tmp}/MODULE.bazel.$$"; then
    rm -f "${TMPDIR:-/tmp}/MODULE.bazel.$$"
    echo "gazelle: MODULE.bazel's use_repo(go_deps, ...) is stale; run tools/gazelle.sh" >&2
    exit 1
  fi
  rm -f "${TMPDIR:-/tmp}/MODULE.bazel.$$"
fi
