#!/usr/bin/env bash
# grassflow against its PyTorch twin on the training cases of bench/run.sh (the character-level ones, and with
# --word the word-level ones at B 8 too), alternated ROUNDS times in one run: on a host whose speed moves from minute to minute (a shared cloud machine), one
# pair of runs can land the two sides in different weather; alternating many and reporting the median and
# the best of each side shows how far that goes. Same configs, shapes, threads and environments as
# bench/run.sh (bench/env.sh). grassflow runs twice a round: in fp32 (the default, the bits of every earlier
# version) and with --precision fp32-fast (fused multiply-adds, one-exp softmax, oneDNN's skinny matmuls).
# Under the table, one line per case says what its target asks of the machine: the linear layers' FLOPs at
# what share of the sgemm peak, with the rest of the step included. The targets are the speed issues' for the
# CPU: with AVX-512, 3x the twin for char-g and 2x for char-t; without (issue 50, AVX2 CPUs), 2.5x and 1.5x,
# and 2x for word-g and 1.2x for word-t. --g2p times the G2P study's encoder-decoders instead (issue 52,
# docs/seq2seq.md: gru-g2p with each attention, transformer-g2p, grassmann-g2p; 42 phonemes, dropout 0.1 as
# trained, 32 words of 8 phonemes read from 8 letters, no padding; no speed target).
#   bash bench/twin_rounds.sh [ROUNDS] [--word | --g2p]   (default 5; about 1.5 minutes a round on 2 cores, 2.5
#                                                          more with --word; --g2p about 1 minute a round)
set -euo pipefail
cd "$(dirname "$0")/.."
GF=${GRASSFLOW:-build/grassflow}
. bench/env.sh
ROUNDS=5 CASES="char-g char-t"
for a in "$@"; do
    case "$a" in
    --word) CASES="$CASES word-g word-t" ;;
    --g2p) CASES="g2p-bahdanau g2p-luong g2p-none g2p-t g2p-g" ;;
    *[!0-9]* | "" | 0) echo "bench/twin_rounds.sh: $a: expected a number of rounds (1 or more), --word or --g2p" >&2; exit 2 ;;
    *) ROUNDS=$a ;;
    esac
done
declare -A twin_median
cfgdir=$(mktemp -d /tmp/grassflow-twin-XXXXXX)
trap 'rm -rf "$cfgdir"' EXIT
bench_config char-g --model grassmann-small --vocab 65 --set max_len=256 --set dropout=0
bench_config char-t --model transformer-small --vocab 65 --set max_len=256 --set dropout=0
bench_config word-g --model grassmann-6L --vocab 33278 --set dropout=0 # as bench/run.sh's word cases, at B 8
bench_config word-t --model transformer-6L --vocab 33278 --set dropout=0
for c in bahdanau:bahdanau luong:general none:none; do # the G2P study's families (scripts/g2p_study.sh)
    bench_config "g2p-${c%%:*}" --model gru-g2p --vocab 42 --set attention="${c#*:}"
done
bench_config g2p-t --model transformer-g2p --vocab 42
bench_config g2p-g --model grassmann-g2p --vocab 42
shape() {
    case $1 in
    char-*) echo "--batch 16 --seq-len 256 --steps 8" ;;
    g2p-*) echo "--batch 32 --seq-len 8 --steps 8" ;;
    *) echo "--batch 8 --seq-len 128 --steps 6" ;;
    esac
}
tps() { $PY -c 'import json,sys; print(round(json.loads(sys.stdin.read().strip().splitlines()[-1])["tokens_per_s"]))'; }
# each run's JSON line is kept ($cfgdir/CASE.PRECISION.jsonl) for the utilisation line under the table
gf_run() { "$GF" bench train --config "$cfgdir/$1.cfg.json" $(shape "$1") --threads "$OMP_NUM_THREADS" --precision "$2" --json | tail -1 | tee -a "$cfgdir/$1.$2.jsonl" | tps; }
pt_run() { PYT bench/torch_bench.py train --config "$cfgdir/$1.json" $(shape "$1") --threads "$OMP_NUM_THREADS" | tps; }
echo "bench/twin_rounds.sh $ROUNDS on $(date -u +%Y-%m-%dT%H:%MZ): $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc --all) cores,"
echo "OpenBLAS $OPENBLAS_CORETYPE, fp32 matmuls: $("$GF" --version | sed -n 's/^fp32 matmuls: //p') (fp32-fast: oneDNN's where it runs), $OMP_NUM_THREADS threads, tokens/s; char-*: B 16, L 256; word-*: B 8, L 128; g2p-*: B 32, L 8 (target phonemes/s)"
echo
echo "| case | side | median | best | median / PyTorch's | best / PyTorch's | each round |"
echo "|---|---|---|---|---|---|---|"
# one discarded run of each side first: the first run on a fresh machine loads the libraries from disk
for prec in fp32 fp32-fast; do
    "$GF" bench train --config "$cfgdir/char-g.cfg.json" --batch 16 --seq-len 256 --steps 2 --threads "$OMP_NUM_THREADS" --precision $prec >/dev/null
done
PYT bench/torch_bench.py train --config "$cfgdir/char-g.json" --batch 16 --seq-len 256 --steps 2 --threads "$OMP_NUM_THREADS" >/dev/null
for c in $CASES; do
    g=() f=() p=()
    for ((r = 0; r < ROUNDS; r++)); do
        g+=("$(gf_run "$c" fp32)")
        f+=("$(gf_run "$c" fp32-fast)")
        p+=("$(pt_run "$c")")
    done
    pm=$(echo "${p[*]}" | median) pb=$(echo "${p[*]}" | best)
    twin_median[$c]=$pm
    for side in "grassflow fp32" "grassflow fp32-fast" "PyTorch"; do
        case $side in *fast) v=("${f[@]}") ;; grassflow*) v=("${g[@]}") ;; *) v=("${p[@]}") ;; esac
        m=$(echo "${v[*]}" | median) b=$(echo "${v[*]}" | best)
        printf '| %s | %s | %s | %s | %.2fx | %.2fx | %s |\n' "$c" "$side" "$m" "$b" "$(awk -v a="$m" -v b="$pm" 'BEGIN {print a / b}')" \
            "$(awk -v a="$b" -v b="$pb" 'BEGIN {print a / b}')" "${v[*]}"
    done
done
# What the target asks of the machine: the twin's median times the target, in tokens/s, as a share of the
# sgemm peak that grassflow's runs measured, counting the FLOPs of fp32-fast's gf_sgemm calls: the linear
# layers (where the AVX-512 attention tiles run, attention's products are not among them). The twin does at
# least these FLOPs too.
echo
avx512=$(grep -qw avx512f /proc/cpuinfo && echo 1 || echo 0)
for c in $CASES; do
    $PY - "$cfgdir/$c.fp32-fast.jsonl" "$c" "${twin_median[$c]}" "$avx512" <<'PYEOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
case, twin = sys.argv[2], float(sys.argv[3])
targets = {"char-g": 3.0, "char-t": 2.0} if sys.argv[4] == "1" else {"char-g": 2.5, "char-t": 1.5, "word-g": 2.0, "word-t": 1.2}
if case not in targets:
    print("%s: no speed target %s" % (case, "(issue 52 sets none)" if case.startswith("g2p") else
                                      "on a CPU with AVX-512 (the word targets are issue 50's, for AVX2 CPUs)"))
    sys.exit(0)
target = targets[case]
tokens = rows[0]["batch"] * rows[0]["seq_len"]
gflop = rows[0]["gflop_per_step"] / tokens  # per token
peak = statistics.median(r["sgemm_peak_gflops"] for r in rows)
now = statistics.median(r["tokens_per_s"] for r in rows)
need = target * twin
print("%s: %.1fx its twin is %.0f tokens/s, the linear layers' %.2f GFLOP a step at %.0f%% of the sgemm peak (%.0f GFLOP/s, "
      "median of the runs) with everything else in the step included; fp32-fast's median runs at %.0f%%; the linear layers "
      "alone at the peak would allow %.2fx" % (case, target, need, rows[0]["gflop_per_step"], 100 * need * gflop / peak, peak,
                                              100 * now * gflop / peak, peak / gflop / twin))
PYEOF
done
