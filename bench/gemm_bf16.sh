#!/usr/bin/env bash
# oneDNN against libxsmm for the bf16 matmuls of training (issue 28: "measure both and say which"): builds
# bench/gemm_bf16.c against build/libgrassflow.a and Debian's libxsmm 1.17 (libxsmm-dev, installed here if
# missing) and prints its table, one thread each (libxsmm_bsgemm has one). Run it on a quiet machine.
#   bash bench/gemm_bf16.sh [REPS]      (default 5: the best of REPS timed calls after a warm-up)
set -euo pipefail
cd "$(dirname "$0")/.."
[ -e /usr/lib/libxsmm.a ] || { echo "gemm_bf16: installing libxsmm-dev" >&2; apt-get install -y -qq libxsmm-dev >/dev/null; }
make -s all >/dev/null
# the fp32 column's OpenBLAS kernel as bench/run.sh sets it: this program is not the CLI, which picks it itself
export OPENBLAS_CORETYPE=$(bash tests/coretype.sh --env) # never one this CPU cannot run
bin=$(mktemp /tmp/grassflow-gemm-bf16-XXXXXX)
trap 'rm -f "$bin"' EXIT
# the library's own link flags, as the Makefile's probes found them (OpenBLAS, oneDNN, MPI when built in)
ldlibs=$(make -s --no-print-directory -f - print-ldlibs <<'MK'
include Makefile
print-ldlibs: ; @echo $(LDFLAGS) $(LDLIBS)
MK
)
# shellcheck disable=SC2086
gcc -O2 -std=c11 -D_GNU_SOURCE -Wall -Wextra -Iinclude -Isrc -fopenmp bench/gemm_bf16.c -o "$bin" build/libgrassflow.a \
    /usr/lib/libxsmmext.a /usr/lib/libxsmm.a $ldlibs -ldl -lpthread
echo "bench/gemm_bf16.sh on $(date -u +%Y-%m-%dT%H:%MZ), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), one thread:"
echo
# a bound on the whole table (libxsmm_bsgemm, which this program used before it tiled the product into JIT
# kernels, fell back to a generic loop and had not finished the first shape after 10 minutes)
rc=0
OMP_NUM_THREADS=1 timeout "${GEMM_BF16_TIMEOUT:-900}" "$bin" "${1:-5}" || rc=$?
if [ $rc = 124 ]; then
    echo "gemm_bf16: the table did not finish in ${GEMM_BF16_TIMEOUT:-900} s (GEMM_BF16_TIMEOUT); the rows above are what ran" >&2
fi
exit $rc
