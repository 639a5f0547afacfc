#!/usr/bin/env bash
# Sets up whatever is missing, then runs the main job on its embedded
# defaults (CPU lane, local OCI image layout):
#
#   1. build the engines with Bazel: the evaluation incumbent
#      (//stacks:incumbent), a worked candidate on top of it, and the
#      release image (//release:engine, an OCI layout with SBOM and
#      provenance);
#   2. check a contribution as a miner would: scan it and verify it on the
#      CPU lane against the validator's fp32 references, in worker processes;
#   3. qualify a contribution over the incumbent on the CPU lane as a
#      proposal in the SQLite ledger: intake, then every screen, B, C and
#      B′ engine processes in the worker sandbox, the audit and quality,
#      graded under speed policy v8, with a report anyone can re-grade; the
#      attempt is recorded and settlement says plainly why nothing can be
#      crowned: under the uncalibrated default policy a speed verdict, PASS
#      or FAIL, is noise, so the proposal stays undecided (no_decision);
#   4. the whole crown loop on the demonstration arena (tools/crown_loop.sh):
#      calibrate the CPU lane, qualify, reproduce, settle a crown, build the
#      new incumbent, review the crown, and build, sign and verify the
#      release that ships the crowned contribution;
#   5. build the servable release: the same engine on a base assembled from
#      pinned Debian packages (python3, torch), sign it with a local key
#      (outside the build graph), verify it offline as a consumer would,
#      unpack the verified image and serve tokens from it with no network
#      through its fail-closed entrypoint; publish it into a signed channel.
#      Its build, signing and verification take nothing from steps 2 to 4
#      and time nothing, so they run beside steps 2 and 3 (whose speed
#      verdict is noise under the uncalibrated policy anyway) and are
#      finished before the crown loop, which calibrates and times the lane
#      and so runs with nothing of the job's beside it.
#
# Everything it writes goes under out/ (override with CACHEON_OUT). Every
# step's outcome is a result the job reports: a FAIL or a NO_DECISION of a
# qualification on a noisy CPU, or nothing to crown, is printed with its
# reason and the job goes on; only a refused input or a broken setup ends it
# (non-zero). Each step's header says when it started.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$repo"
bash tools/bootstrap.sh run

out=${CACHEON_OUT:-$repo/out}
mkdir -p "$out"
# out/ holds a copy of the workspace (the crown loop's); its own go.mod keeps
# it out of the repository's ./... (go test, go vet), as .bazelignore and
# gazelle's exclude keep it out of Bazel's //...
[[ -f $out/go.mod ]] || printf 'module cacheon.invalid/out\n\ngo 1.26\n' >"$out/go.mod"
say() { printf '\n== %s (at %d s)\n' "$*" "$SECONDS" >&2; }

# From a committed tree the release records the commit its entrypoint is
# built from, so `release rebuild --source-repo . --run-source-build-scripts`
# rebuilds the binary too, and where consumers fetch that commit: the
# checkout's origin when it is a URL they can clone. A checkout without
# one (a clone of a local directory, as tools/main_job_check.sh makes)
# records an unpublished local checkout instead, asked for by name
# (--allow-local-source), since release build refuses a local path; the
# path passed is "." because nothing but its being local is recorded.
source_flags=() entrypoint_source=()
if git rev-parse -q --verify HEAD >/dev/null 2>&1 && [[ -z $(git status --porcelain --untracked-files=no) ]]; then
  source_repo=$(entrypoint_source_url "$repo")
  commit=$(git rev-parse HEAD)
  source_flags=(--define=entrypoint_source_repo="${source_repo:-.}" --define=entrypoint_source_commit="$commit")
  entrypoint_source=(--entrypoint-source-repo "${source_repo:-.}" --entrypoint-source-commit "$commit" --entrypoint-bazel-target //tools/cmd/cacheon-engine)
  if [[ -z $source_repo ]]; then
    origin=$(git -C "$repo" remote get-url origin 2>/dev/null) || origin="(none)"
    echo "run: origin $origin is not a URL consumers can fetch: the release records its entrypoint's source as an unpublished local checkout at $commit (--allow-local-source); rebuild it with --source-repo $repo" >&2
    source_flags+=(--define=entrypoint_allow_local_source=1)
    entrypoint_source+=(--allow-local-source)
  else
    echo "run: the release records its entrypoint's source as $source_repo at $commit" >&2
  fi
else
  echo "run: uncommitted changes, so the release does not record a source commit for its entrypoint" >&2
fi
say "bazel build //stacks:incumbent //stacks:candidate_rmsnorm_torch //release:engine"
bazel build //tools/cmd/cacheon //tools/cmd/cacheon-engine //stacks:incumbent //stacks:candidate_rmsnorm_torch //release:engine ${source_flags[@]+"${source_flags[@]}"}
cacheon=$repo/bazel-bin/tools/cmd/cacheon/cacheon_/cacheon
bin=$repo/bazel-bin

# Step 5's build, signing and verification, in the background (see the
# header): the image //release:engine builds on the empty base serves
# nothing by itself; this one carries python3 and torch from pinned Debian
# packages (deploy/base), fetched once into the package cache.
servable_release() {
  chmod -R u+w "$out/rootfs" 2>/dev/null || true
  rm -rf "$out/release" "$out/rootfs" "$out/trust"
  bash tools/servable_release.sh "$cacheon" "$out/release" ${entrypoint_source[@]+"${entrypoint_source[@]}"}
  if [[ ! -f $out/keys/release.key ]]; then
    mkdir -p "$out/keys"
    "$cacheon" release keygen --out "$out/keys/release"
  fi
  "$cacheon" release sign --key "$out/keys/release.key" "$out/release"
  mkdir -p "$out/trust"
  "$cacheon" release verify --key "$out/keys/release.pub" --bundle-out "$out/trust/release.sigstore.json" \
    --rootfs "$out/rootfs" "$out/release"
  cp "$out/keys/release.pub" "$out/trust/release.pub"
}
say "build the servable release on the Debian base, sign it, verify it: in the background, its output shown before serving"
servable_started=$SECONDS
# In its own process group (job control on for this one start), so that a
# job ended early (a refused input, a broken setup, Ctrl-C) ends the whole
# background build with it instead of leaving it writing under out/.
set -m
(set -e; servable_release) >"$out/servable-release.log" 2>&1 &
servable_pid=$!
set +m
trap 'kill -- -"$servable_pid" 2>/dev/null || true' EXIT

bundle=kernels/contributions/silu_and_mul_torch
say "cacheon scan $bundle"
"$cacheon" scan "$bundle"

say "cacheon verify $bundle --device cpu (worker processes, fp32 references)"
"$cacheon" verify "$bundle" --device cpu --dtype float32

say "qualify kernels/contributions/rmsnorm_torch over the incumbent in the ledger (CPU lane): intake, qualify, settle (nothing to crown under the uncalibrated policy, and why)"
rm -rf "$out/ledger"
mkdir -p "$out/ledger"
ledger=$out/ledger/ledger.db
"$cacheon" intake add kernels/contributions/rmsnorm_torch --ledger "$ledger" --hotkey 5DemoMinerHotkey --block 100
tree=$("$cacheon" stack materialize stacks/incumbent.hcl --out "$out/ledger/incumbent" --json | sed -n 's/.*"tree_digest": *"\([0-9a-f]*\)".*/\1/p')
"$cacheon" settle --ledger "$ledger" --init stacks/incumbent.hcl --init-tree "$tree"
# The verdict is the exit status (0 PASS, 2 FAIL, 3 NO_DECISION): on a
# shared CPU any of the three is an honest outcome, so the main job goes on.
set +e
"$cacheon" qualify --ledger "$ledger" --out "$out/ledger/qualification"
verdict=$?
set -e
((verdict == 0 || verdict == 2 || verdict == 3)) || exit "$verdict"
"$cacheon" evidence regrade "$out/ledger/qualification/proposal-1/report-1.json"
# A crown needs two independent passing qualifications (the second a
# reproduction on exchanged lanes) under a calibrated speed policy. This
# ledger runs the embedded default policy, which says it is uncalibrated:
# a speed verdict under it, PASS or FAIL, is noise, so the proposal waits
# in no_decision (qualify exits 3, with no reproduction) and settle exits 0
# saying there is nothing to crown and why (uncalibrated_policy). A FAIL
# of a screen, the audit or quality is a real loss (exit 2) and is
# reported the same way.
"$cacheon" settle --ledger "$ledger"
"$cacheon" ledger check --ledger "$ledger"

say "servable release: its build, signing and verification, started at $servable_started s beside the steps above; the crown loop times the lane, so it waits for it"
# Its output was kept aside so that it does not interleave with theirs.
servable_status=0
wait "$servable_pid" || servable_status=$?
trap - EXIT
cat "$out/servable-release.log" >&2
if ((servable_status != 0)); then
  echo "run: building, signing or verifying the servable release failed (exit $servable_status; its output is above and in $out/servable-release.log)" >&2
  exit "$servable_status"
fi

say "the whole crown loop on the CPU lane, over the demonstration arena (tools/crown_loop.sh)"
# Calibrate this machine's lane, qualify and reproduce a real contribution
# over a deliberately slow incumbent under the policy that calibration
# supports, settle the crown, build the new incumbent, review the crown,
# and build, sign and verify the release that ships it. It never fakes a
# measurement: a lane too noisy to calibrate, or a qualification that does
# not pass, ends the loop there with its evidence.
bash tools/crown_loop.sh "$cacheon" "$out/crown-loop" "$bin/release/tiny_llama.receipt.json"

say "serve from the signed image with no network: the entrypoint verifies, then the engine answers"
echo '{"id": 1, "prompt": [1, 2, 3, 4], "max_new_tokens": 4}' |
  bash tools/run_image.sh "$out/rootfs" "$out/trust" "$bin/release/tiny_llama.model" /cacheon/model \
    /cacheon/bin/cacheon release serve

# The signed release channel (docs/release-engineer-guide.md): a fresh
# channel each run, since this run's image may differ from the last one's
# and a published version names one image forever.
say "publish the release into a signed release channel and verify it against the channel"
for role in channel-root channel-targets channel-online; do
  [[ -f $out/keys/$role.key ]] || "$cacheon" release keygen --out "$out/keys/$role"
done
# The channel is made again each run under the same keys, which a
# consumer that kept state refuses (its versions start again): the job's
# own consumer state lives beside the channel and starts again with it, so
# no run leaves state in the user's cache that the next run's channel
# contradicts.
rm -rf "$out/channel" "$out/channel-state"
"$cacheon" release channel init "$out/channel" --root-key "$out/keys/channel-root.key" \
  --targets-key "$out/keys/channel-targets.key" --online-key "$out/keys/channel-online.key"
"$cacheon" release channel publish "$out/channel" --name cacheon-engine --version 0.1.0 \
  --key "$out/keys/release.pub" --targets-key "$out/keys/channel-targets.key" \
  --online-key "$out/keys/channel-online.key" "$out/release"
"$cacheon" release verify --key "$out/keys/release.pub" --channel "$out/channel" \
  --channel-root "$out/channel/1.root.json" --name cacheon-engine \
  --channel-state "$out/channel-state" "$out/release"

say "done"
cat >&2 <<EOF
  incumbent engine tree   $bin/stacks/incumbent.tree
  incumbent manifest      $bin/stacks/incumbent.manifest.json
  candidate tree and plan $bin/stacks/candidate_rmsnorm_torch.tree, .plan.json
  qualification report    $out/ledger/qualification/proposal-1/report-1.json (and .html)
  settlement ledger       $out/ledger/ledger.db
  crown loop              $out/crown-loop (calibration, ledger, new incumbent, review, signed release, its in-toto layout and links in in-toto/)
  signed release layout   $out/release (servable: Debian base with python3 and torch)
  its root filesystem     $out/rootfs (run it: tools/run_image.sh $out/rootfs $out/trust MODEL /cacheon/model /cacheon/bin/cacheon release serve)
  release public key      $out/keys/release.pub
  release channel         $out/channel (consumers pin $out/channel/1.root.json)
Rebuild it, the entrypoint from source included, and verify it yourself:
  $cacheon release rebuild --key $out/keys/release.pub --source-repo $repo --run-source-build-scripts $out/release
  (--run-source-build-scripts runs the clone's tools/bootstrap.sh and bazel build: docs/consumer-guide.md)
EOF
