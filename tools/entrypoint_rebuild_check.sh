#!/usr/bin/env bash
# The consumer's rebuild of the servable release, entrypoint from source
# included, for real: build the release on the Debian base
# (tools/servable_release.sh) recording this commit as the entrypoint's
# source, sign it, then `cacheon release rebuild --source-repo` clones the
# repository at that commit, runs its bootstrap and Bazel there (its own
# output base; the shared disk cache makes it mostly cache hits) and
# compares the binary byte for byte, then the whole image. Needs a
# committed tree: the commit recorded must be the one built.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$repo"
say() { printf 'entrypoint-rebuild: %s\n' "$*" >&2; }

if [[ -n $(git status --porcelain --untracked-files=no) ]]; then
  say "the working tree has uncommitted changes; commit them first (the release would record a commit it was not built from)"
  git status --short --untracked-files=no >&2
  exit 1
fi
commit=$(git rev-parse HEAD)
bazel build //tools/cmd/cacheon //release:engine

work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
cp bazel-bin/tools/cmd/cacheon/cacheon_/cacheon "$work/cacheon"
cacheon=$work/cacheon
say "building the servable release recording source $repo at $commit"
bash tools/servable_release.sh "$cacheon" "$work/release" \
  --entrypoint-source-repo "$repo" --entrypoint-source-commit "$commit" --entrypoint-bazel-target //tools/cmd/cacheon
"$cacheon" release keygen --out "$work/key" >/dev/null
"$cacheon" release sign --key "$work/key.key" "$work/release" >/dev/null
"$cacheon" release verify --json --key "$work/key.pub" "$work/release" >"$work/verify.json"
recorded=$(jq -r '.checks[] | select(.name == "entrypoint") | .detail' "$work/verify.json")
say "verified; entrypoint $recorded"

start=$SECONDS
if ! "$cacheon" release rebuild --json --key "$work/key.pub" --source-repo "$repo" --work "$work/rebuild" "$work/release" >"$work/rebuild.json"; then
  cat "$work/rebuild.json" >&2 || true
  say "FAIL: the release did not rebuild"
  exit 1
fi
jq -e '.match and .entrypoint_rebuilt and .provenance_match and .sbom_match' "$work/rebuild.json" >/dev/null || {
  cat "$work/rebuild.json" >&2
  say "FAIL: the rebuild did not reproduce the entrypoint from source"
  exit 1
}
say "$(jq -r '.entrypoint_source' "$work/rebuild.json"); image $(jq -r '.rebuilt_digest' "$work/rebuild.json") reproduced in $((SECONDS - start)) s"
say PASS
