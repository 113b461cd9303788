#!/usr/bin/env bash
# Print the OPENBLAS_CORETYPE that gives Debian's OpenBLAS its fast kernel on this CPU (empty if none
# is needed). See README: Debian's OpenBLAS 0.3.21 falls back to a generic kernel on recent Xeons.
if grep -q -w avx512f /proc/cpuinfo 2>/dev/null; then echo SKYLAKEX
elif grep -q -w avx2 /proc/cpuinfo 2>/dev/null; then echo HASWELL
fi
