#!/usr/bin/env bash
# The chain of custody of a signed crowned release, as the crown loop
# (tools/crown_loop.sh) ships it: each functionary's key, the owner's
# in-toto layout and every step's signed link, made from what ran, then
# the release verified against them (docs/consumer-guide.md, "Check the
# chain of custody"). The chain is attached to the release, so whoever
# pulls or mirrors it gets it, and is also left in in-toto/.
#
# usage: tools/custody_chain.sh CACHEON DIR
#   DIR holds release/ (the signed OCI layout), keys/release.key and .pub
#   (its release key) and qualification/proposal-*/report-*.json (the
#   reports cacheon qualify --ledger wrote). Writes keys/owner,
#   keys/validator-a, keys/validator-b, keys/reviewer and keys/builder
#   (.key and .pub), and in-toto/root.layout and in-toto/links/ (replaced),
#   and attaches the layout and the links to release/ (which must not carry
#   a chain yet: attach-custody refuses a second).
#
# Each functionary has its own key, as in a deployment: the owner signs
# the layout; validators a and b sign the qualify links; the reviewer the
# review link; the builder the materialize and build links; the release
# key the sign link. The qualify and review links name the passing
# reports of the qualifications the crown rests on (release link refuses
# fewer than two).
set -euo pipefail
cacheon=$1
dir=$2
t=$SECONDS
for role in owner validator-a validator-b reviewer builder; do
  rm -f "$dir/keys/$role.key" "$dir/keys/$role.pub"
  "$cacheon" release keygen --out "$dir/keys/$role" >/dev/null
done
reports=()
for r in "$dir"/qualification/proposal-*/report-*.json; do
  if [[ -f $r && $(jq -r .decision "$r") == PASS ]]; then reports+=(--report "$r"); fi
done
chain=$dir/in-toto
rm -rf "$chain"
mkdir -p "$chain/links"
"$cacheon" release layout --owner-key "$dir/keys/owner.key" \
  --qualify "$dir/keys/validator-a.pub" --qualify "$dir/keys/validator-b.pub" --review "$dir/keys/reviewer.pub" \
  --materialize "$dir/keys/builder.pub" --build "$dir/keys/builder.pub" --sign "$dir/keys/release.pub" \
  --expires "$(date -u -d '+365 days' +%Y-%m-%dT%H:%M:%SZ)" --out "$chain/root.layout" >/dev/null
link() { "$cacheon" release link --trust "$dir/keys/release.pub" --out "$chain/links" "$@" "$dir/release" >/dev/null; }
link --step qualify --key "$dir/keys/validator-a.key" ${reports[@]+"${reports[@]}"}
link --step qualify --key "$dir/keys/validator-b.key" ${reports[@]+"${reports[@]}"}
link --step review --key "$dir/keys/reviewer.key" ${reports[@]+"${reports[@]}"}
link --step materialize --key "$dir/keys/builder.key"
link --step build --key "$dir/keys/builder.key"
link --step sign --key "$dir/keys/release.key"
# The chain travels with the release: attach-custody checks it against
# the release, then attaches the layout and every link as referrers of
# its image; the release alone then verifies against it.
"$cacheon" release attach-custody --key "$dir/keys/release.pub" --layout "$chain/root.layout" \
  --layout-key "$dir/keys/owner.pub" --links "$chain/links" "$dir/release" >/dev/null
"$cacheon" release verify --key "$dir/keys/release.pub" --layout-key "$dir/keys/owner.pub" "$dir/release" | grep in-toto-layout
echo "chain of custody: $chain ($((${#reports[@]} / 2)) qualification reports, $(find "$chain/links" -name '*.link' | wc -l) links) in $((SECONDS - t)) s" >&2
