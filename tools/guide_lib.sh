# Sourced by tools/runc_guide_check.sh and tools/docker_guide_check.sh: what
# both need to run the consumer guide's blocks as they are written there.

# guide_block GUIDE MARKER prints the first sh block of GUIDE that holds
# MARKER, and fails where none does.
guide_block() {
  awk -v m="$2" '
    /^```sh$/ { inb = 1; body = ""; next }
    inb && /^```$/ { inb = 0; if (index(body, m)) { printf "%s", body; found = 1; exit } next }
    inb { body = body $0 "\n" }
    END { exit !found }' "$1"
}

# answered FILE ID N: whether FILE holds exactly one answer to request ID,
# of N tokens (the engine's JSON lines on its standard output).
answered() {
  jq -e -R -s --argjson id "$2" --argjson n "$3" '[split("\n")[] | fromjson? | select(type == "object" and .id == $id)] |
    length == 1 and (.[0].tokens | length == 1 and (.[0] | length == $n))' "$1" >/dev/null
}

# channel_served WORK RUNTIME STATE: the checks of the guide's channel block,
# whose output is in WORK/channel.out and .err: the engine answered request
# 2 with 3 tokens, the entrypoint checked the channel, and it wrote its
# state to STATE. It ends the caller through the caller's fail.
channel_served() {
  answered "$1/channel.out" 2 3 || {
    cat "$1/channel.out" "$1/channel.err" >&2
    fail "under $2 with the channel the image did not answer the guide's second request with 3 tokens"
  }
  grep -q 'is the current release' "$1/channel.err" || {
    cat "$1/channel.err" >&2
    fail "under $2 the entrypoint did not check the channel"
  }
  [[ -n $(ls -A "$3") ]] || fail "under $2 the channel's state was not written to the state mount"
}

# guide_prelude NAME HINT TOOL... starts a guide check named NAME: say and
# fail print under that name, and where a TOOL is not installed the check
# skips (exit 0, saying so), or fails where CACHEON_REQUIRE_STOCK_TOOLS=1;
# HINT says what installs them.
guide_prelude() {
  check=$1 hint=$2
  shift 2
  say() { printf '%s: %s\n' "$check" "$*" >&2; }
  fail() {
    say "FAIL: $*"
    exit 1
  }
  local tool
  for tool in "$@"; do
    if ! command -v "$tool" >/dev/null; then
      [[ ${CACHEON_REQUIRE_STOCK_TOOLS:-0} == 1 ]] &&
        fail "$tool is not installed and CACHEON_REQUIRE_STOCK_TOOLS is set ($hint)"
      say "SKIP: $tool is not installed ($hint)"
      exit 0
    fi
  done
}
