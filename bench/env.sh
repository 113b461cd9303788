# Sourced by the benchmark scripts (bench/run.sh, bench/twin_rounds.sh, bench/ab.sh): how both sides run on
# this machine, and the helpers they share.
PY=/usr/bin/python3
# the user's core type if this CPU runs it, else this CPU's best (never one whose instructions it lacks)
export OPENBLAS_CORETYPE=$(bash "$(dirname "${BASH_SOURCE[0]}")/../tests/coretype.sh" --env)
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$(nproc)}
# the spin count grassflow sets for itself (src/cli/main.c), given to both sides: the same waiting policy
export GOMP_SPINCOUNT=${GOMP_SPINCOUNT:-10000}
# PyTorch gets the best environment we found for it on this machine (docs/bench/README.md, "The PyTorch
# twins"): Debian's OpenBLAS in its OpenMP flavour, so that BLAS and PyTorch's own OpenMP ops share one
# thread pool instead of spinning against each other (pthread flavour, the system default: word
# transformer-6L B=8 650 tokens/s; OpenMP flavour: 1,000), and jemalloc without decay, so that the
# 136 MB logits are not returned to the kernel and page-faulted back every step (1,000 -> 1,390).
TORCH_ENV=()
omp_blas=/usr/lib/x86_64-linux-gnu/openblas-openmp
[ -e $omp_blas/libblas.so.3 ] && TORCH_ENV+=("LD_LIBRARY_PATH=$omp_blas")
jemalloc=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
[ -e $jemalloc ] && TORCH_ENV+=("LD_PRELOAD=$jemalloc" "MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1")
PYT() { env ${TORCH_ENV[@]+"${TORCH_ENV[@]}"} $PY "$@"; }

# bench_config NAME MODEL-OPTIONS...: $cfgdir/NAME.json (grassflow info, which PyTorch's twin reads) and
# $cfgdir/NAME.cfg.json (its config, which grassflow reads), for the command $GF
bench_config() {
    local name=$1
    shift
    "$GF" info "$@" --json >"$cfgdir/$name.json"
    $PY -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["config"]))' "$cfgdir/$name.json" >"$cfgdir/$name.cfg.json"
}
# the median and the largest of the numbers on stdin (separated by spaces)
median() { tr ' ' '\n' | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
best() { tr ' ' '\n' | sort -g | tail -1; }
