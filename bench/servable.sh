#!/usr/bin/env bash
# The servable release's pipeline, whole processes, on this machine: the
# base assembled from the pinned Debian packages (cache warm: no download),
# the release built on it, signed, published to a loopback registry
# (Debian's docker-registry on 127.0.0.1) and verified from the layout,
# from the registry, and with --rootfs (verify, then unpack the root
# filesystem). Verification throughput is set against SHA-256 of the same
# blob files on one core (openssl dgst -sha256, which uses the CPU's SHA
# instructions as Go does; coreutils' sha256sum does not), the floor any
# verifier has to hash.
#
# Needs the Bazel outputs tools/servable_release.sh needs (bazel build
# //release:engine) and docker-registry.
#
# Usage: bench/servable.sh [RUNS]   (default 3; reports the median)
# Environment: CACHEON (default bazel-bin/tools/cmd/cacheon/cacheon_/cacheon),
#              OUT (default bench/servable-2cpu.txt).
set -euo pipefail

runs=${1:-3}
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
out=${OUT:-$repo/bench/servable-$(nproc)cpu.txt}
cacheon=${CACHEON:-$repo/bazel-bin/tools/cmd/cacheon/cacheon_/cacheon}
lock=deploy/base/debian-bookworm-python3-torch.lock.json
work=$(mktemp -d "${TMPDIR:-/tmp}/cacheon-bench.XXXXXX")
registry_pid=
cleanup() {
  [[ -z $registry_pid ]] || kill "$registry_pid" 2>/dev/null || true
  chmod -R u+w "$work" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$work/registry"
cat >"$work/registry.yml" <<EOF
version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: $work/registry
  delete:
    enabled: true
http:
  addr: 127.0.0.1:$port
EOF
docker-registry serve "$work/registry.yml" >"$work/registry.log" 2>&1 &
registry_pid=$!
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$port/v2/" >/dev/null && break; sleep 0.2; done

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# row LABEL BYTES PREPARE COMMAND...: median wall and CPU time of COMMAND
# over the runs, PREPARE (a shell snippet) run untimed before each.
row() {
  local label=$1 bytes=$2 prepare=$3
  shift 3
  local t=() c=()
  for ((i = 0; i < runs; i++)); do
    bash -c "$prepare"
    local TIMEFORMAT='%R %U %S'
    { time "$@" >/dev/null 2>"$work/stderr"; } 2>"$work/time" || { cat "$work/stderr" >&2; exit 1; }
    t+=("$(tail -1 "$work/time" | awk '{print $1}')")
    c+=("$(tail -1 "$work/time" | awk '{print $2 + $3}')")
  done
  local m mc
  m=$(printf '%s\n' "${t[@]}" | median)
  mc=$(printf '%s\n' "${c[@]}" | median)
  if ((bytes > 0)); then
    printf '| %-46s | %7.2f s | %7.2f s | %7.1f MB/s |\n' "$label" "$m" "$mc" "$(awk -v b="$bytes" -v s="$m" 'BEGIN {print b/1e6/s}')"
  else
    printf '| %-46s | %7.2f s | %7.2f s | |\n' "$label" "$m" "$mc"
  fi
}

"$cacheon" release base fetch --lock "$lock" >/dev/null
"$cacheon" release keygen --out "$work/key" >/dev/null
bash tools/servable_release.sh "$cacheon" "$work/release" 2>/dev/null
"$cacheon" release sign --key "$work/key.key" "$work/release" >/dev/null
blobs=$(find "$work/release/blobs/sha256" -type f -printf '%s\n' | awk '{s+=$1} END {print s}')

{
  echo "# bench/servable.sh $runs: $(basename "$lock"), median of $runs runs"
  echo "# $(nproc) CPUs, $(uname -sr); $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'); release blobs $blobs bytes"
  echo
  echo "| step | wall | CPU | throughput (wall) |"
  echo "|---|---|---|---|"
  row "release base (assemble 394 packages, 8 layers)" 0 "rm -rf '$work/base'" \
    "$cacheon" release base --lock "$lock" --out "$work/base"
  row "servable release: release build (base cached)" 0 "chmod -R u+w '$work/rel2' 2>/dev/null; rm -rf '$work/rel2'" \
    bash tools/servable_release.sh "$cacheon" "$work/rel2"
  row "release sign" 0 "chmod -R u+w '$work/rel3' 2>/dev/null; rm -rf '$work/rel3'; cp -R '$work/release' '$work/rel3'" \
    "$cacheon" release sign --key "$work/key.key" "$work/rel3"
  row "release publish (loopback registry)" "$blobs" "curl -sf -o /dev/null http://127.0.0.1:$port/v2/" \
    "$cacheon" release publish --insecure --key "$work/key.pub" "$work/release" "127.0.0.1:$port/cacheon/engine:bench"
  row "release verify (layout)" "$blobs" "true" \
    "$cacheon" release verify --key "$work/key.pub" "$work/release"
  row "SHA-256 of the same blobs, one core (openssl)" "$blobs" "true" \
    sh -c "cat '$work/release/blobs/sha256/'* | openssl dgst -sha256"
  row "release verify (registry)" "$blobs" "true" \
    "$cacheon" release verify --insecure --key "$work/key.pub" "127.0.0.1:$port/cacheon/engine:bench"
  row "release verify --rootfs (verify, unpack 1.1 GB)" "$blobs" "chmod -R u+w '$work/rootfs' 2>/dev/null; rm -rf '$work/rootfs'" \
    "$cacheon" release verify --key "$work/key.pub" --rootfs "$work/rootfs" "$work/release"
} | tee "$out.tmp"
mv "$out.tmp" "$out"
echo "wrote $out"
