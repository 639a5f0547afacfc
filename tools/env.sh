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

# entrypoint_source_url DIR prints the URL consumers clone DIR's commits
# from, read from its origin remote, or nothing when it has no origin or
# the origin is local (a path or a file:// URL, which no consumer can
# fetch). It mirrors what `cacheon release build --entrypoint-source-repo`
# accepts, which checks and normalizes it again and has the last word. A
# user name or token in an http(s) URL (a CI checkout's) is dropped: the
# release publishes the URL in signed documents.
entrypoint_source_url() {
  local url lower
  url=$(git -C "$1" remote get-url origin 2>/dev/null) || return 0
  url=$(sed -E 's#^([Hh][Tt][Tt][Pp][Ss]?://)[^/@]*@#\1#' <<<"$url")
  lower=${url,,}
  # scheme://... is a URL (file:// among them); otherwise a colon with
  # no slash before it is the scp-like [user@]host:path, as git reads it.
  if [[ $lower =~ ^(https?|ssh|git|git\+ssh|ssh\+git):// ]] ||
    [[ $url != *://* && $url =~ ^([A-Za-z0-9._~-]+@)?[A-Za-z0-9.-]+:. && $url != *::* ]]; then
    printf '%s\n' "$url"
  fi
}
