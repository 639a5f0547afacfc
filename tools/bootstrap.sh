#!/usr/bin/env bash
# Installs whatever this machine is missing for one purpose, and prints each
# step it takes. Idempotent: when nothing is missing it only checks, in a
# few seconds.
#
#   tools/bootstrap.sh [build|run|test]
#
# Each purpose installs what it needs and nothing more (docs/build.md says
# why each piece exists):
#   build  what `bazel build` needs, and no more: Bazel 4.2.3 and its rule
#          sets from Debian, a prepared copy of the Go SDK, rules_go v0.34.0
#          (with our Go 1.26 patch) and gazelle from the Go module proxy,
#          every external Go module split into Bazel repositories. This is
#          what `cacheon release rebuild --source-repo` runs in the clone it
#          rebuilds (the default).
#   run    build, plus what the main job (tools/run.sh) runs: CPU PyTorch
#          and numpy for the CPU lane's worker processes, jq.
#   test   run, plus what only the tests use: the OCI registry of the
#          release tests, nginx (the remote-cache check's HTTP cache),
#          Chromium (the HTML report tests), libtorch-dev and g++ (the
#          prebuild tests compile torch extensions), the tr_TR locale (the
#          reproducibility check), buildifier (lint), cosign and oras (the
#          consumer guide's commands), and Debian's skopeo, umoci and runc
#          (the consumer guide's layout and run commands).
#
# Environment:
#   CACHEON_CACHE   cache directory (default ${XDG_CACHE_HOME:-$HOME/.cache}/cacheon)
#   CACHEON_NO_APT  set to 1 to skip Debian packages (then they must be present)
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$repo"

purpose=${1:-build}
case $purpose in
build | run | test) ;;
-h | --help)
  sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"
  exit 0
  ;;
*)
  printf 'bootstrap: unknown purpose %q; use build, run or test\n' "$purpose" >&2
  exit 1
  ;;
esac
# wants PURPOSE: whether this run's purpose includes PURPOSE.
wants() {
  case $1 in
  build) return 0 ;;
  run) [[ $purpose == run || $purpose == test ]] ;;
  test) [[ $purpose == test ]] ;;
  esac
}

rules_go_version=v0.34.0
gazelle_version=v0.45.0
buildtools_version=v0.0.0-20260904073137-eaa4d125b423
cosign_version=v3.1.3
oras_version=v1.3.6

say() { printf 'bootstrap (%s): %s\n' "$purpose" "$*" >&2; }
die() { printf 'bootstrap (%s): error: %s\n' "$purpose" "$*" >&2; exit 1; }

# --- 1. Debian packages -----------------------------------------------------
apt_packages=(bazel-bootstrap bazel-skylib bazel-platforms bazel-rules-java patch)
if wants run; then
  # The CPU lane's worker processes import torch and numpy (Debian's
  # python3-torch is the interpreter's /usr/bin/python3); the servable
  # release reads its base's lock with jq.
  apt_packages+=(python3-torch python3-numpy jq)
fi
if wants test; then
  # nginx (built with the WebDAV module) serves Bazel's HTTP cache protocol
  # in tools/remote_cache_check.sh, which starts its own instance; like
  # docker-registry's, the packaged service is not needed. libtorch-dev and
  # g++: the prebuild tests (evaluator/prebuild) compile contributions'
  # declared sources into torch operator libraries, which needs torch's C++
  # headers (python3-torch ships only symbolic links to them) and a C++
  # compiler. chromium: the HTML report tests render pages in a real
  # browser. locales: the reproducibility check builds under tr_TR.UTF-8.
  # skopeo: the release tests address the layout by tag with the
  # distribution's own client, as a consumer would. umoci and runc: the
  # main job check runs the release with the consumer guide's commands,
  # the distribution's packages being what a consumer without Docker has;
  # docker.io: it runs the guide's Docker commands too, in a daemon of its
  # own (tools/docker_guide_check.sh; a Docker service the package starts
  # is not used).
  apt_packages+=(libtorch-dev g++ docker-registry locales nginx chromium skopeo umoci runc docker.io)
fi
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
if wants test && ! locale -a 2>/dev/null | grep -qix 'tr_TR.utf8'; then
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

# The key covers everything that decides which external packages are needed:
# the module graph and the import lists of our own packages.
key=$( {
  cat go.mod go.sum tools/bazel/godeps.version
  go list -e -f '{{.ImportPath}}: {{join .Imports " "}} {{join .TestImports " "}} {{join .XTestImports " "}}' ./...
} | sha256sum | cut -c1-64)
# They are kept in the cache directory under that key and linked, so a
# fresh clone (CI, the reproducibility check's clones, a rebuild from
# source) reuses them instead of generating 175 MB again; entries unused
# for two weeks are removed.
godeps="$cache/godeps-$key"
if [[ ! -f $godeps/.key ]]; then
  say "generating Bazel repositories for external Go modules"
  tmp=$(mktemp -d "$cache/godeps-tmp.XXXXXX")
  go run ./tools/cmd/bazeldeps -gazelle "$gazelle" -out "$tmp" -linked .cache/godeps
  echo "$key" >"$tmp/.key"
  # Another bootstrap may have finished the same key meanwhile: keep one.
  mv -T "$tmp" "$godeps" 2>/dev/null || rm -rf "$tmp"
else
  say "external Go module repositories up to date"
fi
touch "$godeps"
[[ -L .cache/godeps || ! -e .cache/godeps ]] || rm -rf .cache/godeps # a directory of an older bootstrap
ln -sfn "$godeps" .cache/godeps
find "$cache" -maxdepth 1 \( -name 'godeps-*' ! -name 'godeps-tmp.*' -mtime +14 \) -exec rm -rf {} + 2>/dev/null || true
# --- 5. Test-only tools -------------------------------------------------------
if ! wants test; then
  say "ready for $purpose"
  exit 0
fi
buildifier=$(go_tool buildifier github.com/bazelbuild/buildtools/buildifier "$buildtools_version")
ln -sfn "$buildifier" .cache/buildifier
# The consumer guide's commands run in the tests with the tools a consumer
# has: cosign verifies the signature and the SLSA and SPDX attestations, oras
# pulls the attached files. Built once from the Go module proxy (cosign takes
# a few minutes the first time); tools/test.sh puts .cache/tools/bin on PATH.
cosign=$(go_tool cosign github.com/sigstore/cosign/v3/cmd/cosign "$cosign_version")
oras=$(go_tool oras oras.land/oras/cmd/oras "$oras_version")
mkdir -p .cache/tools/bin
ln -sfn "$cosign" .cache/tools/bin/cosign
ln -sfn "$oras" .cache/tools/bin/oras
say "ready for $purpose"
