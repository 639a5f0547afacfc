#!/usr/bin/env bash
# The qualification measurements on one GPU (docs/results/qualify-h200.md):
#
#   bench/h200/run.sh aa          20 stock-versus-stock rounds with a re-packaged incumbent kernel on C
#                                 (aa and resolution with ONE_ENGINE=1: each round's reads in one
#                                 resident engine that swaps trees, qualify calibrate --one-engine)
#   bench/h200/run.sh resolution  10 rounds at each of three known speed differences (LEVELS picks some)
#   bench/h200/run.sh qualify     a faster contribution, its reproduction, and a broken kernel
#   bench/h200/run.sh full        T's quality calibration on these lanes, then every stage (screens,
#                                 speed, audit A, pristine quality T) for the Triton RMSNorm and, under
#                                 v8 through the prebuild, the CUDA RMSNorm; QCAL reuses a calibration
#   bench/h200/run.sh fixtures    every stage for the integrity fixtures only a GPU shows (side streams,
#                                 graph capture; FIXTURES picks some, and may name a contribution
#                                 too), with the committed T calibration
#   bench/h200/run.sh attention   the same for an honest attention.decode contribution over an incumbent
#                                 whose attention.decode entry is the same kernel slowed by SPIN GPU cycles
#                                 a call (default 4,800), both declared graph_safe so that the timed decode's
#                                 graphs capture them, so that the audit runs at the attention slot;
#                                 HOST_SPIN_US adds host time a call, which graph replays never run
#   bench/h200/run.sh moe         every stage for an honest moe.fused_experts contribution on an 8-layer
#                                 mixture-of-experts model (8 experts, top 2) over an incumbent whose
#                                 moe.fused_experts entry is the same kernel slowed by SPIN cycles a call
#                                 (default 4,800), with T's calibration made first on that model (QCAL
#                                 reuses one), so that the audit runs at the MoE slot
#   bench/h200/run.sh silu        every stage for an honest activation.silu_and_mul contribution over
#                                 an incumbent slowed by 4,800 cycles a call (ROUNDS qualifications,
#                                 default 1), so that the audit runs at the MLP slot, whose records
#                                 outgrow the budget; with the committed T calibration
#
# Environment: CACHEON (the cacheon binary, default: cacheon on PATH),
# CACHEON_PYTHON (an interpreter with torch and Triton), OUT (where the
# results go, default ./h200-results), EVIDENCE (the evidence store,
# default OUT/evidence), POLICY (the speed policy file, default
# bench/h200/policy.hcl; bench/h200/policy-sets.hcl is the version 9
# policy that averages four read sets). Every engine runs in the worker
# sandbox; nothing here changes a GPU setting.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
cd "$repo"
cacheon=${CACHEON:-cacheon}
out=${OUT:-$PWD/h200-results}
mkdir -p "$out"
# The evidence store the qualifications write (EVIDENCE moves it out of
# OUT, whose many small files a copy back may not want).
evidence=${EVIDENCE:-$out/evidence}
work=$(mktemp -d "${TMPDIR:-/tmp}/cacheon-h200.XXXXXX")
chmod 755 "$work"
trap 'rm -rf "$work"' EXIT

# The 8-layer model the gpu-lane measurements used: 492 M parameters.
# SMOKE=1 runs the same steps with the default test model, workload and
# policy instead (on the CPU lane, to check the script itself).
model=$work/model
common=(--workspace "$repo")
# ONE_ENGINE=1: the aa and resolution rounds read B, C and B′ in one
# resident engine that swaps trees (qualify calibrate --one-engine).
calib=()
[[ -n ${ONE_ENGINE:-} ]] && calib=(--one-engine)
if [[ -z ${SMOKE:-} ]]; then
  echo "== model" >&2
  shape=(--layers 8 --hidden 2048 --heads 16 --kv-heads 4 --vocab 32000 --max-position-embeddings 512)
  if [[ ${1:-} == moe ]]; then
    # Mixtral-style: 8 experts of intermediate 1408, top 2 (769 M parameters).
    shape+=(--moe --experts 8 --top-k 2 --intermediate 1408)
  else
    shape+=(--intermediate 5632)
  fi
  "$cacheon" model make-test --seed 1 --out "$model" "${shape[@]}" >&2
  common+=(--model "$model" --workload "$here/workload.hcl" --policy "${POLICY:-$here/policy.hcl}")
else
  if [[ ${1:-} == moe ]]; then
    "$cacheon" model make-test --seed 1 --out "$model" --moe >&2
    common+=(--model "$model")
  fi
  [[ -z ${POLICY:-} ]] || common+=(--policy "$POLICY")
fi

# bundle SRC NAME [SPIN]: a copy of the bundle SRC under a new bundle id
# and with a comment added to its source (same code, new selected payload);
# with SPIN, its entry also spins the GPU for SPIN cycles after the kernel
# (torch.cuda._sleep, which CUDA graphs capture): a known, calibrated delay.
bundle() {
  local src=$1 name=$2 spin=${3:-}
  local dst=$work/bundles/$name
  mkdir -p "$work/bundles"
  cp -r "$src" "$dst"
  sed -i "s/^bundle_id = \"\(.*\)\"/bundle_id = \"\1-$name\"/" "$dst/manifest.toml"
  local py
  py=$(sed -n 's/^source = "\(.*\)"/\1/p' "$dst/manifest.toml" | head -1)
  # A new selected payload with the same code: a transition must change bytes.
  printf '\n# Re-packaged as %s.\n' "$name" >>"$dst/$py"
  if [[ -n $spin ]]; then
    cat >>"$dst/$py" <<PY


_SPIN_CYCLES = $spin
_kernel = silu_and_mul


def silu_and_mul(x: torch.Tensor, out: torch.Tensor) -> None:
    _kernel(x, out)
    if _SPIN_CYCLES and x.is_cuda:
        torch.cuda._sleep(_SPIN_CYCLES)
PY
  fi
  echo "$dst"
}

# graph_safe_copy SRC OP DST: a copy of the bundle SRC at DST under a new
# bundle id (SRC's with DST's name appended), its OP row's metadata
# declaring graph_safe.
graph_safe_copy() {
  local src=$1 op=$2 dst=$3
  mkdir -p "$(dirname "$dst")"
  cp -r "$src" "$dst"
  sed -i "s/^bundle_id = \"\(.*\)\"/bundle_id = \"\1-$(basename "$dst")\"/" "$dst/manifest.toml"
  sed -i "s/^  \"op\": \"$op\",\$/  \"op\": \"$op\",\\n  \"graph_safe\": true,/" "$dst"/metadata/*.json
  grep -q '"graph_safe": true' "$dst"/metadata/*.json || { echo "graph_safe_copy: $op: graph_safe not declared" >&2; exit 1; }
}

# attention_bundle NAME SPIN [HOST_US]: the pure-torch attention.decode
# contribution under a new bundle id, declared graph_safe, its entry
# spinning the GPU for SPIN cycles after the kernel and then the host for
# HOST_US microseconds (0: none; both 0: the same code re-packaged).
# attention.decode is a block slot: a row without graph_safe metadata runs
# stock inside CUDA graphs (cacheon_substrate.seam), so in the timed
# decode, which replays graphs, neither the incumbent's row nor the
# candidate's would run, and no spin could show (both qualifications of
# docs/results/rereads-h100.md read ×1.0017 and ×1.0039). Declared
# graph_safe, the row is captured, with its GPU spin, and the ABI screen's
# graph gate checks its capture. A host delay runs only while a graph is
# captured, never in its replays.
attention_bundle() {
  local name=$1 spin=$2 host_us=${3:-0}
  local dst=$work/bundles/$name
  graph_safe_copy kernels/contributions/decode_attention_torch attention.decode "$dst"
  cat >>"$dst/kernels/attention_decode.py" <<PY


# Re-packaged as $name.
import time as _time

_SPIN_CYCLES = $spin
_HOST_SPIN_S = $host_us / 1e6
_kernel = attention_decode


def attention_decode(q, k, v, seq_lens, sm_scale, out):
    _kernel(q, k, v, seq_lens, sm_scale, out)
    if _SPIN_CYCLES and q.is_cuda:
        torch.cuda._sleep(_SPIN_CYCLES)
    if _HOST_SPIN_S:
        _end = _time.perf_counter() + _HOST_SPIN_S
        while _time.perf_counter() < _end:
            pass
PY
  echo "$dst"
}

# moe_bundle NAME SPIN: the moe_fused_experts_torch contribution under a
# new bundle id, declared graph_safe, its experts computed the way a CUDA
# graph can capture (every expert over every token, weighted by the
# token's routing weight for it, zero when unrouted; the contribution's
# own loop gathers each expert's tokens with nonzero(), a host sync no
# capture allows), and its entry spinning the GPU for SPIN cycles after
# the kernel (0: the same code re-packaged). Its prepare keeps the
# contribution's transposed layout, so the audit judges prepared weights
# that are not the checkpoint's.
moe_bundle() {
  local name=$1 spin=$2
  local dst=$work/bundles/$name
  graph_safe_copy kernels/contributions/moe_fused_experts_torch moe.fused_experts "$dst"
  cat >>"$dst/kernels/fused_experts.py" <<PY


# Re-packaged as $name: every expert over every token, masked, which a
# CUDA graph can capture.
_SPIN_CYCLES = $spin


def fused_experts(x, topk_ids, topk_weights, prepared, out):
    w13t, w2t = prepared
    inter = w13t.shape[2] // 2
    ids = topk_ids.to(torch.int64)
    weights = topk_weights.to(torch.float32)
    acc = torch.zeros(out.shape, dtype=torch.float32, device=x.device)
    for e in range(w13t.shape[0]):
        weight = (weights * (ids == e)).sum(dim=-1, keepdim=True)
        h = (x @ w13t[e]).float()
        act = (F.silu(h[:, :inter]) * h[:, inter:]).to(x.dtype)
        acc += weight * (act @ w2t[e]).float()
    out.copy_(acc)
    if _SPIN_CYCLES and x.is_cuda:
        torch.cuda._sleep(_SPIN_CYCLES)
PY
  echo "$dst"
}

# slot_stack SLOT BUNDLE: the incumbent with a SLOT entry taken from BUNDLE
# (a slot the incumbent leaves to the substrate's stock kernel, such as
# attention.decode or moe.fused_experts). The attribution is a bench
# constant.
slot_stack() {
  local f=$work/incumbent-$1-$(basename "$2").hcl
  sed '$d' stacks/incumbent.hcl >"$f"
  cat >>"$f" <<HCL

  contribution "$1" {
    source             = "$2"
    attribution_digest = "$(printf 'cacheon bench %s incumbent' "$1" | sha256sum | cut -c1-64)"
  }
}
HCL
  echo "$f"
}

# stack SILU_BUNDLE: the incumbent with its activation.silu_and_mul entry
# taken from SILU_BUNDLE.
stack() {
  local f=$work/incumbent-$(basename "$1").hcl
  sed "s|\"//kernels/contributions:silu_and_mul_triton\"|\"$1\"|" stacks/incumbent.hcl >"$f"
  echo "$f"
}

# audit_rounds NAME INCUMBENT CANDIDATE: ROUNDS qualifications with every
# stage of CANDIDATE over INCUMBENT (a transition whose speed stage passes,
# so that the audit runs at its slot), each regraded, summarized in
# NAME.tsv. T's committed calibration is the 8-layer model's; SMOKE runs
# the test model under the embedded CPU calibration unless QCAL names one.
audit_rounds() {
  local name=$1 inc=$2 cand=$3 i start code qcal=()
  if [[ -n ${QCAL:-} || -z ${SMOKE:-} ]]; then
    qcal=(--quality-calibration "${QCAL:-$repo/docs/results/qualify-h200/full/quality-calibration.json}")
  fi
  local summary=$out/$name.tsv
  printf 'round\texit\twall_s\tdecision\tspeed\taudit\n' >"$summary"
  set +e
  for i in $(seq "${ROUNDS:-1}"); do
    start=$SECONDS
    "$cacheon" qualify --incumbent "$inc" --candidate "$cand" "${common[@]}" \
      "${qcal[@]}" --out "$out/$name-$i" --evidence "$evidence" >"$out/$name-$i.log" 2>&1
    code=$?
    "$cacheon" evidence regrade "$out/$name-$i/report.json" --evidence "$evidence" >>"$out/$name-$i.log" 2>&1 ||
      echo "regrade of $name-$i failed" >&2
    "${CACHEON_PYTHON:-python3}" - "$out/$name-$i/report.json" "$i" "$code" "$((SECONDS - start))" >>"$summary" <<'PY'
import json, sys
path, i, code, wall = sys.argv[1:5]
try:
    r = json.load(open(path))
except OSError as e:
    print(f"{i}\t{code}\t{wall}\tno report\t\t{e}")
    sys.exit(0)
stage = {s["name"]: f"{s['decision']}: {s.get('reason', '')}".replace(chr(9), " ") for s in r["stages"]}
print(f"{i}\t{code}\t{wall}\t{r['decision']}\t{stage.get('speed', '')}\t{stage.get('audit', 'not run')}")
PY
  done
  set -e
  cat "$summary" >&2
}

case ${1:-} in
aa)
  # The incumbent's own RMSNorm kernel re-packaged as a new bundle, on C.
  cand=$(bundle kernels/contributions/rmsnorm_triton aa)
  "$cacheon" qualify calibrate --rounds "${ROUNDS:-20}" --candidate "$cand" "${calib[@]}" "${common[@]}" --out "$out/aa.json"
  ;;
resolution)
  # An incumbent slowed by 4,800 cycles per silu_and_mul call; candidates
  # that remove 1,200, 2,400 and 4,800 of them (measured in one process:
  # ×1.0054, ×1.0094, ×1.0179 end to end on this model and batch).
  inc=$(stack "$(bundle kernels/contributions/silu_and_mul_triton spin4800 4800)")
  for keep in ${LEVELS:-3600 2400 0}; do
    cand=$(bundle kernels/contributions/silu_and_mul_triton "spin$keep" "$keep")
    "$cacheon" qualify calibrate --rounds "${ROUNDS:-10}" --incumbent "$inc" --candidate "$cand" "${calib[@]}" "${common[@]}" \
      --out "$out/resolution-minus$((4800 - keep)).json"
  done
  ;;
qualify)
  # A real faster kernel: the Triton RMSNorm over an incumbent with the
  # pure-torch one; then its reproduction on exchanged lanes; then a broken
  # kernel that the ABI screen must catch.
  inc=$work/incumbent-torch-rmsnorm.hcl
  sed "s|//kernels/contributions:rmsnorm_triton|$repo/kernels/contributions/rmsnorm_torch|" stacks/incumbent.hcl >"$inc"
  set +e
  "$cacheon" qualify --incumbent "$inc" --candidate kernels/contributions/rmsnorm_triton "${common[@]}" \
    --out "$out/faster" --evidence "$evidence"
  "$cacheon" qualify --incumbent "$inc" --candidate kernels/contributions/rmsnorm_triton "${common[@]}" \
    --out "$out/faster-reproduction" --evidence "$evidence" --reproduce "$out/faster/report.json"
  "$cacheon" qualify --candidate kernels/fixtures/silu_drops_silu "${common[@]}" \
    --out "$out/broken" --evidence "$evidence"
  set -e
  for d in faster faster-reproduction broken; do
    "$cacheon" evidence regrade "$out/$d/report.json" --evidence "$evidence" || echo "regrade of $d failed" >&2
  done
  ;;
full)
  # The quality calibration first (3 stock rounds, every prompt of the
  # workload teacher-forced), unless QCAL names one already made here.
  qcal=${QCAL:-$out/quality-calibration.json}
  if [[ ! -f $qcal ]]; then
    "$cacheon" qualify calibrate --quality --rounds "${QROUNDS:-3}" "${common[@]}" --out "$qcal"
  fi
  inc=$work/incumbent-torch-rmsnorm.hcl
  sed "s|//kernels/contributions:rmsnorm_triton|$repo/kernels/contributions/rmsnorm_torch|" stacks/incumbent.hcl >"$inc"
  set +e
  for c in rmsnorm_triton rmsnorm_cuda; do
    start=$SECONDS
    "$cacheon" qualify --incumbent "$inc" --candidate "kernels/contributions/$c" "${common[@]}" \
      --quality-calibration "$qcal" --out "$out/full-$c" --evidence "$evidence"
    echo "$c: exit $?, $((SECONDS - start)) s wall" >&2
  done
  set -e
  for c in rmsnorm_triton rmsnorm_cuda; do
    "$cacheon" evidence regrade "$out/full-$c/report.json" --evidence "$evidence" || echo "regrade of $c failed" >&2
  done
  ;;
fixtures)
  # Each fixture is qualified over the pure-torch incumbent, as the full
  # run's candidates are, under T's calibration from these lanes.
  qcal=${QCAL:-$repo/docs/results/qualify-h200/full/quality-calibration.json}
  inc=$work/incumbent-torch-rmsnorm.hcl
  sed "s|//kernels/contributions:rmsnorm_triton|$repo/kernels/contributions/rmsnorm_torch|" stacks/incumbent.hcl >"$inc"
  summary=$out/fixtures.tsv
  printf 'fixture\texit\twall_s\tdecision\tstage\treason\n' >"$summary"
  set +e
  for c in ${FIXTURES:-rmsnorm_side_stream rmsnorm_wrong_when_captured rmsnorm_wrong_unless_captured}; do
    start=$SECONDS
    dir=kernels/fixtures/$c
    [[ -d $dir ]] || dir=kernels/contributions/$c # an honest contribution, for comparison
    "$cacheon" qualify --incumbent "$inc" --candidate "$dir" "${common[@]}" \
      --quality-calibration "$qcal" --out "$out/fixture-$c" --evidence "$evidence" --json >"$out/fixture-$c.json"
    code=$?
    wall=$((SECONDS - start))
    # The verdict, and the first stage that did not pass, from the report.
    "${CACHEON_PYTHON:-python3}" - "$out/fixture-$c/report.json" "$c" "$code" "$wall" >>"$summary" <<'PY'
import json, sys
path, name, code, wall = sys.argv[1:5]
try:
    r = json.load(open(path))
except OSError as e:
    print(f"{name}\t{code}\t{wall}\tno report\t\t{e}")
    sys.exit(0)
stage = next((s for s in r["stages"] if s["decision"] not in ("PASS", "NOT_APPLICABLE")), r["stages"][-1])
print(f"{name}\t{code}\t{wall}\t{r['decision']}\t{stage['name']}\t{stage.get('reason', '').replace(chr(9), ' ')}")
PY
    echo "$c: exit $code, ${wall} s wall" >&2
  done
  set -e
  cat "$summary" >&2
  ;;
attention)
  # The attention slot's audit on the real model: the incumbent's
  # attention.decode entry is the pure-torch kernel slowed by SPIN cycles
  # a call, the candidate the same kernel without them, so the speed stage
  # passes and the audit runs at the attention slot, whose records (the
  # KV cache of every call) outgrow the budget as the MLP slot's do.
  audit_rounds attention "$(slot_stack attention.decode "$(attention_bundle "spin${SPIN:-4800}host${HOST_SPIN_US:-0}" "${SPIN:-4800}" "${HOST_SPIN_US:-0}")")" \
    "$(attention_bundle spin0 0)"
  ;;
moe)
  # The MoE slot's audit on a mixture-of-experts model: T's calibration
  # is made on that model first (a calibration of another model is
  # refused), then the honest kernel qualifies over its slowed copy.
  qcal=${QCAL:-$out/quality-calibration-moe.json}
  if [[ ! -f $qcal ]]; then
    "$cacheon" qualify calibrate --quality --rounds "${QROUNDS:-3}" "${common[@]}" --out "$qcal"
  fi
  QCAL=$qcal audit_rounds moe "$(slot_stack moe.fused_experts "$(moe_bundle "spin${SPIN:-4800}" "${SPIN:-4800}")")" \
    "$(moe_bundle spin0 0)"
  ;;
silu)
  # The MLP slot's audit on the real model (docs/reference/audit.md, "The
  # budget"): the candidate is the incumbent's Triton silu_and_mul without
  # the spin, correct and faster, so the speed stage passes and the audit
  # runs. Its 528 silu calls (264 prefill records of about 5.8 MB) outgrow
  # the 1 GiB record budget: the recorder keeps a sample of 186 of them.
  audit_rounds silu "$(stack "$(bundle kernels/contributions/silu_and_mul_triton spin4800 4800)")" \
    "$(bundle kernels/contributions/silu_and_mul_triton spin0 0)"
  ;;
*)
  echo "usage: $0 aa|resolution|qualify|full|fixtures|attention|moe|silu" >&2
  exit 2
  ;;
esac
