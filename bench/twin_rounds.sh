#!/usr/bin/env bash
# grassflow against its PyTorch twin on the character-level training cases of bench/run.sh, alternated
# ROUNDS times in one run: on a host whose speed moves from minute to minute (a shared cloud machine), one
# pair of runs can land the two sides in different weather; alternating many and reporting the median and
# the best of each side shows how far that goes. Same configs, shapes, threads and environments as
# bench/run.sh (bench/env.sh). grassflow runs twice a round: in fp32 (the default, the bits of every earlier
# version) and with --precision fp32-fast (fused multiply-adds, one-exp softmax, oneDNN's skinny matmuls).
#   bash bench/twin_rounds.sh [ROUNDS]     (default 5; about 1.5 minutes a round on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/.."
GF=${GRASSFLOW:-build/grassflow}
. bench/env.sh
ROUNDS=${1:-5}
cfgdir=$(mktemp -d /tmp/grassflow-twin-XXXXXX)
trap 'rm -rf "$cfgdir"' EXIT
bench_config char-g --model grassmann-small --vocab 65 --set max_len=256 --set dropout=0
bench_config char-t --model transformer-small --vocab 65 --set max_len=256 --set dropout=0
tps() { $PY -c 'import json,sys; print(round(json.loads(sys.stdin.read().strip().splitlines()[-1])["tokens_per_s"]))'; }
gf_run() { "$GF" bench train --config "$cfgdir/$1.cfg.json" --batch 16 --seq-len 256 --steps 8 --threads "$OMP_NUM_THREADS" --precision "$2" --json | tps; }
echo "bench/twin_rounds.sh $ROUNDS on $(date -u +%Y-%m-%dT%H:%MZ): $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores,"
echo "OpenBLAS $OPENBLAS_CORETYPE, fp32 matmuls: $("$GF" --version | sed -n 's/^fp32 matmuls: //p') (fp32-fast: oneDNN's where it runs), $OMP_NUM_THREADS threads, B 16, L 256, tokens/s"
echo
echo "| case | side | median | best | median / PyTorch's | best / PyTorch's | each round |"
echo "|---|---|---|---|---|---|---|"
for c in char-g char-t; do
    g=() f=() p=()
    for ((r = 0; r < ROUNDS; r++)); do
        g+=("$(gf_run "$c" fp32)")
        f+=("$(gf_run "$c" fp32-fast)")
        p+=("$(PYT bench/torch_bench.py train --config "$cfgdir/$c.json" --batch 16 --seq-len 256 --steps 8 --threads "$OMP_NUM_THREADS" | tps)")
    done
    pm=$(echo "${p[*]}" | median) pb=$(echo "${p[*]}" | best)
    for side in "grassflow fp32" "grassflow fp32-fast" "PyTorch"; do
        case $side in *fast) v=("${f[@]}") ;; grassflow*) v=("${g[@]}") ;; *) v=("${p[@]}") ;; esac
        m=$(echo "${v[*]}" | median) b=$(echo "${v[*]}" | best)
        printf '| %s | %s | %s | %s | %.2fx | %.2fx | %s |\n' "$c" "$side" "$m" "$b" "$(awk -v a="$m" -v b="$pm" 'BEGIN {print a / b}')" \
            "$(awk -v a="$b" -v b="$pb" 'BEGIN {print a / b}')" "${v[*]}"
    done
done
