#!/usr/bin/env bash
# Print the OPENBLAS_CORETYPE that gives Debian's OpenBLAS its fast kernel on this CPU (empty if none
# is needed). See README: Debian's OpenBLAS 0.3.21 falls back to a generic kernel on recent Xeons.
#   bash tests/coretype.sh            the fast kernel for this CPU
#   bash tests/coretype.sh --others   the other kernels this CPU can run that machines are seen to pick
#                                     (HASWELL, ZEN, SKYLAKEX), less the one in OPENBLAS_CORETYPE (or, if
#                                     none is set, the fast one): make test-kernels runs the C tests
#                                     under each, since sgemm rounds differently from kernel to kernel
flag() { grep -q -w "$1" /proc/cpuinfo 2>/dev/null; }
fast=""
if flag avx512f; then fast=SKYLAKEX
elif flag avx2; then fast=HASWELL
fi
if [ "${1:-}" != "--others" ]; then echo $fast; exit 0; fi
current=$(echo "${OPENBLAS_CORETYPE:-$fast}" | tr '[:lower:]' '[:upper:]')
others=()
flag avx2 && others+=(HASWELL ZEN)
flag avx512f && others+=(SKYLAKEX)
for k in "${others[@]}"; do [ "$k" = "$current" ] || echo $k; done
