#!/usr/bin/env bash
# Usage: tools/run_image.sh [--state DIR] ROOTFS TRUST MODEL MOUNT CMD [ARGS...]
#
# Runs CMD from an unpacked image root filesystem (cacheon release verify
# --rootfs ROOTFS) the way a container runtime would, without one: new
# user, network, mount and PID namespaces (no network but loopback), a
# fresh /dev with null, zero, random and urandom, /proc, a private /tmp,
# the trust directory read-only at /cacheon/trust and the model directory
# read-only at MOUNT (the release's serve.model_mount, /cacheon/model by
# default), and an environment holding only PATH. Standard input and
# output are CMD's.
#
# --state DIR mounts DIR read-write at /cacheon/state, the one writable
# place that outlives the run: where `release serve --channel` keeps the
# channel's state (--channel-state /cacheon/state), so that the next start
# refuses an older copy of the channel. The trust mount stays read-only.
#
# Any unprivileged user can run it where user namespaces are enabled;
# nothing of the host's root filesystem is visible inside.
set -euo pipefail
usage="usage: $0 [--state DIR] ROOTFS TRUST MODEL MOUNT CMD [ARGS...]"
state=
if [[ ${1:-} == --state ]]; then
  (($# >= 2)) || { echo "$usage" >&2; exit 64; }
  state=$2
  [[ -d $state ]] || { echo "$0: --state $state: not a directory" >&2; exit 64; }
  shift 2
fi
(($# >= 5)) || { echo "$usage" >&2; exit 64; }
if [[ ${CACHEON_RUN_IMAGE_INSIDE:-} != 1 ]]; then
  exec env CACHEON_RUN_IMAGE_INSIDE=1 unshare --user --map-root-user --net --mount --pid --fork --kill-child "$0" ${state:+--state "$state"} "$@"
fi
r=$(realpath "$1") trust=$(realpath "$2") model=$(realpath "$3") mount=$4
shift 4
mount -t tmpfs -o mode=0755 tmpfs "$r/dev"
for d in null zero random urandom; do
  touch "$r/dev/$d"
  mount --bind "/dev/$d" "$r/dev/$d"
done
mount -t proc proc "$r/proc"
mount -t tmpfs tmpfs "$r/tmp"
# Mount points the image lacks are made in its (unpacked, private) tree,
# as a runtime would.
mkdir -p "$r/cacheon/trust" "$r$mount"
mount --bind "$trust" "$r/cacheon/trust"
mount -o remount,bind,ro "$r/cacheon/trust"
mount --bind "$model" "$r$mount"
mount -o remount,bind,ro "$r$mount"
if [[ -n $state ]]; then
  mkdir -p "$r/cacheon/state"
  mount --bind "$(realpath "$state")" "$r/cacheon/state"
fi
exec env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin chroot "$r" "$@"
