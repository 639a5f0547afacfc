#!/usr/bin/env bash
# Usage: tools/servable_release.sh CACHEON OUT [release build flags...]
#
# Builds the servable release as an unsigned OCI layout at OUT: the release
# stack's engine tree, the substrate and the sealed test model of
# //release:engine, on the Debian base of deploy/base (python3, torch and
# their closure, each .deb pinned by sha256), so the image serves on the
# CPU. Needs the Bazel outputs of //stacks:release, //release:tiny_llama and
# //tools/cmd/cacheon-engine, the image's entrypoint
# (bazel build //release:engine makes them). Packages are fetched once into
# the cache (cacheon release base --help); the rest is offline.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$repo"
(($# >= 2)) || { echo "usage: $0 CACHEON OUT [release build flags...]" >&2; exit 64; }
cacheon=$1 out=$2
shift 2
lock=deploy/base/debian-bookworm-python3-torch.lock.json

work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT

# The base is a function of the lock file and of the assembler (this
# cacheon binary): assembled once per pair and kept in the cache, so a
# warm run skips the minute of unpacking and compressing 394 packages.
# release build re-hashes every blob of it against --base-digest, so a
# damaged cache entry fails the build; only the newest entry is kept.
# CACHEON_CACHE=off assembles it every time.
base_cache=$cache/servable-base
base=$base_cache/$(cat "$lock" "$cacheon" | sha256sum | cut -c1-64)
if [[ $cache != off && -f $base/base.json && -d $base/layout ]]; then
  echo "servable base: reusing $base (same lock and assembler)" >&2
else
  mkdir -p "$work/base"
  "$cacheon" release base --json --lock "$lock" --out "$work/base/layout" >"$work/base/base.json"
  if [[ $cache == off ]]; then
    base=$work/base
  else
    # Into the cache directory under a temporary name, then renamed: a
    # run killed half-way leaves no entry that looks whole.
    mkdir -p "$base_cache"
    tmp=$base_cache/.tmp-$$
    rm -rf "$tmp"
    mv "$work/base" "$tmp"
    for old in "$base_cache"/*; do
      [[ ! -e $old || $old == "$base" ]] || { chmod -R u+w "$old" 2>/dev/null || true; rm -rf "$old"; }
    done
    mv -T "$tmp" "$base" 2>/dev/null || { chmod -R u+w "$tmp"; rm -rf "$tmp"; }
  fi
fi
base_digest=$(jq -r .digest "$base/base.json")
base_name=$(jq -r .name "$base/base.json")

# The engine tree and substrate in the form the release build checks (and
# the Bazel rule stages): files 0444, directories 0755, times at the epoch.
stage() {
  mkdir -p "$2"
  cp -RL "$1/." "$2/"
  find "$2" -name __pycache__ -prune -exec rm -rf {} +
  find "$2" -type f -exec chmod 0444 {} +
  find "$2" -type d -exec chmod 0755 {} +
  find "$2" -depth -exec touch -h -d @0 {} +
}
stage bazel-bin/stacks/release.tree "$work/engine-tree"
stage kernels/substrate/cacheon_substrate "$work/substrate/cacheon_substrate"

"$cacheon" release build \
  --engine-tree "$work/engine-tree" \
  --release-manifest bazel-bin/stacks/release.manifest.json \
  --substrate "$work/substrate" \
  --model-receipt bazel-bin/release/tiny_llama.receipt.json \
  --entrypoint bazel-bin/tools/cmd/cacheon-engine/cacheon-engine_/cacheon-engine \
  --base-layout "$base/layout" --base-digest "$base_digest" --base-name "$base_name" \
  --name cacheon-engine:0.1.0 --source-date-epoch 0 \
  --out "$out" "$@"
