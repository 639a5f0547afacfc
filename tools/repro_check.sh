#!/usr/bin/env bash
# Builds the given Bazel targets twice from scratch and compares every output
# byte for byte. The two builds differ in everything that must not matter:
# checkout directory, Bazel output root, umask, time zone, locale and (when
# run as root with a spare account) the user. Neither build reads a cache.
#
#   tools/repro_check.sh [--head] //stacks:incumbent [more targets...]
#
# --head builds the committed HEAD instead of the working tree.
#
# Environment (for tools/remote_cache_check.sh, which reuses build A as the
# build that fills a remote cache instead of paying for a third cold build):
#   CACHEON_REPRO_A_FLAGS  extra Bazel flags for build A, split on spaces
#   CACHEON_REPRO_KEEP     a directory that receives build A's outputs (out/)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$repo"
source_mode=worktree
if [[ ${1:-} == --head ]]; then
  source_mode=head
  shift
fi
(($#)) || { echo "usage: tools/repro_check.sh [--head] TARGET..." >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/cacheon-repro.XXXXXX")
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT

# One snapshot of the working tree as git sees it (tracked and untracked
# files, ignored ones left out), extracted once per build, so both builds
# see the same sources and uncommitted changes are checked too.
if [[ $source_mode == head ]]; then
  git archive --format=tar -o "$work/sources.tar" HEAD
else
  git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf "$work/sources.tar"
fi
copy_tree() {
  mkdir -p "$1"
  tar -xf "$work/sources.tar" -C "$1"
}

build() { # name umask tz locale extra-flags targets...
  local name=$1 mask=$2 tz=$3 locale=$4
  local -a extra
  read -r -a extra <<<"$5"
  shift 5
  local dir="$work/$name/checkout" root="$work/$name/bazel-root" log="$work/$name.log"
  copy_tree "$dir"
  (
    cd "$dir"
    umask "$mask"
    export TZ="$tz" LANG="$locale" LC_ALL="$locale"
    bash tools/bootstrap.sh build >/dev/null 2>&1
    local start=$SECONDS
    bazel "${jvm_locale[@]}" --output_user_root="$root" build --disk_cache= --show_result=1000 "${extra[@]}" "$@" >"$log" 2>&1 ||
      { cat "$log" >&2; exit 1; }
    echo "repro: build $name took $((SECONDS - start)) s" >&2
    # Collect the outputs Bazel reports for the targets.
    mkdir -p "$work/$name/out"
    # Read Bazel's report in the C locale: under tr_TR, [a-z] does not
    # match the i of bazel-bin.
    LC_ALL=C sed -n 's/^  \(bazel-[a-z]*\/.*\)$/\1/p' "$log" | while read -r f; do
      mkdir -p "$work/$name/out/$(dirname "$f")"
      cp -rL "$f" "$work/$name/out/$f"
    done
    bazel "${jvm_locale[@]}" --output_user_root="$root" shutdown >/dev/null 2>&1 || true
  )
}

targets=("$@")
# Bazel 4.2's own server upper-cases BUILD attribute values with the JVM's
# default locale, and under a Turkish locale "medium" becomes "MEDİUM"
# (rejected). Its JVM gets an English locale; everything else in build B,
# our tools included, runs under the environment's locale.
jvm_locale=(--host_jvm_args=-Duser.language=en --host_jvm_args=-Duser.country=US)
# Build B uses a Turkish locale where the machine has one (its dotless i
# breaks naive case folding), else the plain POSIX locale.
locale_b=POSIX
if locale -a 2>/dev/null | grep -qix 'tr_TR.utf8'; then locale_b=tr_TR.UTF-8; fi
echo "repro: build A (umask 022, TZ=UTC, LANG=C.UTF-8)" >&2
build a 022 UTC C.UTF-8 "${CACHEON_REPRO_A_FLAGS:-}" "${targets[@]}"
echo "repro: build B (umask 077, TZ=Pacific/Chatham, LANG=$locale_b)" >&2
build b 077 Pacific/Chatham "$locale_b" "" "${targets[@]}"

manifest() { (cd "$1" && find . -type f -print0 | sort -z | xargs -0 sha256sum); }
n_a=$(find "$work/a/out" -type f | wc -l)
if ((n_a == 0)); then
  echo "repro: build A reported no outputs; nothing was compared" >&2
  exit 1
fi
if [[ -n ${CACHEON_REPRO_KEEP:-} ]]; then
  mkdir -p "$CACHEON_REPRO_KEEP"
  cp -a "$work/a/out" "$CACHEON_REPRO_KEEP/out"
fi
if diff <(manifest "$work/a/out") <(manifest "$work/b/out") >"$work/diff"; then
  n=$(find "$work/a/out" -type f | wc -l)
  echo "repro: ${targets[*]}: $n output files byte-identical across both builds"
else
  echo "repro: outputs differ between the two builds:" >&2
  cat "$work/diff" >&2
  exit 1
fi
