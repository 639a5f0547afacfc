# Sourced by the scripts under tools/: the pinned Go toolchain and the cache
# directory. Go's own toolchain switch fetches the pinned version through
# the Go module proxy when the installed go is another version.
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${CACHEON_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cacheon}
want_go=$(sed -n 's/^toolchain go//p' "$repo/go.mod")
export PATH="$PATH:/usr/local/go/bin"
if command -v go >/dev/null && [[ $(go env GOVERSION 2>/dev/null) != "go$want_go" ]]; then
  export GOTOOLCHAIN="go$want_go"
fi
