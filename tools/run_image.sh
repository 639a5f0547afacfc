#!/usr/bin/env bash
# Usage: tools/run_image.sh ROOTFS TRUST MODEL MOUNT CMD [ARGS...]
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
# Any unprivileged user can run it where user namespaces are enabled;
# nothing of the host's root filesystem is visible inside.
set -euo pipefail
(($# >= 5)) || { echo "usage: $0 ROOTFS TRUST MODEL MOUNT CMD [ARGS...]" >&2; exit 64; }
if [[ ${CACHEON_RUN_IMAGE_INSIDE:-} != 1 ]]; then
  exec env CACHEON_RUN_IMAGE_INSIDE=1 unshare --user --map-root-user --net --mount --pid --fork --kill-child "$0" "$@"
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
exec env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin chroot "$r" "$@"
