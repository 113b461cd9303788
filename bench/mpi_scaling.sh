#!/usr/bin/env bash
# Data-parallel scaling on this machine (docs/distributed.md): one MPI_Allreduce of each word-level preset's
# gradient (bench/allreduce.c on 2 ranks), and WikiText-2 training throughput of grassmann-6L with one rank
# and with two, one thread a rank; then scripts/distributed_model.py writes the communication model, its
# check against these figures and the plot into docs/distributed.md. Run it on a quiet machine (about 5 min).
#   bash bench/mpi_scaling.sh [--steps N] [--model PRESET]     (defaults: 40 steps, grassmann-6L)
set -euo pipefail
cd "$(dirname "$0")/.."
GF=${GF:-build/grassflow}
steps=40 model=grassmann-6L
while [ $# -gt 0 ]; do
    case $1 in
    --steps) steps=${2:?--steps needs a number}; shift 2 ;;
    --model) model=${2:?--model needs a preset}; shift 2 ;;
    *) echo "mpi_scaling: unknown argument '$1' (--steps N, --model PRESET)" >&2; exit 2 ;;
    esac
done
"$GF" --version | grep -q '^mpi: Open MPI' || { echo "mpi_scaling: $GF has no MPI ($("$GF" --version | grep '^mpi:')); run scripts/install-deps.sh and make" >&2; exit 2; }
command -v mpicc >/dev/null || { echo "mpi_scaling: mpicc is missing (apt-get install libopenmpi-dev)" >&2; exit 2; }
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMP_NUM_THREADS=1
MPI=(mpirun --allow-run-as-root --oversubscribe --bind-to none)
tmp=$(mktemp -d /tmp/grassflow-mpi-scaling-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
out=docs/distributed
mkdir -p "$out"
mpicc -O2 -Wall -Wextra bench/allreduce.c -o "$tmp/allreduce"

echo "== the gradients' allreduce, 2 ranks" >&2
: >"$tmp/ar.jsonl"
for p in grassmann-6L transformer-6L grassmann-12L transformer-12L; do
    n=$("$GF" info --model $p --vocab 33278 --json | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["params"])')
    j=$("${MPI[@]}" -np 2 "$tmp/allreduce" "$n" 10)
    echo "{\"preset\": \"$p\", \"result\": $j}" >>"$tmp/ar.jsonl"
    echo "   $p: $j" >&2
done

# tokens/s of a training run: the median of the windows the trainer logged, the first (warm-up) left out
train_tps() { # np
    local np=$1 dir=$tmp/train-np$1
    local cmd=("$GF" --threads 1 train --model "$model" --corpus wikitext-2 --steps "$steps" --batch 32 --seq-len 128
               --warmup 10 --eval-every 0 --log-every 5 --out "$dir")
    if [ "$np" = 1 ]; then "${cmd[@]}" >/dev/null 2>"$tmp/err"; else "${MPI[@]}" -np "$np" "${cmd[@]}" >/dev/null 2>"$tmp/err"; fi ||
        { echo "mpi_scaling: the np $np training failed: $(tail -3 "$tmp/err")" >&2; exit 1; }
    /usr/bin/python3 -c 'import json,statistics,sys
r=[json.loads(l)["tokens_per_s"] for l in open(sys.argv[1]) if "\"train\"" in l][1:]
print(statistics.median(r))' "$dir/metrics.jsonl"
}
echo "== $model on WikiText-2, $steps steps of B=32 L=128, one thread a rank: np 1, then np 2" >&2
t1=$(train_tps 1)
t2=$(train_tps 2)
echo "   np 1: $t1 tokens/s, np 2: $t2 tokens/s" >&2
/usr/bin/python3 - "$tmp/ar.jsonl" "$t1" "$t2" "$model" "$steps" "$out/measured.json" \
    "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)" "$("$GF" --version | sed -n 2p)" "$("$GF" --version | grep '^mpi:')" <<'PYEOF'
import json, sys, datetime
ar = [json.loads(l) for l in open(sys.argv[1])]
m = {"date": datetime.datetime.utcnow().strftime("%Y-%m-%dT%H:%MZ"), "cpu": sys.argv[7], "blas": sys.argv[8], "mpi": sys.argv[9],
     "allreduce": [{"preset": a["preset"], "floats": a["result"]["floats"], "ranks": a["result"]["ranks"], "ms": a["result"]["ms"]} for a in ar],
     "train": {"model": sys.argv[4], "steps": int(sys.argv[5]), "batch": 32, "seq_len": 128, "threads_per_rank": 1,
               "np1_tokens_per_s": float(sys.argv[2]), "np2_tokens_per_s": float(sys.argv[3])},
     "commands": ["bash bench/mpi_scaling.sh --steps %s --model %s" % (sys.argv[5], sys.argv[4])]}
json.dump(m, open(sys.argv[6], "w"), indent=1)
PYEOF
GRASSFLOW=$GF /usr/bin/python3 scripts/distributed_model.py "$out/measured.json" docs/bench/results.jsonl docs/distributed.md
