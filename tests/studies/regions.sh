#!/usr/bin/env bash
# OpenMP regions per streamed token (docs/precision.md, "the int8 stream's 2-thread gap"): libgomp enters a
# parallel region even when its if clause is false, and then allocates a team of one with memalign and
# frees it (plus a futex call): 73 times per token of grassmann-6L before GF_PAR_FOR. An LD_PRELOAD counter
# of memalign calls, 2 threads: streaming 200 more tokens must not add one call per token, for every mixer
# that streams, fp32 and int8 weights (a small loop written as `#pragma omp parallel for if (...)` fails it).
set -uo pipefail
BUILD=${1:-build}
GF="$BUILD/grassflow"
tmp=$(mktemp -d /tmp/grassflow-regions-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. tests/lib.sh
cat >"$tmp/count.c" <<'CEOF'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
static long calls;
static void report(void) {
    const char *path = getenv("GF_REGIONS_OUT");
    FILE *f = path ? fopen(path, "w") : NULL;
    if (f) fprintf(f, "%ld\n", calls), fclose(f);
}
/* registered at load: a run that never calls memalign reports 0, not nothing */
__attribute__((constructor)) static void start(void) { atexit(report); }
void *memalign(size_t a, size_t n) {
    static void *(*real)(size_t, size_t);
    if (!real) real = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "memalign");
    calls++;
    return real(a, n);
}
CEOF
cc -shared -fPIC -O1 "$tmp/count.c" -o "$tmp/count.so" -ldl || { echo "regions: cannot build the counter"; exit 1; }
count() { # "MODEL [SETTINGS]" WEIGHTS TOKENS: memalign calls of a bench generate run
    local model=${1%% *} sets=() kv
    for kv in ${1#"$model"}; do sets+=(--set "$kv"); done
    rm -f "$tmp/n" # never the last run's count
    GF_REGIONS_OUT="$tmp/n" LD_PRELOAD="$tmp/count.so" "$GF" bench generate --model "$model" --set pos=sinusoidal \
        ${sets[@]+"${sets[@]}"} --vocab 300 --positions 20 --tokens "$3" --threads 2 --weights "$2" >/dev/null 2>"$tmp/err" ||
        { echo -1; return; }
    cat "$tmp/n" 2>/dev/null || echo -1
}
echo "regions: memalign calls (libgomp's serialized regions) per streamed token, 2 threads"
for m in grassmann-small transformer-small "grassmann-small mixers=window window=64" \
    "grassmann-small mixers=performer features=32"; do
    for w in fp32 int8; do
        a=$(count "$m" $w 20) b=$(count "$m" $w 220)
        if [ "$a" -lt 0 ] || [ "$b" -lt 0 ]; then fail "$m, $w weights: bench generate failed: $(head -c 300 "$tmp/err")"
        elif [ $((b - a)) -lt 200 ]; then pass "$m, $w weights: $((b - a)) more calls for 200 more tokens"
        else fail "$m, $w weights: $((b - a)) more memalign calls for 200 more tokens (a parallel region whose if clause is false runs per token: use GF_PAR_FOR, src/compute/parallel.h)"; fi
    done
done
[ "$fails" -eq 0 ] && echo "regions: all passed" || { echo "regions: $fails FAILED"; exit 1; }
