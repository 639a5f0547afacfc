#!/usr/bin/env bash
# Static checks CI runs: gofmt, go vet, buildifier over every Starlark file,
# and that the generated BUILD files match the Go sources.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
[[ -x .cache/buildifier && -x .cache/gazelle ]] || bash tools/bootstrap.sh test

status=0
echo "lint: gofmt" >&2
unformatted=$(gofmt -l $(git ls-files '*.go'))
if [[ -n $unformatted ]]; then
  echo "lint: these files need gofmt -w:" >&2
  echo "$unformatted" >&2
  status=1
fi

echo "lint: go vet" >&2
go vet ./... || status=1
# The NVML backend builds only with the nvml tag and cgo; vet it too so it
# cannot rot unseen (go-nvml's header marks some NVML calls deprecated).
if command -v gcc >/dev/null; then
  echo "lint: go vet -tags nvml (cgo)" >&2
  CGO_ENABLED=1 CGO_CFLAGS="-O2 -Wno-deprecated-declarations" go vet -tags nvml ./evaluator/lanes/nvml ./tools/cli || status=1
fi

echo "lint: buildifier" >&2
mapfile -t starlark < <(git ls-files 'WORKSPACE' 'MODULE.bazel' '*.bzl' '*BUILD.bazel' 'BUILD')
.cache/buildifier -mode=check -lint=warn "${starlark[@]}" || {
  echo "lint: fix with: .cache/buildifier -lint=fix -mode=fix <files>" >&2
  status=1
}

echo "lint: BUILD files up to date (gazelle)" >&2
if ! bash tools/gazelle.sh -mode=diff >/tmp/gazelle.diff.$$ 2>&1; then
  cat /tmp/gazelle.diff.$$ >&2
  echo "lint: BUILD files are stale; run tools/gazelle.sh" >&2
  status=1
fi
rm -f /tmp/gazelle.diff.$$
exit $status
