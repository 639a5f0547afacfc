#!/usr/bin/env bash
# Installs whatever this machine is missing to build and test Cacheon Engine
# offline with Bazel, and prints each step it takes. Idempotent: when
# nothing is missing it only checks, in a few seconds.
#
# What it prepares (docs/build.md explains why each piece exists):
#   1. Debian packages: Bazel 4.2.3 and its rule sets, CPU PyTorch for the
#      CPU lane and tests, the OCI registry used by release tests, nginx
#      as the HTTP remote cache of tools/remote_cache_check.sh.
#   2. A prepared copy of the Go SDK (standard library archives installed,
#      tools rules_go 0.34 expects) in the cache directory.
#   3. rules_go v0.34.0 from the Go module proxy, with our Go 1.26 patch.
#   4. Every external Go module the code imports, split into one Bazel
#      repository per module with generated BUILD files.
#   5. cosign and oras, the stock tools the consumer guide's tests run.
#
# Environment:
#   CACHEON_CACHE   cache directory (default ${XDG_CACHE_HOME:-$HOME/.cache}/cacheon)
#   CACHEON_NO_APT  set to 1 to skip Debian packages (then they must be present)
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$repo"

rules_go_version=v0.34.0
gazelle_version=v0.45.0
buildtools_version=v0.0.0-20260904073137-eaa4d125b423
cosign_version=v3.1.3
oras_version=v1.3.6

say() { printf 'bootstrap: %s\n' "$*" >&2; }
die() { printf 'bootstrap: error: %s\n' "$*" >&2; exit 1; }

# --- 1. Debian packages -----------------------------------------------------
# nginx (built with the WebDAV module) serves Bazel's HTTP cache protocol in
# tools/remote_cache_check.sh, which starts its own instance; like
# docker-registry's, the packaged service is not needed.
# libtorch-dev and g++: the prebuild (evaluator/prebuild) compiles
# contributions' declared sources into torch operator libraries, which needs
# torch's C++ headers (python3-torch ships only symbolic links to them) and
# a C++ compiler.
apt_packages=(bazel-bootstrap bazel-skylib bazel-platforms bazel-rules-java
  python3-torch python3-numpy libtorch-dev g++ docker-registry patch locales nginx jq
  chromium) # chromium: the HTML report tests render pages in a real browser
missing=()
for p in "${apt_packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
if ((${#missing[@]})); then
  [[ ${CACHEON_NO_APT:-0} == 1 ]] && die "missing Debian packages: ${missing[*]}"
  sudo=""
  [[ $(id -u) == 0 ]] || sudo=sudo
  say "installing Debian packages: ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  say "Debian packages present"
fi

# The reproducibility check builds once under a Turkish locale, whose dotless
# i breaks naive case folding.
if ! locale -a 2>/dev/null | grep -qix 'tr_TR.utf8'; then
  say "generating the tr_TR.UTF-8 locale"
  sudo=""
  [[ $(id -u) == 0 ]] || sudo=sudo
  $sudo localedef -i tr_TR -f UTF-8 tr_TR.UTF-8
fi

# --- Go ----------------------------------------------------------------------
command -v go >/dev/null || die "Go is not installed; install Go 1.21 or newer (go.mod pins go${want_go}, which Go then fetches itself)"
have_go=$(go env GOVERSION)
[[ $have_go == "go$want_go" ]] || die "Go is $have_go but go.mod pins go$want_go: the toolchain is part of the release identity"
say "Go $have_go"
mkdir -p "$cache" .cache

# --- 2. Prepared Go SDK --------------------------------------------------------
sdk="$cache/go-sdk-$want_go"
if [[ ! -f $sdk/.prepared ]]; then
  say "preparing the Go SDK for rules_go in $sdk (about a minute)"
  rm -rf "$sdk.tmp"
  cp -a "$(go env GOROOT)" "$sdk.tmp"
  chmod -R u+w "$sdk.tmp"
  (
    cd "$sdk.tmp"
    # rules_go 0.34 links against precompiled standard library archives,
    # which Go stopped shipping in 1.20.
    GOROOT="$sdk.tmp" GODEBUG=installgoroot=all GOTOOLCHAIN=local ./bin/go install std
    # Tools rules_go calls that the distribution no longer ships prebuilt.
    for t in pack nm objdump addr2line buildid; do
      GOROOT="$sdk.tmp" GOTOOLCHAIN=local ./bin/go build -o "pkg/tool/linux_amd64/$t" "cmd/$t"
    done
  )
  touch "$sdk.tmp/.prepared"
  rm -rf "$sdk"
  mv "$sdk.tmp" "$sdk"
else
  say "Go SDK prepared ($sdk)"
fi
ln -sfn "$sdk" .cache/go-sdk

# --- 3. rules_go ------------------------------------------------------------------
patch_file=tools/bazel/rules_go-$rules_go_version-go1.26.patch
patch_sum=$(sha256sum "$patch_file" | cut -c1-12)
rules_go="$cache/rules_go-$rules_go_version-$patch_sum"
if [[ ! -f $rules_go/.prepared ]]; then
  say "fetching rules_go $rules_go_version from the Go module proxy and patching it for Go 1.26"
  src=$(go mod download -json "github.com/bazelbuild/rules_go@$rules_go_version" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
  [[ -d $src ]] || die "could not download rules_go $rules_go_version"
  rm -rf "$rules_go.tmp"
  cp -r "$src" "$rules_go.tmp"
  chmod -R u+w "$rules_go.tmp"
  patch -s -p1 -d "$rules_go.tmp" <"$patch_file"
  touch "$rules_go.tmp/.prepared"
  rm -rf "$rules_go"
  mv "$rules_go.tmp" "$rules_go"
else
  say "rules_go prepared ($rules_go)"
fi
ln -sfn "$rules_go" .cache/rules_go

# --- 4. External Go modules as Bazel repositories -------------------------------
# go_tool NAME PACKAGE VERSION builds a pinned Go tool from the Go module
# proxy once, into the cache, and prints its path.
go_tool() {
  local name=$1 pkg=$2 version=$3
  local bin="$cache/bin/$name-$version"
  if [[ ! -x $bin ]]; then
    say "building $name $version"
    mkdir -p "$cache/bin"
    local tmpbin
    tmpbin=$(mktemp -d)
    GOBIN="$tmpbin" go install "$pkg@$version"
    mv "$tmpbin/$name" "$bin"
    rmdir "$tmpbin"
  fi
  printf '%s\n' "$bin"
}
gazelle=$(go_tool gazelle github.com/bazelbuild/bazel-gazelle/cmd/gazelle "$gazelle_version")
ln -sfn "$gazelle" .cache/gazelle
buildifier=$(go_tool buildifier github.com/bazelbuild/buildtools/buildifier "$buildtools_version")
ln -sfn "$buildifier" .cache/buildifier

# The key covers everything that decides which external packages are needed:
# the module graph and the import lists of our own packages.
key=$( {
  cat go.mod go.sum tools/bazel/godeps.version
  go list -e -f '{{.ImportPath}}: {{join .Imports " "}} {{join .TestImports " "}} {{join .XTestImports " "}}' ./...
} | sha256sum | cut -c1-64)
if [[ $(cat .cache/godeps/.key 2>/dev/null) != "$key" ]]; then
  say "generating Bazel repositories for external Go modules"
  go run ./tools/cmd/bazeldeps -gazelle "$gazelle" -out .cache/godeps
  echo "$key" >.cache/godeps/.key
else
  say "external Go module repositories up to date"
fi
# --- 5. Stock consumer tools -------------------------------------------------
# The consumer guide's commands run in the tests with the tools a consumer
# has: cosign verifies the signature and the SLSA and SPDX attestations, oras
# pulls the attached files. Built once from the Go module proxy (cosign takes
# a few minutes the first time); tools/test.sh puts .cache/tools/bin on PATH.
cosign=$(go_tool cosign github.com/sigstore/cosign/v3/cmd/cosign "$cosign_version")
oras=$(go_tool oras oras.land/oras/cmd/oras "$oras_version")
mkdir -p .cache/tools/bin
ln -sfn "$cosign" .cache/tools/bin/cosign
ln -sfn "$oras" .cache/tools/bin/oras
say "ready"
