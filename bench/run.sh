#!/usr/bin/env bash
# The whole benchmark: grassflow against its PyTorch twins on this machine, same models, same shapes,
# same thread count, in one run. Writes docs/bench/results.jsonl, docs/bench/README.md and SVG plots.
#   bash bench/run.sh            the full benchmark (about 10 minutes on 2 cores)
#   bash bench/run.sh --smoke    tiny shapes, a few seconds: checks that everything runs (CI)
set -euo pipefail
cd "$(dirname "$0")/.."
GF=build/grassflow
PY=/usr/bin/python3
export OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-$(bash tests/coretype.sh)}
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
smoke=0
[ "${1:-}" = "--smoke" ] && smoke=1
if [ $smoke = 1 ]; then out=$(mktemp -d /tmp/grassflow-bench-XXXXXX); else out=docs/bench; fi
mkdir -p "$out"
res="$out/results.jsonl"
: >"$res"
cfgdir=$(mktemp -d /tmp/grassflow-benchcfg-XXXXXX)
trap 'rm -rf "$cfgdir"; [ $smoke = 1 ] && rm -rf "$out"' EXIT

# one JSON line per measurement, tagged with the case and the implementation
record() { # case impl json
    $PY -c 'import json,sys; d=json.loads(sys.argv[3]); d["case"]=sys.argv[1]; d["impl"]=sys.argv[2]; print(json.dumps(d))' "$1" "$2" "$3" >>"$res"
}
config() { # name -> writes $cfgdir/name.json; args: grassflow model options
    local name=$1; shift
    "$GF" info "$@" --json >"$cfgdir/$name.json"
    $PY -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["config"]))' "$cfgdir/$name.json" >"$cfgdir/$name.cfg.json"
}

if [ $smoke = 1 ]; then
    STEPS=1; LENS=64,128; TOK=2; STOK=2; GPOS=10,100; TPOS=10,100
    config word-g --model grassmann-tiny --set dropout=0; config word-t --model transformer-tiny --set dropout=0
    config char-g --model grassmann-tiny --set dropout=0; config char-t --model transformer-tiny --set dropout=0
    WB="2 4"; WL=16; CB=2; CL=32
else
    STEPS=8; LENS=256,1024,4096,8192; TOK=16; STOK=32; GPOS=100,1000,10000,100000; TPOS=100,1000,10000
    # word level: WikiText-2's 33,278 words, L=128, pre-LN, offsets 1..16, tied head, no dropout
    config word-g --model grassmann-6L --vocab 33278 --set dropout=0
    config word-t --model transformer-6L --vocab 33278 --set dropout=0
    # character level: vocabulary 65, 4 layers, d 128, d_ff 512, r 16, 4 heads, L 256
    config char-g --model grassmann-small --vocab 65 --set max_len=256 --set dropout=0
    config char-t --model transformer-small --vocab 65 --set max_len=256 --set dropout=0
    WB="8 32"; WL=128; CB=16; CL=256
fi
echo "== machine: $("$GF" --version | tr '\n' ' ')" >&2
echo "{\"case\": \"machine\", \"date\": \"$(date -u +%Y-%m-%dT%H:%MZ)\", \"cpu\": \"$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)\", \"cores\": $(nproc), \"version\": \"$("$GF" --version | head -1)\", \"blas\": \"$("$GF" --version | sed -n 2p)\", \"torch\": \"$($PY -c 'import torch; print(torch.__version__)')\"}" >>"$res"

train_pair() { # case cfg batch seqlen threads
    local c=$1 cfg=$2 B=$3 L=$4 th=$5
    echo "== train $c (B=$B L=$L, $th threads)" >&2
    record "$c" grassflow "$(OMP_NUM_THREADS=$th "$GF" bench train --config "$cfgdir/$cfg.cfg.json" --batch "$B" --seq-len "$L" --steps $STEPS --threads "$th" --json)"
    record "$c" pytorch "$(OMP_NUM_THREADS=$th PYT bench/torch_bench.py train --config "$cfgdir/$cfg.json" --batch "$B" --seq-len "$L" --steps $STEPS --threads "$th")"
}
for B in $WB; do
    train_pair "train word grassmann B=$B" word-g "$B" $WL 2
    train_pair "train word transformer B=$B" word-t "$B" $WL 2
done
train_pair "train char grassmann" char-g $CB $CL 2
train_pair "train char transformer" char-t $CB $CL 2
first_b=${WB%% *}
train_pair "train word grassmann B=$first_b 1 thread" word-g "$first_b" $WL 1

for mx in grassmann attention; do
    echo "== mixer $mx, L = $LENS" >&2
    record "mixer $mx" grassflow "$("$GF" bench mixer --mixer $mx --seq-lens $LENS --threads 2 --json)"
    record "mixer $mx" pytorch "$(PYT bench/torch_bench.py mixer --config "$cfgdir/word-g.json" --mixer $mx --batch 1 --seq-lens $LENS --threads 2 2>/dev/null)"
done

# generation, batch 1. The window recomputed per token (what the PyTorch twin does) and the stream at
# the same place; then the stream far out, with positions that do not stop at max_len: Grassmann with
# pos none, the Transformer with sinusoidal positions.
for m in g t; do
    echo "== generate word-$m" >&2
    record "generate word-$m" grassflow "$("$GF" bench generate --config "$cfgdir/word-$m.cfg.json" --no-cache --positions $WL --tokens $TOK --threads 2 --json)"
    record "generate word-$m stream" grassflow "$("$GF" bench generate --config "$cfgdir/word-$m.cfg.json" --positions $((WL - TOK)) --tokens $TOK --threads 2 --json)"
    record "generate word-$m" pytorch "$(PYT bench/torch_bench.py generate --config "$cfgdir/word-$m.json" --tokens $TOK --threads 2)"
done
echo "== generate: stream at far positions" >&2
record "stream word-g pos none" grassflow "$("$GF" bench generate --config "$cfgdir/word-g.cfg.json" --set pos=none --positions $GPOS --tokens $STOK --threads 2 --json)"
record "stream word-t pos sinusoidal" grassflow "$("$GF" bench generate --config "$cfgdir/word-t.cfg.json" --set pos=sinusoidal --positions $TPOS --tokens $STOK --threads 2 --json)"

# perf profiles of the training cases with targets (the report links them from every target not met)
if [ $smoke = 0 ] && command -v perf >/dev/null; then
    echo "== perf profiles" >&2
    wargs=(--config "$cfgdir/word-g.cfg.json" --batch 32 --seq-len $WL --steps 4)
    bash bench/profile.sh "$out/profile-word-grassmann.txt" 2 "${wargs[@]}"
    bash bench/profile.sh "$out/profile-word-grassmann-1-thread.txt" 1 "${wargs[@]}"
    bash bench/profile.sh "$out/profile-word-transformer.txt" 2 --config "$cfgdir/word-t.cfg.json" --batch 32 --seq-len $WL --steps 4
    bash bench/profile.sh "$out/profile-char-grassmann.txt" 2 --config "$cfgdir/char-g.cfg.json" --batch $CB --seq-len $CL --steps 20
    bash bench/profile.sh "$out/profile-char-transformer.txt" 2 --config "$cfgdir/char-t.cfg.json" --batch $CB --seq-len $CL --steps 20
fi

$PY bench/report.py "$res" "$out"
echo "== wrote $out/README.md" >&2
if [ $smoke = 1 ]; then cat "$out/README.md"; fi
