#!/usr/bin/env bash
# The layout the README's source map promises: no two source files share a name (a newcomer finds each by
# name, and `ar` matches members by base name), and every directory of src/ is in the map.
set -uo pipefail
tmp=$(mktemp -d /tmp/grassflow-layout-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. tests/lib.sh
dups=$(find src -name '*.[ch]' -printf '%f\n' | sort | uniq -d | tr '\n' ' ')
[ -z "$dups" ] && pass "no two files of src/ share a name" || fail "files of src/ that share a name: $dups"
for d in src/*/; do
    grep -q "^${d%/}/ " README.md && pass "${d%/}/ is in the README's source map" || fail "${d%/}/ is missing from the README's source map"
done
[ "$fails" -eq 0 ] && echo "layout: all passed" || { echo "layout: $fails FAILED"; exit 1; }
