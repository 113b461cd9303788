#!/usr/bin/env bash
# Print the OPENBLAS_CORETYPE that gives Debian's OpenBLAS its fast kernel on this CPU (empty if none
# is needed). See README: Debian's OpenBLAS 0.3.21 falls back to a generic kernel on recent Xeons.
#   bash tests/coretype.sh            the fast kernel for this CPU
#   bash tests/coretype.sh --others   the other kernels this CPU can run that machines are seen to pick
#                                     (HASWELL, ZEN, SKYLAKEX), less the one in OPENBLAS_CORETYPE (or, if
#                                     none is set, the fast one): make test-kernels runs the C tests
#                                     under each, since sgemm rounds differently from kernel to kernel
#   bash tests/coretype.sh --env      the core type a script should run with: OPENBLAS_CORETYPE if this CPU
#                                     runs it, else (saying so on stderr) the fast one; never one whose
#                                     instructions the CPU lacks (OpenBLAS would die with SIGILL)
#   bash tests/coretype.sh --export   the same as a shell command: eval "$(bash tests/coretype.sh --export)"
#                                     exports it (or unsets OPENBLAS_CORETYPE when there is none to set)
#   bash tests/coretype.sh --runs CORE   exit 0 if this CPU runs CORE (any case; a name not below: yes),
#                                     else print the features it lacks and exit 1
# The features each core type needs are those of gf_blas_core_check (src/compute/blas_cores.c), which
# tests/trust/environment.sh holds this table to; GRASSFLOW_TEST_CPU_LACKS=avx512f,... (a test hook) hides features.
flags=" $(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null | cut -d: -f2) "
# has FEATURE: the CPU has it (FEATURE as GCC's __builtin_cpu_supports spells it, /proc/cpuinfo's name in brackets)
has() {
    case ",${GRASSFLOW_TEST_CPU_LACKS:-}," in *",$1,"*) return 1 ;; esac
    local f=$1
    case $f in sse3) f=pni ;; sse4.1) f=sse4_1 ;; sse4.2) f=sse4_2 ;; avx512bf16) f=avx512_bf16 ;; amx-bf16) f=amx_bf16 ;; esac
    [[ $flags == *" $f "* ]]
}
# needs CORE: the features CORE's kernels use beyond x86-64's SSE2 (exit 1: a name this table does not know)
needs() {
    local avx512="avx512f avx512cd avx512bw avx512dq avx512vl"
    case $(echo "$1" | tr '[:lower:]' '[:upper:]') in
    KATMAI | COPPERMINE | NORTHWOOD | BANIAS) echo ;;
    PRESCOTT | BARCELONA) echo sse3 ;;
    OPTERON) echo 3dnow ;;
    OPTERON_SSE3) echo sse3 3dnow ;;
    CORE2 | ATOM | NANO | BOBCAT) echo ssse3 ;;
    PENRYN | DUNNINGTON) echo sse4.1 ;;
    NEHALEM) echo sse4.2 ;;
    SANDYBRIDGE) echo avx ;;
    BULLDOZER) echo avx fma4 ;;
    PILEDRIVER | STEAMROLLER) echo avx fma fma4 ;;
    EXCAVATOR) echo avx2 fma fma4 ;;
    HASWELL | ZEN) echo avx2 fma ;;
    SKYLAKEX) echo avx2 fma $avx512 ;;
    COOPERLAKE) echo avx2 fma $avx512 avx512bf16 ;;
    SAPPHIRERAPIDS) echo avx2 fma $avx512 avx512bf16 amx-bf16 ;;
    *) return 1 ;;
    esac
}
# lacks CORE: the features CORE needs that this CPU lacks (empty: it runs CORE, or the name is unknown)
lacks() {
    local f out=()
    for f in $(needs "$1"); do has "$f" || out+=("$f"); done
    echo "${out[*]}"
}
fast=""
if [ -z "$(lacks SKYLAKEX)" ]; then fast=SKYLAKEX
elif [ -z "$(lacks HASWELL)" ]; then fast=HASWELL
fi
# the fastest core type this CPU runs, as gf_blas_fast_core says
fastest() {
    local k
    for k in SKYLAKEX HASWELL SANDYBRIDGE NEHALEM PRESCOTT; do [ -n "$(lacks $k)" ] || { echo $k; return; }; done
    echo
}
# the core type to run with: OPENBLAS_CORETYPE if the CPU runs it, else the fastest (saying why on stderr)
runnable() {
    local set=${OPENBLAS_CORETYPE:-} missing instead
    [ -n "$set" ] || { echo $fast; return; }
    missing=$(lacks "$set") instead=$(fastest)
    if [ -z "$missing" ]; then echo "$set"; return; fi
    echo "coretype: OPENBLAS_CORETYPE=$set needs $missing, which this CPU lacks (OpenBLAS would stop with an" \
        "illegal instruction); using ${instead:-no core type} instead" >&2
    echo "$instead"
}
case ${1:-} in
--others) ;;
--env) runnable; exit 0 ;;
--export) k=$(runnable); [ -n "$k" ] && echo "export OPENBLAS_CORETYPE=$k" || echo "unset OPENBLAS_CORETYPE"; exit 0 ;;
--runs) m=$(lacks "$2"); [ -z "$m" ] && exit 0; echo "$m"; exit 1 ;;
*) echo $fast; exit 0 ;;
esac
current=$(echo "${OPENBLAS_CORETYPE:-$fast}" | tr '[:lower:]' '[:upper:]')
others=()
[ -z "$(lacks HASWELL)" ] && others+=(HASWELL ZEN)
[ -z "$(lacks SKYLAKEX)" ] && others+=(SKYLAKEX)
for k in "${others[@]}"; do [ "$k" = "$current" ] || echo $k; done
