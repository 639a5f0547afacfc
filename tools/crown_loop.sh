#!/usr/bin/env bash
# The crown loop on the CPU lane, from a miner's bundle to a signed
# release that ships it, over the demonstration arena (stacks/demo.hcl):
#
#   1. calibrate this machine's CPU lane (stock against stock) and write
#      the speed policy its noise supports; lanes too noisy for any policy
#      end the loop here, honestly, with the calibration as the evidence;
#   2. intake kernels/contributions/rmsnorm_torch into a SQLite ledger,
#      qualify it and its reproduction on exchanged lanes under that policy;
#   3. settle: two independent passes crown it (or settle says why not);
#   4. export the new evaluation incumbent and materialize it;
#   5. integration review of the crown at this repository's HEAD commit,
#      the release stack gains the reviewed contribution;
#   6. build, sign and verify the release that ships it;
#   7. its chain of custody: the owner's in-toto layout and each step's
#      signed link (two validators, reviewer, builder, release key), made
#      from what the loop ran, in OUT/in-toto, attached to the release
#      and verified from the release alone.
#
# The demonstration incumbent's norm.rmsnorm is correct and deliberately
# slow (kernels/demo/rmsnorm_slow): a shared CPU cannot resolve the small
# speed differences real kernels make, and the loop must never fake a
# measurement. Every step prints the identity it produced. Everything is
# written under OUT; the repository's own stacks are never touched (the
# crown rewrites a copy of the workspace under OUT/workspace).
#
# usage: tools/crown_loop.sh CACHEON OUT [MODEL_RECEIPT]
#   CACHEON        the cacheon binary
#   OUT            the directory to write (replaced)
#   MODEL_RECEIPT  the sealed model receipt the release serves (default:
#                  Bazel's //release:tiny_llama receipt)
set -euo pipefail
cacheon=$1
out=$2
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
receipt=${3:-$repo/bazel-bin/release/tiny_llama.receipt.json}
say() { printf '\n== crown loop: %s\n' "$*" >&2; }
field() { sed -n "s/.*\"$1\": *\"\([^\"]*\)\".*/\1/p" | head -1; }

rm -rf "$out"
ws=$out/workspace
mkdir -p "$ws"
cp -R "$repo/MODULE.bazel" "$repo/catalog" "$repo/stacks" "$repo/kernels" "$ws/"
find "$ws" -name __pycache__ -prune -exec rm -rf {} +

say "1/7 calibrate the CPU lane: 3 stock-versus-stock rounds of the demonstration incumbent"
"$cacheon" qualify calibrate --rounds 3 --workspace "$ws" --incumbent "$ws/stacks/demo.hcl" \
  --reference "$ws/stacks/reference.hcl" --out "$out/calibration.json" --policy-out "$out/policy.hcl"
if [[ ! -f $out/policy.hcl ]]; then
  cat >&2 <<EOF
The stock engines disagreed with each other by more than any speed policy
can cover (a margin of twice the disagreement must stay under 0.9), so
nothing can be crowned honestly on this machine now: a busy or shared CPU
makes every engine's speed noise. The measurement is the evidence:
  $out/calibration.json
Run again on a quieter machine; settlement/evaluate's crown test and
tools/cli's crown-to-release test cover the rest of the loop.
EOF
  exit 0
fi

say "2/7 intake, then qualify and reproduce under the calibrated policy"
ledger=$out/ledger.db
# The proposal competes in the stack's arena (settlement pairs within one).
arena=$("$cacheon" digest --domain cacheon.arena.descriptor "$ws/stacks/arena.json")
"$cacheon" intake add "$ws/kernels/contributions/rmsnorm_torch" --ledger "$ledger" --arena "$arena" \
  --hotkey 5DemoMinerHotkey --block 100
tree=$("$cacheon" stack materialize "$ws/stacks/demo.hcl" --workspace "$ws" --out "$out/demo-incumbent" --json | field tree_digest)
"$cacheon" settle --ledger "$ledger" --workspace "$ws" --init "$ws/stacks/demo.hcl" --init-tree "$tree"
set +e
"$cacheon" qualify --ledger "$ledger" --incumbent "$ws/stacks/demo.hcl" --policy "$out/policy.hcl" --workspace "$ws" \
  --reference "$ws/stacks/reference.hcl" --out "$out/qualification"
verdict=$?
set -e
((verdict == 0 || verdict == 2 || verdict == 3)) || exit "$verdict"

say "3/7 settle"
"$cacheon" settle --ledger "$ledger" --workspace "$ws" --json >"$out/settle.json"
# Each event's type appears twice in the document (the event and its body).
events=$(sed -n 's/.*"event_type": *"\([A-Z_]*\)".*/\1/p' "$out/settle.json" | uniq | tr '\n' ' ')
echo "settlement events: ${events:-none}" >&2
"$cacheon" ledger check --ledger "$ledger"
if [[ " $events" != *" CROWN "* ]]; then
  cat "$out/settle.json" >&2
  cat >&2 <<EOF
Nothing was crowned: the qualifications are the evidence (a FAIL or a
NO_DECISION on a loaded CPU is an honest outcome). Reports:
  $out/qualification
EOF
  exit 0
fi

say "4/7 the new evaluation incumbent"
"$cacheon" stack export --ledger "$ledger" --workspace "$ws"
"$cacheon" stack materialize "$ws/stacks/incumbent.hcl" --workspace "$ws" --out "$out/new-incumbent"

say "5/7 integration review of the crown, and the release stack that ships it"
commit=$(git -C "$repo" rev-parse HEAD)
mkdir -p "$out/review-evidence"
ev=$out/review-evidence
printf '{"license": "Apache-2.0", "file": "LICENSE", "sha256": "%s"}\n' "$(sha256sum "$repo/LICENSE" | cut -c1-64)" >"$ev/license.json"
printf '{"repository": "%s", "commit": "%s", "path": "kernels/contributions/rmsnorm_torch"}\n' "$repo" "$commit" >"$ev/provenance.json"
"$cacheon" scan "$ws/kernels/contributions/rmsnorm_torch" --json >"$ev/security.json"
"$cacheon" verify "$ws/kernels/contributions/rmsnorm_torch" --device cpu --dtype float32 --json >"$ev/tests.json"
printf '{"qualification_reports": "%s"}\n' "$out/qualification" >"$ev/compat.json"
"$cacheon" release review --ledger "$ledger" --target norm.rmsnorm \
  --repo "$repo" --commit "$commit" --path kernels/contributions/rmsnorm_torch \
  --evidence license_evidence="$ev/license.json" --evidence provenance_evidence="$ev/provenance.json" \
  --evidence security_review="$ev/security.json" --evidence compatibility_evidence="$ev/compat.json" \
  --evidence test_evidence="$ev/tests.json" --reviewer "Demo Reviewer <reviewer@example.com>" --out "$out/review.json" \
  --json >"$out/review-result.json"
attribution=$(field attribution_digest <"$out/review.json")
record=$(field record_digest <"$out/review-result.json")
echo "record $out/review.json ($record), attribution $attribution" >&2
# The release stack gains the reviewed contribution: one block, the
# record's attribution and digest.
sed '$d' "$ws/stacks/release.hcl" >"$ws/stacks/release.hcl.new"
cat >>"$ws/stacks/release.hcl.new" <<EOF

  contribution "norm.rmsnorm" {
    source                    = "//kernels/contributions:rmsnorm_torch"
    attribution_digest        = "$attribution"
    integration_record_digest = "$record"
  }
}
EOF
mv "$ws/stacks/release.hcl.new" "$ws/stacks/release.hcl"

say "6/7 build, sign and verify the release that ships it"
"$cacheon" stack materialize "$ws/stacks/release.hcl" --workspace "$ws" --out "$out/release-tree" \
  --manifest-out "$out/release-manifest.json" --integration-record "$out/review.json"
"$cacheon" release build --engine-tree "$out/release-tree" --release-manifest "$out/release-manifest.json" \
  --review "$out/review.json" --substrate "$ws/kernels/substrate" --model-receipt "$receipt" \
  --entrypoint "$cacheon" --name cacheon-engine:0.1.0-demo --source-date-epoch 0 --out "$out/release"
mkdir -p "$out/keys"
"$cacheon" release keygen --out "$out/keys/release"
"$cacheon" release sign --key "$out/keys/release.key" "$out/release"
"$cacheon" release verify --key "$out/keys/release.pub" "$out/release"

say "7/7 the chain of custody: the owner's in-toto layout and each step's signed link"
bash "$repo/tools/custody_chain.sh" "$cacheon" "$out"
