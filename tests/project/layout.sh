#!/usr/bin/env bash
# The layout the source maps promise (the README's layout and docs/source-map.md): no two source files share a name (a newcomer finds each by
# name, and `ar` matches members by base name), every directory of src/ is in the map, and the library's
# folders include each other without a cycle.
set -uo pipefail
tmp=$(mktemp -d /tmp/grassflow-layout-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. tests/lib.sh
dups=$(find src -name '*.[ch]' -printf '%f\n' | sort | uniq -d | tr '\n' ' ')
[ -z "$dups" ] && pass "no two files of src/ share a name" || fail "files of src/ that share a name: $dups"
for d in src/*/; do
    for m in README.md docs/source-map.md; do # the README's one-line layout and the full source map
        grep -q "^${d%/}/ " $m && pass "${d%/}/ is in $m's source map" || fail "${d%/}/ is missing from $m's source map"
    done
done
# the library's folders include each other without a cycle (the command, src/cli/, sits on top of them all)
for f in $(find src -name '*.[ch]' -not -path 'src/cli/*'); do
    d=$(echo "$f" | cut -d/ -f2)
    grep -o '^#include "[a-z_]*/' "$f" | sed 's/#include "//; s|/||' | sort -u | while read -r t; do [ "$t" != "$d" ] && echo "$d $t"; done
done | sort -u >"$tmp/edges"
cycle=$(/usr/bin/python3 - "$tmp/edges" <<'PYEOF'
import collections, sys
g = collections.defaultdict(set)
for line in open(sys.argv[1]):
    a, b = line.split(); g[a].add(b)
def walk(n, path):
    for m in sorted(g[n]):
        if m in path: return path[path.index(m):] + [m]
        c = walk(m, path + [m])
        if c: return c
for n in sorted(g):
    c = walk(n, [n])
    if c: print(" -> ".join(c)); break
PYEOF
)
[ -s "$tmp/edges" ] && [ -z "$cycle" ] && pass "the library's folders include each other without a cycle ($(wc -l <"$tmp/edges") edges)" || fail "an include cycle between folders: ${cycle:-no edges found}"
# and file by file: no header includes itself around a cycle, and every "folder/file.h" included exists
filecheck=$(/usr/bin/python3 - <<'PYEOF'
import collections, os, re
g, files = collections.defaultdict(set), []
for d, _, fs in os.walk("src"):
    files += [os.path.join(d, f) for f in fs if f.endswith((".c", ".h"))]
missing = []
for f in files:
    for m in re.finditer(r'^#include "([a-z_0-9]+/[a-z_/0-9]+\.h)"', open(f, encoding="utf-8").read(), re.M):
        t = "src/" + m.group(1)
        (g[f].add(t) if os.path.exists(t) else missing.append(f + " -> " + t))
state = {}
def walk(n, path):
    state[n] = 1
    for m in sorted(g[n]):
        if state.get(m) == 1: return path[path.index(m):] + [m]
        if not state.get(m):
            c = walk(m, path + [m])
            if c: return c
    state[n] = 2
cycle = next((c for n in sorted(files) if not state.get(n) for c in [walk(n, [n])] if c), None)
print("missing: " + ", ".join(missing) if missing else "cycle: " + " -> ".join(cycle) if cycle else
      "ok %d files, %d edges" % (len(files), sum(len(v) for v in g.values())))
PYEOF
)
case $filecheck in ok*) pass "the files of src/ include each other without a cycle (${filecheck#ok })" ;; *) fail "src/ includes: $filecheck" ;; esac
# an OpenMP `simd` loop whose if clause has no `parallel:` runs scalar below the threshold (the clause
# applies to the simd part too): a stream's one-row GELU was so several times slower
unnamed=$(grep -rnE '#pragma omp[^(]*simd.*[[:space:]]if *\( *[^p ]' src | cut -d: -f1,2 | tr '\n' ' ')
[ -z "$unnamed" ] && pass "every omp simd loop's if clause names parallel:" || fail "omp simd loops with an unnamed if clause (write if (parallel: ...)): $unnamed"
# make clean removes what the build made and nothing else: a clean checkout (with a build and a user's run in
# it) stays clean, its tracked runs/ (the studies') and the user's run folder stay
if git rev-parse --git-dir >/dev/null 2>&1; then
    git clone -q . "$tmp/clone" 2>/dev/null
    mkdir -p "$tmp/clone/build/obj" "$tmp/clone/runs/mine" && touch "$tmp/clone/build/grassflow" "$tmp/clone/runs/mine/best.safetensors"
    env -u MAKEFLAGS -u MAKELEVEL make -s -C "$tmp/clone" -f "$PWD/Makefile" clean BUILD=build >/dev/null 2>&1 # this checkout's Makefile, whatever make runs this
    st=$(git -C "$tmp/clone" status --porcelain)
    [ ! -e "$tmp/clone/build" ] && [ -z "$st" ] && [ -e "$tmp/clone/runs/mine/best.safetensors" ] \
        && pass "make clean removes build/ alone: git status clean, a user's run folder kept" || fail "make clean: build $( [ -e "$tmp/clone/build" ] && echo kept || echo gone), status: $(echo "$st" | head -3)"
fi
[ "$fails" -eq 0 ] && echo "layout: all passed" || { echo "layout: $fails FAILED"; exit 1; }
