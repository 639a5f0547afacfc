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
