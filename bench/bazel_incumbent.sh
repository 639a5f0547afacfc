#!/usr/bin/env bash
# Times `bazel build //stacks:incumbent` cold (fresh output root, no disk or
# remote cache: every Go package, the standard library in pure mode and
# every materialization action runs) and as a no-op rebuild, then shows
# which actions re-run when one contribution changes.
#
#   bench/bazel_incumbent.sh [RUNS]
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
runs=${1:-2}
bash tools/bootstrap.sh >/dev/null 2>&1
root=$(mktemp -d "${TMPDIR:-/tmp}/cacheon-bench.XXXXXX")
trap 'bazel --output_user_root="$root" shutdown >/dev/null 2>&1; chmod -R u+w "$root" 2>/dev/null; rm -rf "$root"' EXIT
b() { bazel --output_user_root="$root" "$@"; }
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -sr)"
for ((i = 1; i <= runs; i++)); do
  b clean --expunge >/dev/null 2>&1 || true
  t0=$(now)
  b build --disk_cache= //stacks:incumbent >/dev/null 2>&1
  t1=$(now)
  b build --disk_cache= //stacks:incumbent >/dev/null 2>&1
  t2=$(now)
  echo "run $i: cold $(elapsed "$t0" "$t1") s, no-op $(elapsed "$t1" "$t2") s"
done

# One contribution changes: its own inspection and the materialization of
# the stack that holds it re-run; the other contributions' actions do not.
work=$(mktemp -d "${TMPDIR:-/tmp}/cacheon-bench-src.XXXXXX")
kernel=kernels/contributions/rmsnorm_triton/kernels/rmsnorm.py
cp "$kernel" "$work/orig"
trap 'cp "$work/orig" "$kernel"; b shutdown >/dev/null 2>&1; chmod -R u+w "$root" "$work" 2>/dev/null; rm -rf "$root" "$work"' EXIT
b build --disk_cache= //stacks:incumbent //kernels/contributions:all >/dev/null 2>&1
printf '\n# benchmark edit\n' >>"$kernel"
b build --disk_cache= --execution_log_json_file="$work/exec.json" //stacks:incumbent //kernels/contributions:all >/dev/null 2>&1
echo "actions executed after editing $kernel:"
sed -n 's/^ *"progressMessage": "\(.*\)",$/  \1/p' "$work/exec.json"
