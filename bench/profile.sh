#!/usr/bin/env bash
# Where the time goes: `perf record` over `grassflow bench train`, the top symbols written as text.
#   bash bench/profile.sh OUT.txt THREADS BENCH-TRAIN-ARGS...
# e.g. bash bench/profile.sh /tmp/p.txt 2 --model grassmann-small --vocab 65 --set max_len=256 --batch 16 --seq-len 256
# bench/run.sh calls it for each case with a target (docs/bench/profile-*.txt). Needs perf (Debian: linux-perf).
set -euo pipefail
cd "$(dirname "$0")/.."
out=$1 th=$2
shift 2
command -v perf >/dev/null || { echo "profile.sh: perf not found; install it with: apt-get install linux-perf" >&2; exit 1; }
export OPENBLAS_CORETYPE=$(bash tests/coretype.sh --env) # never one this CPU cannot run
data=$(mktemp /tmp/grassflow-perf-XXXXXX)
trap 'rm -f "$data"' EXIT
GF=${GRASSFLOW:-build/grassflow} # the build to profile (bench/as_avx2.sh sets it)
line=$(perf record -q -o "$data" "$GF" --threads "$th" bench train "$@" 2>/dev/null | sed -n 1,2p | tr '\n' ' ')
{
    echo "# perf profile: $GF --threads $th bench train $*${GRASSFLOW_TEST_CPU_LACKS:+ (AVX2 emulated: bench/as_avx2.sh)}"
    echo "# $(date -u +%Y-%m-%dT%H:%MZ), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc --all) cores"
    echo "# $line"
    echo "# share of CPU samples by library and symbol (all threads; sgemm_* is OpenBLAS, *._omp_fn.* our"
    echo "# OpenMP regions, libgomp's unnamed addresses its barrier spin, [k] the kernel)"
    perf report -i "$data" --no-children --sort dso,sym --stdio 2>/dev/null | grep -v '^#' | grep '%' | sed -n 1,40p
} >"$out"
echo "profile.sh: wrote $out" >&2
