#!/usr/bin/env bash
# Usage: tools/docker_guide_check.sh OUT MODEL CACHEON
#
# Runs the consumer guide's two Docker blocks (docs/consumer-guide.md,
# "Start it") on the signed release a main job left in OUT (OUT/release,
# OUT/keys/release.pub, OUT/channel), with the model directory MODEL and the
# cacheon binary CACHEON, and checks what the guide says of them:
#
#   - the release verifies from a registry, and the image pulled from it
#     by digest answers the guide's request (5 tokens for 4 new ones);
#   - with the channel flags, the entrypoint checks the channel, writes its
#     state to the state mount, and the engine answers the second request.
#
# The guide's blocks are run, not a copy of them, with three substitutions
# only: the registry is a private one on 127.0.0.1 (docker-registry, into
# which the release is published as the guide's tag 1.0), the digest is
# the published image's, and `--gpus all` is dropped, since this machine
# has no GPU container runtime (the guide says so). Docker is a private
# daemon of its own (its data, state and socket in a temporary directory,
# no bridge and no iptables rules), so a Docker service of the host, if
# any, is neither needed nor touched. tools/main_job_check.sh runs it.
# Skips (exit 0, saying so) where dockerd, docker or docker-registry is
# not installed, and fails instead where CACHEON_REQUIRE_STOCK_TOOLS=1
# (tools/test.sh sets it; tools/bootstrap.sh test installs them). Ends with
# "docker-guide: PASS (N s)".
set -euo pipefail
shopt -s extglob # the digest's pattern in run_guide
guide=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/docs/consumer-guide.md
source "$(dirname "${BASH_SOURCE[0]}")/guide_lib.sh"
(($# == 3)) || { echo "usage: $0 OUT MODEL CACHEON" >&2; exit 64; }
out=$1 model=$2 cacheon=$3
guide_prelude docker-guide "tools/bootstrap.sh test installs docker.io and docker-registry" dockerd docker docker-registry
start=$SECONDS
# Under /tmp rather than $TMPDIR, which may be long: the daemon's sockets
# live under it, and a unix socket's path is at most 107 bytes.
work=$(mktemp -d /tmp/cacheon-docker-guide.XXXXXX)
dockerd_pid="" registry_pid=""
cleanup() {
  set +e # every step is tried, whatever the one before did
  # The daemon unmounts its containers' and images' file systems as it
  # stops; only then can its data be removed.
  if [[ -n $dockerd_pid ]]; then
    kill "$dockerd_pid" 2>/dev/null || true
    for _ in $(seq 100); do
      kill -0 "$dockerd_pid" 2>/dev/null || break
      sleep 0.2
    done
    kill -9 "$dockerd_pid" 2>/dev/null || true
  fi
  [[ -z $registry_pid ]] || kill "$registry_pid" 2>/dev/null || true
  # The daemon's containerd (and any shim) may outlive it by a moment,
  # still writing under its state directory.
  for _ in $(seq 50); do
    pgrep -f -- "$work/" >/dev/null || break
    pkill -f -- "$work/" 2>/dev/null || true
    sleep 0.2
  done
  grep -o " $work/[^ ]*" /proc/mounts 2>/dev/null | sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done
  chmod -R u+w "$work" 2>/dev/null || true
  rm -rf "$work" 2>/dev/null || { sleep 1; rm -rf "$work"; }
}
trap cleanup EXIT

# free_port prints a TCP port of 127.0.0.1 that nothing listens on now.
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
# listening PORT: whether something accepts connections on 127.0.0.1:PORT.
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# --- A registry of our own ----------------------------------------------------
port=$(free_port)
cat >"$work/registry.yml" <<EOF
version: 0.1
log:
  level: error
storage:
  filesystem:
    rootdirectory: $work/registry
http:
  addr: 127.0.0.1:$port
EOF
docker-registry serve "$work/registry.yml" >"$work/registry.log" 2>&1 &
registry_pid=$!
for _ in $(seq 100); do listening "$port" && break; sleep 0.1; done
listening "$port" || { cat "$work/registry.log" >&2; fail "docker-registry did not start on 127.0.0.1:$port"; }

# --- A Docker daemon of our own -------------------------------------------------
export DOCKER_HOST=unix://$work/docker.sock
dockerd --data-root "$work/docker" --exec-root "$work/x" --pidfile "$work/docker.pid" --host "$DOCKER_HOST" \
  --bridge none --iptables=false --ip-masq=false >"$work/dockerd.log" 2>&1 &
dockerd_pid=$!
for _ in $(seq 150); do docker version >/dev/null 2>&1 && break; sleep 0.2; done
docker version >/dev/null 2>&1 || { tail -20 "$work/dockerd.log" >&2; fail "dockerd did not start"; }

# --- The release, published where the guide's commands fetch it -----------------
registry=127.0.0.1:$port/cacheon/engine
"$cacheon" release publish --key "$out/keys/release.pub" "$out/release" "$registry:1.0" >"$work/publish.log" 2>&1 || {
  cat "$work/publish.log" >&2
  fail "the release could not be published into the private registry"
}
digest=$("$cacheon" release verify --key "$out/keys/release.pub" --json "$registry:1.0" 2>/dev/null | jq -r .image_digest)
[[ $digest == sha256:* ]] || fail "the published release did not verify from the registry"

# What the guide's commands start from: the release key, the model as
# models/llama-tiny; cacheon on PATH.
r=$work/consumer
mkdir -p "$r/models"
cp "$out/keys/release.pub" "$r/release.pub"
cp -rL "$model" "$r/models/llama-tiny"
bin=$work/bin
mkdir -p "$bin"
ln -s "$(realpath "$cacheon")" "$bin/cacheon"

# run_guide MARKER NAME runs the guide's block with MARKER in the consumer's
# directory, with the three substitutions of the header, its output into
# $work/NAME.out and .err.
run_guide() {
  local block
  block=$(guide_block "$guide" "$1") || fail "the consumer guide has no sh block with '$1'"
  [[ $block == *"--gpus all "* && $block == *registry.example.com/cacheon/engine* ]] ||
    fail "the consumer guide's block with '$1' no longer runs --gpus all from registry.example.com: update this check"
  block=${block//"--gpus all "/}
  block=${block//registry.example.com\/cacheon\/engine@sha256:+([0-9a-f])/$registry@$digest}
  block=${block//registry.example.com\/cacheon\/engine/$registry}
  (cd "$r" && PATH="$bin:$PATH" bash -euo pipefail -c "$block") >"$work/$2.out" 2>"$work/$2.err" || {
    cat "$work/$2.out" "$work/$2.err" >&2
    fail "the consumer guide's block with '$1' failed"
  }
}

run_guide "# verify, and keep the signature bundle" serve
answered "$work/serve.out" 1 5 || {
  cat "$work/serve.out" "$work/serve.err" >&2
  fail "under Docker the image did not answer the guide's request with 5 tokens"
}

# The guide: put the channel and its root in trust/, then start it with the
# channel flags.
cp -r "$out/channel" "$r/trust/channel"
cp "$out/channel/1.root.json" "$r/trust/1.root.json"
run_guide "--channel /cacheon/trust/channel" channel
channel_served "$work" Docker "$r/channel-state"
say "verified from a registry, pulled by digest, served, and the channel checked into the state mount ($(docker version --format '{{.Server.Version}}'))"
echo "docker-guide: PASS ($((SECONDS - start)) s)"
