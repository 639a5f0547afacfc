#!/usr/bin/env bash
# Runs every Go fuzz target of the repository briefly: CACHEON_FUZZTIME
# executions each (default 3000x, a few seconds for the slowest target).
# The budget is a count, not a duration: with a duration, Go's fuzzing
# coordinator (up to Go 1.26) can report its own deadline as a failure
# ("context deadline exceeded", golang/go#75804) on a loaded machine.
# The corpus each run grows stays in Go's build cache
# ($(go env GOCACHE)/fuzz) between runs; a crasher is written under the
# package's testdata/fuzz/, to be committed with its fix.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$repo"
fuzztime=${CACHEON_FUZZTIME:-3000x}
failed=0
count=0
while IFS= read -r file; do
  pkg="./$(dirname "$file")"
  for target in $(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*testing\.F).*/\1/p' "$file"); do
    count=$((count + 1))
    printf 'fuzz %s %s (%s)\n' "$pkg" "$target" "$fuzztime" >&2
    if ! go test -run='^$' -fuzz="^${target}\$" -fuzztime="$fuzztime" -parallel=2 "$pkg" >/tmp/cacheon-fuzz.$$ 2>&1; then
      cat /tmp/cacheon-fuzz.$$ >&2
      failed=$((failed + 1))
    fi
  done
done < <(git ls-files -z '*_test.go' | xargs -0 grep -l '^func Fuzz' | sort)
rm -f /tmp/cacheon-fuzz.$$
echo "fuzz: $count targets, $failed failed" >&2
((failed == 0 && count > 0))
