#!/usr/bin/env bash
# The README's first command, run as a new user runs it: tools/run.sh in a
# fresh clone of this repository, to its end, then checks of what it left
# as a consumer would make them:
#
#   1. tools/run.sh exits 0 (whatever the CPU noise decided: a FAIL or a
#      NO_DECISION is a result the job reports, never an exit that ends it);
#   2. the servable release it signed verifies offline and against the
#      release channel it published, with the cacheon binary the clone built;
#   2b. the crown loop's release carries its chain of custody: release
#      verify --layout-key, from the release alone, checks the owner's
#      in-toto layout and every step's link (two qualifications, review,
#      materialization, build, signature) the release carries against it;
#   3. cosign (the stock tool) verifies the release's SLSA provenance;
#   4. the image served tokens with no network: the sandbox it ran in has
#      loopback only, and under another release key the fail-closed
#      entrypoint refuses to start (exit 2, nothing served);
#   4b. the consumer guide's umoci and runc commands, run as written there,
#      serve tokens from the same release, with no network but loopback,
#      the root, trust and model read-only, and the channel's state
#      written to the writable state mount; and its Docker commands
#      (tools/docker_guide_check.sh) verify it from a registry and serve
#      it, the channel checked;
#   5. `cacheon release rebuild --source-repo --run-source-build-scripts` rebuilds the release, its
#      entrypoint from the commit it records, byte for byte.
#
#   tools/main_job_check.sh
#
# Uncommitted changes of the working tree are committed in the clone (one
# snapshot commit), so what is checked is what is here, and the release
# records a commit its source repository holds. Ends with
# "main-job: PASS (N s)" or "main-job: FAIL: ...".
# CACHEON_KEEP_WORK=1 keeps the clone and its output for a post-mortem.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$repo"
say() { printf 'main-job: %s\n' "$*" >&2; }
fail() {
  say "FAIL: $*"
  exit 1
}
start=$SECONDS

work=$(mktemp -d "${TMPDIR:-/tmp}/cacheon-main-job.XXXXXX")
clone=$work/clone
cleanup() {
  # The clone's Bazel output base lies outside $work (under the user's
  # Bazel root, named for the clone's path): 2.4 GB a run that no later
  # run reuses, so it goes with the clone.
  local output_base=
  if [[ -d $clone ]]; then
    output_base=$(cd "$clone" && bazel info output_base 2>/dev/null) || true
    (cd "$clone" && bazel shutdown >/dev/null 2>&1) || true
  fi
  if [[ -n ${CACHEON_KEEP_WORK:-} ]]; then
    say "kept $work${output_base:+ and its Bazel output base $output_base}"
    return
  fi
  if [[ -n $output_base && -d $output_base ]]; then
    chmod -R u+w "$output_base" 2>/dev/null
    rm -rf "$output_base"
  fi
  chmod -R u+w "$work" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

# --- The clone ------------------------------------------------------------------
git clone --quiet --no-checkout "$repo" "$clone"
git ls-files -z --cached --others --exclude-standard |
  while IFS= read -r -d '' f; do
    [[ -e $f || -L $f ]] && printf '%s\0' "$f"
  done | tar --null -T - -cf "$work/sources.tar"
tar -xf "$work/sources.tar" -C "$clone"
(
  cd "$clone"
  git add -A
  if ! git diff --cached --quiet HEAD; then
    git -c user.name="main-job check" -c user.email="main-job@cacheon.invalid" \
      commit --quiet --no-verify -m "main-job check: the working tree's uncommitted changes"
    say "the working tree has uncommitted changes: checking them as one snapshot commit in the clone"
  fi
)
commit=$(git -C "$clone" rev-parse HEAD)
say "tools/run.sh in a fresh clone at $commit"

# --- 1. The main job, to its end ------------------------------------------------
out=$work/out
t=$SECONDS
if ! (cd "$clone" && CACHEON_OUT="$out" bash tools/run.sh) >"$work/run.out" 2>"$work/run.err"; then
  tail -n 60 "$work/run.err" >&2
  fail "tools/run.sh exited non-zero (its last lines above)"
fi
say "tools/run.sh finished in $((SECONDS - t)) s"
cacheon=$clone/bazel-bin/tools/cmd/cacheon/cacheon_/cacheon
[[ -x $cacheon ]] || fail "the clone has no cacheon binary at $cacheon"

# The qualification and the ledger's settlement are reported whatever they
# decided; each left its evidence.
report=$out/ledger/qualification/proposal-1/report-1.json
[[ -f $report ]] || fail "no qualification report at $report"
"$cacheon" evidence regrade "$report" >/dev/null ||
  fail "the qualification report does not re-grade"
"$cacheon" ledger check --ledger "$out/ledger/ledger.db" >/dev/null || fail "the main job's ledger does not check"
grep -q '^== done' "$work/run.err" || fail "tools/run.sh did not reach its last step"

# --- 2. The signed release, offline and against the channel ---------------------------
"$cacheon" release verify --key "$out/keys/release.pub" "$out/release" >/dev/null ||
  fail "out/release does not verify offline"
# With no state flag, as a consumer runs it: the channel's state goes to the
# user's cache directory, made where it is not there yet (the clone's
# channel keys are new, so its state file is too).
"$cacheon" release verify --key "$out/keys/release.pub" --channel "$out/channel" \
  --channel-root "$out/channel/1.root.json" --name cacheon-engine "$out/release" >/dev/null ||
  fail "out/release does not verify against the channel"
say "out/release verifies offline and against out/channel"

# --- 2b. The crowned release's chain of custody -------------------------------------
# The crown loop ends without a release when the CPU is too noisy to
# calibrate or nothing was crowned (an honest outcome it reports); a
# release it signed must carry its layout and links.
crown=$out/crown-loop
if [[ -d $crown/release ]]; then
  # From the release alone: the layout and links it carries as referrers.
  "$cacheon" release verify --key "$crown/keys/release.pub" --layout-key "$crown/keys/owner.pub" \
    "$crown/release" >"$work/custody.out" 2>&1 || {
    cat "$work/custody.out" >&2
    fail "the crown loop's release does not verify against the in-toto layout and links it carries"
  }
  say "the crown loop's release verifies against its chain of custody: $(grep in-toto-layout "$work/custody.out")"
else
  say "the crown loop signed no release this run (its output says why): no chain of custody to check"
fi

# --- 3. The stock tool on the provenance --------------------------------------------
if command -v cosign >/dev/null; then
  img=$(jq -r '.manifests[] | select(.annotations["org.opencontainers.image.ref.name"] != null) | .digest' "$out/release/index.json")
  cosign verify-blob-attestation --key "$out/keys/release.pub" --bundle "$out/trust/release.sigstore.json" \
    --insecure-ignore-tlog --type slsaprovenance1 "$out/release/blobs/sha256/${img#sha256:}" >/dev/null 2>&1 ||
    fail "cosign does not verify the provenance of $img"
  say "cosign verified the provenance of $img"
elif [[ ${CACHEON_REQUIRE_STOCK_TOOLS:-0} == 1 ]]; then
  fail "cosign is not on PATH (tools/bootstrap.sh test builds it)"
else
  say "cosign is not on PATH: skipping its check (tools/bootstrap.sh test builds it)"
fi

# --- 4. Served with no network; refused under another key -------------------------------
# run.sh's standard output holds the other steps' lines too: read the
# JSON lines among them.
jq -e -R -s '[split("\n")[] | fromjson? | select(type == "object" and .id == 1)] |
  length == 1 and (.[0].tokens | length == 1 and (.[0] | length == 5))' "$work/run.out" >/dev/null || {
  cat "$work/run.out" >&2
  fail "the image did not answer the main job's prompt with 5 tokens"
}
model=$clone/bazel-bin/release/tiny_llama.model
ifaces=$(bash "$clone/tools/run_image.sh" "$out/rootfs" "$out/trust" "$model" /cacheon/model \
  /usr/bin/python3 -c 'import socket; print(" ".join(n for _, n in socket.if_nameindex()))')
[[ $ifaces == lo ]] || fail "the image's sandbox has network interfaces: $ifaces"
mkdir -p "$work/other-trust"
cp "$out/trust/release.sigstore.json" "$work/other-trust/"
"$cacheon" release keygen --out "$work/other" >/dev/null
cp "$work/other.pub" "$work/other-trust/release.pub"
set +e
echo '{"id": 2, "prompt": [1], "max_new_tokens": 1}' |
  bash "$clone/tools/run_image.sh" "$out/rootfs" "$work/other-trust" "$model" /cacheon/model \
    /cacheon/bin/cacheon release serve >"$work/refused.out" 2>"$work/refused.err"
status=$?
set -e
if ((status != 2)) || [[ -s $work/refused.out ]]; then
  cat "$work/refused.out" "$work/refused.err" >&2
  fail "under another key the entrypoint exited $status (want 2, with nothing served)"
fi
say "served with loopback only; refused under another key: $(tail -1 "$work/refused.err")"

# --- 4b. With umoci and runc, and with Docker, as the consumer guide says ------------
# The clone's own guide and script: what is checked is the snapshot.
bash "$clone/tools/runc_guide_check.sh" "$out" "$model" "$cacheon" || fail "the consumer guide's umoci and runc commands did not serve as it says"
# And with Docker (a private daemon and registry; without --gpus all, as
# the guide says).
bash "$clone/tools/docker_guide_check.sh" "$out" "$model" "$cacheon" || fail "the consumer guide's Docker commands did not serve as it says"

# --- 5. Rebuilt from source, byte for byte ------------------------------------------
t=$SECONDS
# The clone is this repository's own commit, so its build steps are run
# (--run-source-build-scripts) and handed this user's caches and Go
# settings by name: the rebuild empties their environment otherwise.
build_env=(--source-build-env "PATH=$PATH" --source-build-env "HOME=$HOME")
for v in CACHEON_CACHE XDG_CACHE_HOME GOPROXY GOFLAGS GOSUMDB GONOSUMDB GOPRIVATE GOTOOLCHAIN GOMODCACHE; do
  if [[ -n ${!v:-} ]]; then build_env+=(--source-build-env "$v=${!v}"); fi
done
if ! "$cacheon" release rebuild --json --key "$out/keys/release.pub" --source-repo "$clone" \
  --run-source-build-scripts "${build_env[@]}" \
  --work "$work/rebuild" "$out/release" >"$work/rebuild.json" 2>"$work/rebuild.err"; then
  cat "$work/rebuild.json" "$work/rebuild.err" >&2 || true
  fail "the release did not rebuild"
fi
jq -e '.match and .entrypoint_rebuilt and .provenance_match and .sbom_match' "$work/rebuild.json" >/dev/null || {
  cat "$work/rebuild.json" >&2
  fail "the rebuild did not reproduce the release, its entrypoint from source included"
}
say "rebuilt from source at $commit in $((SECONDS - t)) s: image $(jq -r '.rebuilt_digest' "$work/rebuild.json")"
echo "main-job: PASS ($((SECONDS - start)) s)"
