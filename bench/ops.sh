#!/usr/bin/env bash
# The elementwise ops of the character-level Transformer's step, timed alone (bench/ops.c): GELU and
# LayerNorm forward and backward, and its linear layers' matmuls in fp32 and fp32-fast, best of REPS calls,
# 1 and 2 threads. Builds against $BUILD/libgrassflow.a (default build); run it on two builds to compare
# them.
#   bash bench/ops.sh [REPS]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
. bench/env.sh # OPENBLAS_CORETYPE (the CLI sets it for itself; a program of our own must be given it), GOMP_SPINCOUNT
make -s BUILD="$BUILD" "$BUILD/libgrassflow.a" >/dev/null
bin=$(mktemp /tmp/grassflow-ops-XXXXXX)
trap 'rm -f "$bin"' EXIT
ldlibs=$(make -s --no-print-directory -f - print-ldlibs <<'MK'
include Makefile
print-ldlibs: ; @echo $(LDFLAGS) $(LDLIBS)
MK
)
# shellcheck disable=SC2086
gcc -O2 -std=c11 -D_GNU_SOURCE -Wall -Wextra -Iinclude -Isrc -fopenmp bench/ops.c -o "$bin" "$BUILD/libgrassflow.a" $ldlibs -lm
echo "bench/ops.sh ($BUILD, $(git rev-parse --short HEAD 2>/dev/null || echo '?')) on $(date -u +%Y-%m-%dT%H:%MZ), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs):"
echo
echo "| threads | op | best time | per element (matmuls: rate) |"
echo "|---|---|---|---|"
for th in 1 2; do OMP_NUM_THREADS=$th "$bin" "${1:-30}" | sed "s/^| [0-9]* |/| $th |/"; done
