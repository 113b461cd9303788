#!/usr/bin/env bash
# Who generalises past the trained lengths (issue 52): tiny encoder-decoders (d 64, 2 + 2 blocks, 2 heads of
# cross-attention) of each family on task synth (reverse, sort, add; train_len 8: valid 1-8 digits, test 9-16),
# 1,500 steps of 32 at lr 3e-3, one thread; each scored by eval (greedy decoding): the share of examples decoded
# exactly on valid and on test. About 10 s a model (the recurrent ones about a minute). The families: attention
# and Grassmann encoder-decoders (learned, sinusoidal or no positions), and a bidirectional GRU encoder under a
# gru-attn decoder without attention, with Bahdanau's and with Luong's (general, input feeding).
#   bash scripts/synth_study.sh [OUT_DIR] [TASKS] [SEEDS]    (default: a temporary folder; "reverse sort add"; "1")
#   MODELS="gru-none gru-luong" bash scripts/synth_study.sh ...   (a subset of the families)
set -uo pipefail
cd "$(dirname "$0")/.."
GF=${GF:-build/grassflow}
out=${1:-}
[ -n "$out" ] || { out=$(mktemp -d /tmp/grassflow-synth-study-XXXXXX); trap 'rm -rf "$out"' EXIT; }
tasks=${2:-reverse sort add}
seeds=${3:-1}
mkdir -p "$out"
config() { # config NAME ENCODER_ENTRY POS [DECODER_ENTRY]
    cat >"$out/$1.json" <<JSON
{"format": 3, "head": {"kind": "next_token"}, "vocab_size": 12, "source_vocab": 11, "cross_heads": 2,
 "d_model": 64, "n_layer": 2, "d_ff": 128, "max_len": 40, "pos": "$3", "norm": "pre", "direction": "bidirectional",
 "layers": [$2], "stacks": [{"name": "decoder", "d_model": 64, "d_ff": 128, "n_layer": 2, "direction": "causal",
 "layers": [${4:-$2}]}]}
JSON
}
ATT='{"mixer": "attention", "n_head": 2}'
GRASS='{"mixer": "grassmann", "rank": 16, "offsets": [1, 2, 4, 8]}'
config attention-learned "$ATT" learned
config attention-sinusoidal "$ATT" sinusoidal
config grassmann-learned "$GRASS" learned
config grassmann-nopos "$GRASS" none
GRU='{"mixer": "gru"}'
config gru-none "$GRU" none '{"mixer": "gru-attn", "attention": "none"}'
config gru-bahdanau "$GRU" none '{"mixer": "gru-attn", "attention": "bahdanau"}'
config gru-luong "$GRU" none '{"mixer": "gru-attn", "attention": "general"}'
models=${MODELS:-attention-learned attention-sinusoidal grassmann-learned grassmann-nopos gru-none gru-bahdanau gru-luong}
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'); one thread"
printf '%-8s %-22s %5s %12s %12s\n' task model seed "valid exact" "test exact"
for task in $tasks; do
    for m in $models; do
        for seed in $seeds; do
            run="$out/$task-$m-$seed"
            if ! OMP_NUM_THREADS=1 "$GF" train --task synth --corpus "$task" --config "$out/$m.json" --steps 1500 --batch 32 \
                --lr 3e-3 --warmup 50 --eval-every 1500 --seed "$seed" --out "$run" --force >"$run.out" 2>"$run.err"; then
                echo "synth_study: $task $m failed: $(tail -2 "$run.err")" >&2; continue
            fi
            for split in valid test; do
                OMP_NUM_THREADS=1 "$GF" eval --ckpt "$run/best.safetensors" --corpus "$task" --split $split --json >"$run.$split.json" 2>/dev/null
            done
            exact() { /usr/bin/python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); print("%.1f%%" % (100 * (1 - o["wer"])))' "$1"; }
            printf '%-8s %-22s %5s %12s %12s\n' "$task" "$m" "$seed" "$(exact "$run.valid.json")" "$(exact "$run.test.json")"
        done
    done
done
