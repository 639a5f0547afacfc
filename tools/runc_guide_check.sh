#!/usr/bin/env bash
# Usage: tools/runc_guide_check.sh OUT MODEL CACHEON
#
# Runs the consumer guide's umoci and runc commands (docs/consumer-guide.md,
# "Start it with umoci and runc") as they are written there, on the signed
# release a main job left in OUT (OUT/release, OUT/keys/release.pub,
# OUT/channel), with the model directory MODEL and the cacheon binary
# CACHEON, and checks what the guide says of them:
#
#   - the engine answers the guide's request (5 tokens for 4 new ones);
#   - the container has no network interface but lo, and /, /cacheon/trust
#     and the model are read-only, /cacheon/state and /tmp writable;
#   - with the channel flags the guide adds, the entrypoint checks the
#     channel, writes its state to the state mount, and the engine answers.
#
# The guide's blocks are run, not a copy of them, so the documented recipe
# cannot drift from what is tested. tools/main_job_check.sh runs it on the
# main job's release; the cost is one unpack and three container starts.
# Skips (exit 0, saying so) where runc or umoci is not installed, and fails
# instead where CACHEON_REQUIRE_STOCK_TOOLS=1 (tools/test.sh sets it;
# tools/bootstrap.sh test installs both). Ends with "runc-guide: PASS (N s)".
set -euo pipefail
guide=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/docs/consumer-guide.md
source "$(dirname "${BASH_SOURCE[0]}")/guide_lib.sh"
(($# == 3)) || { echo "usage: $0 OUT MODEL CACHEON" >&2; exit 64; }
out=$1 model=$2 cacheon=$3
guide_prelude runc-guide "tools/bootstrap.sh test installs runc and umoci" runc umoci
start=$SECONDS
work=$(mktemp -d "${TMPDIR:-/tmp}/cacheon-runc-guide.XXXXXX")
# The unpacked bundle is a gigabyte; umoci may leave directories without
# write permission in it.
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT

# What the guide's commands start from: the layout as out/release (a link:
# umoci only reads it), the release key, the model as models/llama-tiny,
# and the channel as out/channel (a copy: the guide copies it into trust/,
# and cp -r would copy a link as a link); cacheon on PATH.
r=$work/consumer
mkdir -p "$r/out" "$r/models"
ln -s "$(realpath "$out/release")" "$r/out/release"
cp -r "$out/channel" "$r/out/channel"
cp "$out/keys/release.pub" "$r/release.pub"
cp -rL "$model" "$r/models/llama-tiny"
bin=$(mktemp -d "$work/bin.XXXXXX")
ln -s "$(realpath "$cacheon")" "$bin/cacheon"

# run_guide MARKER NAME runs the guide's block with MARKER in the consumer's
# directory, its output into $work/NAME.out and .err.
run_guide() {
  local block
  block=$(guide_block "$guide" "$1") || fail "the consumer guide has no sh block with '$1'"
  (cd "$r" && PATH="$bin:$PATH" bash -euo pipefail -c "$block") >"$work/$2.out" 2>"$work/$2.err" || {
    cat "$work/$2.out" "$work/$2.err" >&2
    fail "the consumer guide's block with '$1' failed"
  }
}

run_guide "umoci unpack" serve
answered "$work/serve.out" 1 5 || {
  cat "$work/serve.out" "$work/serve.err" >&2
  fail "under runc the image did not answer the guide's request with 5 tokens"
}

# The configuration the guide made, with a probe for the command: the
# network and the mounts are what the guide says.
probe='import os, socket
print(" ".join(n for _, n in socket.if_nameindex()))
for d in ["/", "/cacheon/trust", "/cacheon/model", "/cacheon/state", "/tmp"]:
    print(d, "ro" if os.statvfs(d).f_flag & os.ST_RDONLY else "rw")'
mkdir -p "$work/probe"
jq --arg probe "$probe" --arg rootfs "$r/bundle/rootfs" '.process.args = ["/usr/bin/python3", "-c", $probe] | .root.path = $rootfs' \
  "$r/bundle/config.json" >"$work/probe/config.json"
# Its own container name: runc run as root names the container's cgroups
# after it, which a concurrent check would share (runc then only warns, on
# standard error, kept apart from the probe's answer).
got=$(cd "$r" && runc --root "$r/runc" run --bundle "$work/probe" "cacheon-probe-$$" 2>"$work/probe.err") || {
  cat "$work/probe.err" >&2
  fail "the probe did not run under runc: $got"
}
want='lo
/ ro
/cacheon/trust ro
/cacheon/model ro
/cacheon/state rw
/tmp rw'
[[ $got == "$want" ]] || fail "under runc the container is not as the guide says: got
$got
want
$want"

run_guide '.process.args += ["--channel"' channel
channel_served "$work" runc "$r/state"
say "served with loopback only, the root, trust and model read-only, and the channel checked into the state mount"
echo "runc-guide: PASS ($((SECONDS - start)) s)"
