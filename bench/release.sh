#!/usr/bin/env bash
# Release pipeline throughput on a release whose layers weigh 1 GiB (a
# base image of 8 layers of incompressible data, zstd level 1, plus the
# engine tree, substrate, entrypoint and release layers).
#
# Measures with `go test -bench BenchmarkRelease ./release/verify`:
#   verify-layout       cacheon release verify on the OCI layout (MB/s of blobs)
#   sha256-same-bytes   SHA-256 of the same blob files, read the same way
#   build-sign-publish  release build + sign + publish to a loopback registry
#   verify-registry     cacheon release verify from that registry
# The registry is Debian's docker-registry on 127.0.0.1, started by the
# benchmark itself. The page cache is warm for every run.
#
# Usage: bench/release.sh [COUNT]   (default 3 runs of each benchmark)
# Environment: CACHEON_BENCH_BYTES (default 1073741824),
#              OUT (default docs/release-benchmark.txt).
set -euo pipefail

count=${1:-3}
repo=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$repo/docs/release-benchmark.txt}
bytes=${CACHEON_BENCH_BYTES:-1073741824}

cd "$repo"
{
  echo "# bench/release.sh $count   (CACHEON_BENCH_BYTES=$bytes)"
  echo "# $(go version); $(nproc) CPUs; $(uname -sr)"
  echo "# $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')"
  CACHEON_BENCH_BYTES=$bytes go test -run '^$' -bench BenchmarkRelease -benchtime 3x -count "$count" ./release/verify
} | tee "$out.tmp"
mv "$out.tmp" "$out"
echo "wrote $out"
