#!/usr/bin/env bash
# The worker sandbox's checks on a GPU host (docs/results/sandbox-gpu.md):
# the control-group probe and bounds, the allow-list root and Landlock, the
# CUDA verify tests inside that sandbox, and three qualifications with every
# stage (the harness-patching kernel, the noisy neighbour, an honest Triton
# RMSNorm) through bench/h200/run.sh fixtures.
#
#   bench/h200/sandbox-checks.sh OUT
#
# BIN (default .gpu) holds static builds made on any Linux machine:
#   CGO_ENABLED=0 go build -trimpath -o .gpu/cacheon ./tools/cmd/cacheon
#   for p in evaluator/sandbox evaluator/sandbox/cgroup evaluator/verify; do
#     CGO_ENABLED=0 go test -c -o .gpu/$(echo $p | tr / _).test ./$p; done
# CACHEON_PYTHON: an interpreter with torch and Triton (default python3).
# Run as root. On a cgroup v2 host whose group delegates no controllers the
# script first moves itself into a leaf of a group of its own, as the
# sandbox's refusal says to (docs/reference/worker-sandbox.md).
# About 6 minutes on an H100: the CUDA verify tests take 3 to 5 of them
# (VERIFY_TIMEOUT, default 360 s; on 2026-12-07 the witness and graph-gate
# tests alone took 182 s), the three qualifications about 2.
set -u
out=$1
bin=${BIN:-.gpu}
mkdir -p "$out"
{ nvidia-smi -L; uname -r; mount | grep cgroup; cat /proc/self/cgroup; cat /sys/fs/cgroup/cgroup.subtree_control; } >"$out/host.log" 2>&1
if [[ -f /sys/fs/cgroup/cgroup.controllers ]]; then
  mkdir -p /sys/fs/cgroup/cacheon/cacheon-controller && echo $$ >/sys/fs/cgroup/cacheon/cacheon-controller/cgroup.procs
  cat /proc/self/cgroup >>"$out/host.log"
fi
py=${CACHEON_PYTHON:-$(command -v python3)}
export CACHEON_REQUIRE_SANDBOX=1 CACHEON_PYTHON=$py CACHEON_TEST_PYTHON=$py
abs=$(cd "$bin" && pwd)
t=$SECONDS
(cd evaluator/sandbox/cgroup && "$abs/evaluator_sandbox_cgroup.test" -test.v) >"$out/cgroup.log" 2>&1
(cd evaluator/sandbox && timeout 120 "$abs/evaluator_sandbox.test" -test.run 'TestGroup|TestCPUQuota|TestWorkDirectory|TestAllowList|TestLandlock' -test.v) >"$out/sandbox.log" 2>&1
echo "sandbox tests done at $((SECONDS - t)) s" >>"$out/host.log"
(cd evaluator/verify && CACHEON_TEST_DEVICE=cuda timeout "${VERIFY_TIMEOUT:-360}" "$abs/evaluator_verify.test" -test.run "${VERIFY_RUN:-TestVerifyCUDAWitness|TestVerifyCUDAGraphGate|TestVerifyGoodKernelsPass}" -test.v) >"$out/verify.log" 2>&1
echo "verify tests done at $((SECONDS - t)) s" >>"$out/host.log"
export CACHEON=$abs/cacheon
w=$(mktemp -d)
OUT=$w FIXTURES="${FIXTURES:-silu_patches_harness rmsnorm_noisy_neighbour rmsnorm_triton}" timeout "${FIX_TIMEOUT:-330}" bench/h200/run.sh fixtures >"$out/fixtures.log" 2>&1
echo "fixtures exit $? at $((SECONDS - t)) s" >>"$out/host.log"
cp "$w/fixtures.tsv" "$out/" 2>/dev/null
for f in "$w"/fixture-*.json; do [[ -f $f ]] && cat "$f" >>"$out/fixtures.json"; done
true
