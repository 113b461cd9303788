#!/usr/bin/env bash
# Run a command as on a CPU with AVX2 and FMA only (no AVX-512, no bf16, no VNNI), on a machine that has
# more: an EMULATION, for working on the AVX2 paths where no such CPU is at hand. It is not a measurement of
# an AVX2 CPU (another core, other caches and memory): figures made under it say "AVX2 emulated on" the
# host's CPU, and the real ones come from `make bench` on an AVX2 machine.
#   bash bench/as_avx2.sh COMMAND ARGS...      e.g. bash bench/as_avx2.sh bash bench/run.sh --out /tmp/b
# What it sets, for both sides of a comparison:
# - grassflow: a build compiled for x86-64-v3 (AVX2, FMA: no AVX-512 code from the compiler), in
#   build/avx2 (made if missing), as $GRASSFLOW, which bench/run.sh and the studies run; the test hook
#   GRASSFLOW_TEST_CPU_LACKS hides the AVX-512 features from grassflow's own kernel choices (int8 and bf16
#   one-row products, bf16 training, OpenBLAS's core check);
# - oneDNN (grassflow's and PyTorch's): ONEDNN_MAX_CPU_ISA=AVX2; OpenBLAS (both): OPENBLAS_CORETYPE=Haswell;
# - PyTorch's own kernels: ATEN_CPU_CAPABILITY=avx2.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: bash bench/as_avx2.sh COMMAND ARGS..." >&2; exit 2; }
grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo || { echo "as_avx2.sh: this CPU has no AVX2 and FMA" >&2; exit 1; }
make --no-print-directory -s BUILD=build/avx2 ARCH=x86-64-v3 all >&2
export GRASSFLOW=$PWD/build/avx2/grassflow
export GRASSFLOW_TEST_CPU_LACKS=avx512f,avx512cd,avx512bw,avx512dq,avx512vl,avx512vnni,avx512bf16,amx-bf16
export ONEDNN_MAX_CPU_ISA=AVX2 OPENBLAS_CORETYPE=Haswell ATEN_CPU_CAPABILITY=avx2
echo "as_avx2.sh: AVX2 emulated on $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs) ($GRASSFLOW, OpenBLAS Haswell, oneDNN AVX2)" >&2
exec "$@"
