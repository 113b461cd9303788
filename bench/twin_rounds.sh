#!/usr/bin/env bash
# grassflow against its PyTorch twin on the character-level training cases of bench/run.sh, alternated
# ROUNDS times in one run: on a host whose speed moves from minute to minute (a shared cloud machine), one
# pair of runs can land the two sides in different weather; alternating many and reporting the median and
# the best of each side shows how far that goes. Same configs, shapes, threads and environments as
# bench/run.sh (bench/env.sh).
#   bash bench/twin_rounds.sh [ROUNDS]     (default 5; about 1 minute a round on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/.."
GF=${GRASSFLOW:-build/grassflow}
. bench/env.sh
ROUNDS=${1:-5}
cfgdir=$(mktemp -d /tmp/grassflow-twin-XXXXXX)
trap 'rm -rf "$cfgdir"' EXIT
config() { # name, grassflow model options -> $cfgdir/name.json (for PyTorch) and name.cfg.json (grassflow)
    local name=$1
    shift
    "$GF" info "$@" --json >"$cfgdir/$name.json"
    $PY -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["config"]))' "$cfgdir/$name.json" >"$cfgdir/$name.cfg.json"
}
config char-g --model grassmann-small --vocab 65 --set max_len=256 --set dropout=0
config char-t --model transformer-small --vocab 65 --set max_len=256 --set dropout=0
tps() { $PY -c 'import json,sys; print(round(json.loads(sys.stdin.read().strip().splitlines()[-1])["tokens_per_s"]))'; }
median() { tr ' ' '\n' | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
best() { tr ' ' '\n' | sort -g | tail -1; }
echo "bench/twin_rounds.sh $ROUNDS on $(date -u +%Y-%m-%dT%H:%MZ): $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores,"
echo "OpenBLAS $OPENBLAS_CORETYPE, fp32 matmuls: $("$GF" --version | sed -n 's/^fp32 matmuls: //p'), $OMP_NUM_THREADS threads, B 16, L 256, tokens/s"
echo
echo "| case | grassflow median | PyTorch median | ratio of medians | grassflow best | PyTorch best | ratio of bests | grassflow, each round | PyTorch, each round |"
echo "|---|---|---|---|---|---|---|---|---|"
for c in char-g char-t; do
    g=() p=()
    for ((r = 0; r < ROUNDS; r++)); do
        g+=("$("$GF" bench train --config "$cfgdir/$c.cfg.json" --batch 16 --seq-len 256 --steps 8 --threads "$OMP_NUM_THREADS" --json | tps)")
        p+=("$(PYT bench/torch_bench.py train --config "$cfgdir/$c.json" --batch 16 --seq-len 256 --steps 8 --threads "$OMP_NUM_THREADS" | tps)")
    done
    gm=$(echo "${g[*]}" | median) pm=$(echo "${p[*]}" | median) gb=$(echo "${g[*]}" | best) pb=$(echo "${p[*]}" | best)
    printf '| %s | %s | %s | %.2fx | %s | %s | %.2fx | %s | %s |\n' "$c" "$gm" "$pm" "$(awk -v a="$gm" -v b="$pm" 'BEGIN {print a / b}')" \
        "$gb" "$pb" "$(awk -v a="$gb" -v b="$pb" 'BEGIN {print a / b}')" "${g[*]}" "${p[*]}"
done
