#!/usr/bin/env bash
# The servable image, for real: build the release on the Debian base
# (tools/servable_release.sh), sign it, verify it and unpack the verified
# image (cacheon release verify --rootfs), then run its entrypoint from
# the unpacked root filesystem with no network (tools/run_image.sh), the
# sealed test model and the trust material mounted read-only, and ask it
# for tokens. The fail-closed entrypoint must verify before it serves,
# and must refuse to start under another key.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$repo"
say() { printf 'servable: %s\n' "$*" >&2; }

bazel build //tools/cmd/cacheon //release:engine
work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
cp bazel-bin/tools/cmd/cacheon/cacheon_/cacheon "$work/cacheon"
cacheon=$work/cacheon

start=$SECONDS
bash tools/servable_release.sh "$cacheon" "$work/release"
say "built in $((SECONDS - start)) s"
"$cacheon" release keygen --out "$work/key" >/dev/null
"$cacheon" release sign --key "$work/key.key" "$work/release" >/dev/null
mkdir "$work/trust"
start=$SECONDS
"$cacheon" release verify --key "$work/key.pub" --bundle-out "$work/trust/release.sigstore.json" \
  --rootfs "$work/rootfs" "$work/release"
cp "$work/key.pub" "$work/trust/release.pub"
say "verified and unpacked in $((SECONDS - start)) s"

# The consumer guide's offline cosign check of the same release: the
# provenance bundle that verified, against the image manifest.
if command -v cosign >/dev/null; then
  img=$(jq -r '.manifests[] | select(.annotations["org.opencontainers.image.ref.name"] != null) | .digest' "$work/release/index.json")
  cosign verify-blob-attestation --key "$work/key.pub" --bundle "$work/trust/release.sigstore.json" \
    --insecure-ignore-tlog --type slsaprovenance1 "$work/release/blobs/sha256/${img#sha256:}"
  say "cosign verified the provenance of $img"
elif [[ ${CACHEON_REQUIRE_STOCK_TOOLS:-0} == 1 ]]; then
  say "FAIL: cosign is not on PATH (tools/bootstrap.sh builds it)"
  exit 1
else
  say "cosign is not on PATH: skipping its check (tools/bootstrap.sh builds it)"
fi

model=bazel-bin/release/tiny_llama.model
# Inside the sandbox only loopback exists.
ifaces=$(bash tools/run_image.sh "$work/rootfs" "$work/trust" "$model" /cacheon/model \
  /usr/bin/python3 -c 'import socket; print(" ".join(n for _, n in socket.if_nameindex()))')
[[ $ifaces == lo ]] || { say "FAIL: the sandbox has network interfaces: $ifaces"; exit 1; }

start=$SECONDS
echo '{"id": 1, "prompt": [1, 2, 3, 4], "max_new_tokens": 4}' |
  bash tools/run_image.sh "$work/rootfs" "$work/trust" "$model" /cacheon/model \
    /cacheon/bin/cacheon release serve >"$work/serve.out" 2>"$work/serve.err" || {
  cat "$work/serve.err" >&2
  say "FAIL: the image did not serve"
  exit 1
}
cat "$work/serve.err" >&2
jq -e -s 'length == 2 and .[0].ready == true and .[0].device == "cpu" and .[1].id == 1 and (.[1].tokens | length == 1 and (.[0] | length == 5))' \
  "$work/serve.out" >/dev/null || {
  cat "$work/serve.out" >&2
  say "FAIL: want a ready line on the CPU, then one prompt with 5 tokens"
  exit 1
}
say "served with no network in $((SECONDS - start)) s: $(tail -1 "$work/serve.out")"

# Under another key the entrypoint refuses to start: exit 2, no tokens.
"$cacheon" release keygen --out "$work/other" >/dev/null
cp "$work/other.pub" "$work/trust/release.pub"
set +e
echo '{"id": 2, "prompt": [1], "max_new_tokens": 1}' |
  bash tools/run_image.sh "$work/rootfs" "$work/trust" "$model" /cacheon/model \
    /cacheon/bin/cacheon release serve >"$work/refused.out" 2>"$work/refused.err"
status=$?
set -e
if ((status != 2)) || [[ -s $work/refused.out ]]; then
  cat "$work/refused.out" "$work/refused.err" >&2
  say "FAIL: under another key the entrypoint exited $status (want 2, with nothing served)"
  exit 1
fi
say "refused under another key: $(tail -1 "$work/refused.err")"
say PASS
