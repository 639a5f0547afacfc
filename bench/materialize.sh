#!/usr/bin/env bash
# Materializer throughput on a synthetic stack: 11 contributions, one per
# singleton target, each a Python bundle whose op source imports three
# generated modules of 7.9 MiB (the intake limit is 8 MiB per .py file and
# 32 MiB of source text per bundle), about 261 MiB of selected Python in
# all. Only closure files reach an engine tree, so the payload is closure.
#
# Measures `cacheon stack materialize` end to end (assemble: read every
# bundle once and inspect it; materialize: re-check identities against the
# snapshots assembly took, rewrite imports, write, fsync, reopen, verify,
# rename, verify) against `cp -r` + `sha256sum` of the same bytes, with
# and without a `sync`; then `cacheon stack digest` (assembly alone) and
# `cacheon stack plan` of a candidate for one target (assembly, one more
# inspection, two materializations). The page cache is warm for every run.
#
# Each row gives the median wall time and the median CPU time (user +
# sys of the command and its children): on a shared machine the wall
# time moves with the load, the CPU time much less.
#
# The cacheon commands keep what they learn of each Python file (its
# facts: parse, dynamic-import findings, imports) in the Python facts
# cache by content digest. Rows marked "facts cache warm" run after one
# `stack digest` filled a private cache; rows marked "facts cache off"
# run with CACHEON_CACHE=off and parse every file, as the first command
# over new bundles does.
#
# Usage: bench/materialize.sh [RUNS]   (default 3; reports the median)
# Environment: CACHEON=path to a cacheon binary (default: go build).
set -euo pipefail

runs=${1:-3}
repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/cacheon-bench.XXXXXX")
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT

if [[ -z "${CACHEON:-}" ]]; then
  (cd "$repo" && go build -o "$work/cacheon" ./tools/cmd/cacheon)
  CACHEON=$work/cacheon
fi

ws=$work/ws
mkdir -p "$ws/catalog" "$ws/stacks" "$ws/kernels/contributions"
: > "$ws/MODULE.bazel"
cp "$repo/catalog/targets.hcl" "$ws/catalog/targets.hcl"

python3 - "$ws" <<'PY'
import hashlib, os, sys
ws = sys.argv[1]
slots = [
    "activation.silu_and_mul", "norm.rmsnorm", "attention.sdpa", "attention.decode",
    "attention.msa_block_score", "attention.msa_prefill_block_score", "moe.fused_experts",
    "moe.fused_experts_reduce", "collective.all_reduce", "collective.ar_residual_rmsnorm",
    "collective.moe_finalize_ar_rmsnorm",
]
table_bytes = int(7.9 * 1024 * 1024)
digest = "a" * 64
stack = ['stack "bench" {', '  kind    = "evaluation"', '  catalog = "//catalog:targets.hcl"',
         '  substrate {', '    name = "cacheon-substrate"', f'    base_engine_digest = "{digest}"',
         f'    runtime_digest = "{digest}"', '  }', '  arena {', f'    digest = "{digest}"', '  }']
for n, slot in enumerate(slots):
    name = f"bench_{n:02d}"
    root = os.path.join(ws, "kernels", "contributions", name)
    os.makedirs(os.path.join(root, "kernels"))
    with open(os.path.join(root, "manifest.toml"), "w") as f:
        f.write(f'bundle_id = "bench-{n:02d}"\nabi_version = "cacheon-op-abi-v0"\n\n'
                f'[[ops]]\nslot = "{slot}"\nsource = "kernels/op.py"\nentry = "run"\n')
    open(os.path.join(root, "kernels", "__init__.py"), "w").close()
    with open(os.path.join(root, "kernels", "op.py"), "w") as f:
        f.write("from kernels.table_0 import T0 as A\nfrom kernels.table_1 import T0 as B\n"
                "from kernels.table_2 import T0 as C\n\n\ndef run(*args):\n    return (A, B, C)\n")
    for t in range(3):
        with open(os.path.join(root, "kernels", f"table_{t}.py"), "w") as f:
            written, i = 0, 0
            while written < table_bytes:
                h = hashlib.sha256(f"{name}/{t}/{i}".encode()).hexdigest()
                line = f'T{i} = "{h}{h[:32]}"\n'
                f.write(line)
                written += len(line)
                i += 1
    stack += [f'  contribution "{slot}" {{', f'    source = "//kernels/contributions:{name}"',
              f'    attribution_digest = "{digest}"', '  }']
stack.append("}")
with open(os.path.join(ws, "stacks", "bench.hcl"), "w") as f:
    f.write("\n".join(stack) + "\n")
PY

bytes=$(find "$ws/kernels" -type f -printf '%s\n' | awk '{s+=$1} END {print s}')
mib=$(awk -v b="$bytes" 'BEGIN {printf "%.1f", b/1048576}')
files=$(find "$ws/kernels" -type f | wc -l)

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

time_runs() { # label, command...
  local label=$1; shift
  local t=() c=()
  for ((i = 0; i < runs; i++)); do
    rm -rf "$work/out"
    local TIMEFORMAT='%R %U %S'
    { time "$@" >/dev/null 2>"$work/stderr"; } 2> "$work/time"
    t+=("$(tail -1 "$work/time" | awk '{print $1}')")
    c+=("$(tail -1 "$work/time" | awk '{print $2 + $3}')")
    chmod -R u+w "$work/out" 2>/dev/null || true
  done
  local m; m=$(printf '%s\n' "${t[@]}" | median)
  local mc; mc=$(printf '%s\n' "${c[@]}" | median)
  printf '| %-44s | %7.2f s | %7.1f MB/s | %7.2f s |\n' "$label" "$m" "$(awk -v b="$bytes" -v s="$m" 'BEGIN {print b/1e6/s}')" "$mc"
}

copy_hash() { cp -r "$ws/kernels" "$work/out" && find "$work/out" -type f -print0 | xargs -0 sha256sum; }
copy_sync_hash() { cp -r "$ws/kernels" "$work/out" && sync && find "$work/out" -type f -print0 | xargs -0 sha256sum; }

# The candidate replaces the first contribution with the same kernel and
# one more line of source, so its selected delta differs.
cp -r "$ws/kernels/contributions/bench_00" "$work/candidate"
printf '\n# candidate\n' >> "$work/candidate/kernels/op.py"

# Warm the page cache, check the stack once and fill the facts cache.
export CACHEON_CACHE=$work/cache
cat "$ws"/kernels/contributions/*/kernels/* > /dev/null
(cd "$ws" && "$CACHEON" stack digest stacks/bench.hcl > /dev/null)

echo "Synthetic stack: 11 contributions, $files files, $bytes bytes ($mib MiB); median of $runs runs."
echo "Host: $(nproc) CPUs, $(uname -sr)."
echo
echo "| step | wall time | throughput (wall) | CPU time |"
echo "|---|---|---|---|"
time_runs "cacheon stack materialize (facts cache warm)" sh -c "cd '$ws' && '$CACHEON' stack materialize --quiet stacks/bench.hcl --out '$work/out'"
time_runs "cacheon stack materialize (facts cache off)" sh -c "cd '$ws' && CACHEON_CACHE=off '$CACHEON' stack materialize --quiet stacks/bench.hcl --out '$work/out'"
time_runs "cp -r + sha256sum" copy_hash
time_runs "cp -r + sync + sha256sum" copy_sync_hash
time_runs "cacheon stack digest (facts cache warm)" sh -c "cd '$ws' && '$CACHEON' stack digest stacks/bench.hcl"
time_runs "cacheon stack digest (facts cache off)" sh -c "cd '$ws' && CACHEON_CACHE=off '$CACHEON' stack digest stacks/bench.hcl"
time_runs "cacheon stack plan (facts cache warm)" sh -c "cd '$ws' && '$CACHEON' stack plan --incumbent stacks/bench.hcl --candidate '$work/candidate'"
time_runs "cacheon stack plan (facts cache off)" sh -c "cd '$ws' && CACHEON_CACHE=off '$CACHEON' stack plan --incumbent stacks/bench.hcl --candidate '$work/candidate'"
