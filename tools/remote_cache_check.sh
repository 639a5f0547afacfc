#!/usr/bin/env bash
# Proves that Cacheon's builds share a Bazel remote cache across machines,
# and that every action passes Bazel's strictest local sandbox.
#
#   tools/remote_cache_check.sh [--no-repro] TARGET...
#
# With CACHEON_REPRO_REFERENCE=DIR (tools/test.sh sets it), DIR holds the
# outputs of a build of TARGET... already made in this checkout (bazel-bin/...
# paths as Bazel reports them), and the fill build below is the one cold
# build of the reproducibility check: in another clone, output root,
# umask, time zone and locale, compared byte for byte with DIR. CI then pays
# for one cold build, not two.
#
# 1. Starts a real HTTP cache on 127.0.0.1: Debian's nginx, storing what
#    Bazel PUTs (WebDAV) under a temporary directory and serving it back.
#    Both builds below use .bazelrc's --config=remote-cache, as users do.
# 2. Fill: builds the targets from scratch in one clone, every action in
#    the Linux namespace sandbox with no network and a strict environment,
#    never reading a cache, and uploads every result. By default this is the
#    first build of tools/repro_check.sh (so CI pays for no extra cold
#    build, and the reproducibility check runs in full); with
#    CACHEON_REPRO_REFERENCE it is the reproducibility check's cold build
#    itself; --no-repro builds it here without a comparison.
# 3. Hit: builds the same targets in a second clone in another directory,
#    Bazel output root, umask, time zone and locale, with only the remote
#    cache to read from (no disk cache).
# 4. Passes when the fill build's execution log shows every spawn run in
#    linux-sandbox, remotable, cacheable and not a cache hit; the hit
#    build's execution log shows every spawn a remote cache hit (the first
#    one that is not is named); the server logged the uploads and the
#    downloads; and the two builds' outputs are byte-identical.
#
# Ends with "remote-cache: PASS ..." or "remote-cache: FAIL ...".
# CACHEON_KEEP_WORK=1 keeps the clones, logs and cache for a post-mortem.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$repo"
with_repro=1
if [[ ${1:-} == --no-repro ]]; then
  with_repro=0
  shift
fi
(($#)) || { echo "usage: tools/remote_cache_check.sh [--no-repro] TARGET..." >&2; exit 1; }
targets=("$@")

say() { printf 'remote-cache: %s\n' "$*" >&2; }
fail() {
  say "FAIL: $*"
  echo "remote-cache: FAIL"
  exit 1
}
python=/usr/bin/python3 # Debian's, a dependency of python3-torch (bootstrap)
command -v nginx >/dev/null || fail "nginx is not installed (tools/bootstrap.sh installs it)"

work=$(mktemp -d "${TMPDIR:-/tmp}/cacheon-remote-cache.XXXXXX")
nginx_pid=
cleanup() {
  if [[ -n $nginx_pid ]]; then
    kill "$nginx_pid" 2>/dev/null || true
    wait "$nginx_pid" 2>/dev/null || true
  fi
  if [[ -n ${CACHEON_KEEP_WORK:-} ]]; then
    say "kept $work"
    return
  fi
  chmod -R u+w "$work" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
start=$SECONDS

# --- 1. The cache server -----------------------------------------------------
# One nginx process (no master, no daemon), so this script owns exactly one
# pid; everything it writes stays under $work/cache.
srv="$work/cache"
mkdir -p "$srv/store" "$srv/tmp"
start_server() {
  local port
  port=$("$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  cat >"$srv/nginx.conf" <<EOF
daemon off;
master_process off;
pid $srv/nginx.pid;
error_log $srv/error.log warn;
events { worker_connections 512; }
http {
  log_format cache '\$request_method \$uri \$status \$body_bytes_sent \$request_length';
  access_log $srv/access.log cache;
  client_body_temp_path $srv/tmp/body;
  proxy_temp_path $srv/tmp/proxy;
  fastcgi_temp_path $srv/tmp/fastcgi;
  uwsgi_temp_path $srv/tmp/uwsgi;
  scgi_temp_path $srv/tmp/scgi;
  # Bazel uploads whole outputs: the Go standard library archives and the
  # release image layers are tens of megabytes.
  client_max_body_size 0;
  server {
    listen 127.0.0.1:$port;
    root $srv/store;
    # Bazel's HTTP cache protocol: GET and PUT of /ac/<sha256> (action
    # results) and /cas/<sha256> (blobs).
    location / {
      dav_methods PUT;
      create_full_put_path on;
      dav_access user:rw;
    }
  }
}
EOF
  nginx -p "$srv" -e "$srv/error.log" -c "$srv/nginx.conf" &
  nginx_pid=$!
  # A real round trip before any build relies on it.
  if "$python" - "$port" <<'EOF'; then
import sys, time, urllib.request
url = "http://127.0.0.1:%s/cas/probe" % sys.argv[1]
for _ in range(50):
    try:
        urllib.request.urlopen(urllib.request.Request(url, data=b"probe", method="PUT"), timeout=2)
        assert urllib.request.urlopen(url, timeout=2).read() == b"probe"
        sys.exit(0)
    except (OSError, AssertionError):
        time.sleep(0.1)
sys.exit(1)
EOF
    url="http://127.0.0.1:$port"
    rm -f "$srv/store/cas/probe"
    : >"$srv/access.log"
    return 0
  fi
  kill "$nginx_pid" 2>/dev/null || true
  wait "$nginx_pid" 2>/dev/null || true
  nginx_pid=
  return 1
}
ok=0
for attempt in 1 2 3; do
  if start_server; then ok=1; break; fi
  say "the cache server did not answer (attempt $attempt); $(tail -n 3 "$srv/error.log" 2>/dev/null)"
done
((ok)) || fail "could not start nginx as an HTTP cache"
say "nginx $(nginx -v 2>&1 | sed 's/.*\///') serving a Bazel HTTP cache at $url (pid $nginx_pid)"

# --- 2. Fill: a cold build in the strictest local sandbox, uploading -----------
# linux-sandbox, not "sandboxed": the alias quietly falls back to the
# process-wrapper sandbox where namespaces are missing. No fallback to
# unsandboxed execution either. /etc/bazel/bazelrc (Debian) turns on
# --sandbox_debug, which would print the sandbox's debug log into every
# action's output and keep every sandbox; off here.
fill_log="$work/fill.exec.json"
fill_flags=(
  --spawn_strategy=linux-sandbox
  --noincompatible_legacy_local_fallback
  --incompatible_strict_action_env
  --sandbox_default_allow_network=false
  --sandbox_fake_hostname
  --sandbox_fake_username
  --nosandbox_debug
  --config=remote-cache
  "--remote_cache=$url"
  --remote_upload_local_results
  --noremote_accept_cached
  "--execution_log_json_file=$fill_log"
)
jvm_locale=(--host_jvm_args=-Duser.language=en --host_jvm_args=-Duser.country=US)
snapshot() {
  git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf "$work/sources.tar"
}
# Outputs Bazel reports for the targets, copied from the clone into $2.
collect() { # bazel-log dest-dir
  LC_ALL=C sed -n 's/^  \(bazel-[a-z]*\/.*\)$/\1/p' "$1" | while read -r f; do
    mkdir -p "$2/$(dirname "$f")"
    cp -rL "$f" "$2/$f"
  done
}
# One build in its own clone and Bazel output root.
build() { # name umask tz locale flags-array-name
  local name=$1 mask=$2 tz=$3 locale=$4
  local -n flags=$5
  local dir="$work/$name/checkout" root="$work/$name/bazel-root" log="$work/$name.log"
  mkdir -p "$dir"
  tar -xf "$work/sources.tar" -C "$dir"
  (
    cd "$dir"
    umask "$mask"
    export TZ="$tz" LANG="$locale" LC_ALL="$locale"
    bash tools/bootstrap.sh build >/dev/null 2>&1
    local t=$SECONDS
    bazel "${jvm_locale[@]}" --output_user_root="$root" build --disk_cache= --show_result=1000 \
      "${flags[@]}" "${targets[@]}" >"$log" 2>&1 || { cat "$log" >&2; exit 1; }
    say "build $name took $((SECONDS - t)) s: $(grep -E '^INFO: [0-9]+ processes' "$log" || true)"
    collect "$log" "$work/$name/out"
    bazel "${jvm_locale[@]}" --output_user_root="$root" shutdown >/dev/null 2>&1 || true
  )
}
snapshot
locale_b=POSIX
if locale -a 2>/dev/null | grep -qix 'tr_TR.utf8'; then locale_b=tr_TR.UTF-8; fi
manifest() { (cd "$1" && find . -type f -print0 | sort -z | xargs -0 sha256sum); }
if [[ -n ${CACHEON_REPRO_REFERENCE:-} ]]; then
  ref=$CACHEON_REPRO_REFERENCE
  n_ref=$(find "$ref" -type f 2>/dev/null | wc -l)
  ((n_ref > 0)) || fail "the reference build's outputs ($ref) hold no file"
  say "fill: cold build in another clone (umask 077, TZ=Pacific/Chatham, LANG=$locale_b) in linux-sandbox, uploading"
  build fill 077 Pacific/Chatham "$locale_b" fill_flags || fail "the fill build failed"
  if ! diff <(manifest "$ref") <(manifest "$work/fill/out") >"$work/repro.diff"; then
    cat "$work/repro.diff" >&2
    fail "reproducibility: outputs differ between this checkout's build and the cold build"
  fi
  say "reproducibility: ${targets[*]}: $n_ref output files byte-identical across this checkout's build and the cold build"
elif ((with_repro)); then
  say "fill: build A of tools/repro_check.sh (umask 022, TZ=UTC, LANG=C.UTF-8) in linux-sandbox, uploading"
  CACHEON_REPRO_A_FLAGS="${fill_flags[*]}" CACHEON_REPRO_KEEP="$work/fill" \
    bash tools/repro_check.sh "${targets[@]}" || fail "the reproducibility check failed"
else
  say "fill: cold build (umask 022, TZ=UTC, LANG=C.UTF-8) in linux-sandbox, uploading"
  build fill 022 UTC C.UTF-8 fill_flags || fail "the fill build failed"
fi
[[ -s $fill_log ]] || fail "the fill build wrote no execution log"
fill_requests=$(wc -l <"$srv/access.log")
uploads=$(awk '$1 == "PUT" && ($3 == 201 || $3 == 204)' "$srv/access.log" | wc -l)
upload_bytes=$(awk '$1 == "PUT" { n += $5 } END { print n + 0 }' "$srv/access.log")
say "fill: the server stored $uploads uploads ($((upload_bytes / 1048576)) MiB) in $fill_requests requests"
((uploads > 0)) || fail "the fill build uploaded nothing"

# --- 3. Hit: another clone, directory, root, umask, time zone and locale ------------
hit_log="$work/hit.exec.json"
hit_flags=(
  --config=remote-cache
  "--remote_cache=$url"
  --noremote_upload_local_results
  "--execution_log_json_file=$hit_log"
)
say "hit: build in another clone (umask 007, TZ=America/St_Johns, LANG=C.UTF-8) reading only the remote cache"
build hit 007 America/St_Johns C.UTF-8 hit_flags || fail "the hit build failed"
downloads=$(tail -n +"$((fill_requests + 1))" "$srv/access.log" | awk '$1 == "GET" && $3 == 200' | wc -l)
misses=$(tail -n +"$((fill_requests + 1))" "$srv/access.log" | awk '$1 == "GET" && $3 == 404' | wc -l)
say "hit: the server answered $downloads GETs from the cache and $misses with 404"

# --- 4. The execution logs and the bytes ------------------------------------------
# Bazel 4.2 writes the JSON execution log as a stream of SpawnExec objects
# (proto3 JSON: false booleans are left out).
"$python" - "$fill_log" "$hit_log" <<'EOF' || fail "see above"
import json, sys

def spawns(path):
    text, dec, i, out = open(path).read(), json.JSONDecoder(), 0, []
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i == len(text):
            return out
        obj, i = dec.raw_decode(text, i)
        out.append(obj)

def name(s):
    return "%s %s (%s)" % (s.get("mnemonic", "?"), s.get("progressMessage", ""),
                           " ".join(s.get("listedOutputs", [])[:2]))

fill, hit = spawns(sys.argv[1]), spawns(sys.argv[2])
bad = []
for s in fill:
    if s.get("runner") != "linux-sandbox":
        bad.append("fill: ran in %r, not linux-sandbox: %s" % (s.get("runner"), name(s)))
    elif s.get("remoteCacheHit"):
        bad.append("fill: a cache hit, not a real build: %s" % name(s))
    elif not (s.get("remotable") and s.get("cacheable")):
        bad.append("fill: not remotable or not cacheable (a no-remote, no-cache or local tag): %s" % name(s))
    elif s.get("exitCode", 0) != 0:
        bad.append("fill: exit code %s: %s" % (s.get("exitCode"), name(s)))
if not fill:
    bad.append("fill: the execution log holds no spawn")
print("remote-cache: fill: %d spawns, every one in linux-sandbox without network, none a cache hit" % len(fill)
      if not bad else "remote-cache: fill: %d spawns" % len(fill), file=sys.stderr)
hits = [s for s in hit if s.get("remoteCacheHit")]
for s in hit:
    if not s.get("remoteCacheHit"):
        bad.append("hit: first action that was not a remote cache hit (runner %r): %s" % (s.get("runner"), name(s)))
        break
if not hit:
    bad.append("hit: the execution log holds no spawn")
by = {}
for s in hit:
    by[s.get("mnemonic", "?")] = by.get(s.get("mnemonic", "?"), 0) + 1
print("remote-cache: hit: %d of %d spawns remote cache hits (%s)" % (
    len(hits), len(hit), ", ".join("%s %d" % kv for kv in sorted(by.items()))), file=sys.stderr)
if len(hit) != len(fill):
    bad.append("the fill build ran %d spawns but the hit build %d" % (len(fill), len(hit)))
for b in bad:
    print("remote-cache: " + b, file=sys.stderr)
sys.exit(1 if bad else 0)
EOF

n=$(find "$work/fill/out" -type f 2>/dev/null | wc -l)
((n > 0)) || fail "the fill build reported no outputs"
diff <(manifest "$work/fill/out") <(manifest "$work/hit/out") >"$work/diff" || {
  cat "$work/diff" >&2
  fail "outputs differ between the fill and the hit build"
}
diff -r "$work/fill/out" "$work/hit/out" >&2 || fail "outputs differ between the fill and the hit build"
say "${targets[*]}: $n output files byte-identical across the fill and the hit build"
echo "remote-cache: PASS ($((SECONDS - start)) s)"
