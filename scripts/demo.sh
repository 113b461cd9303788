#!/usr/bin/env bash
# The default job: a short WikiText-2 run of a small Grassmann LM (a few minutes on two cores), then its
# validation perplexity and a generated sample. Outputs go to runs/demo/.
set -euo pipefail
cd "$(dirname "$0")/.."
GF=build/grassflow
OUT=${OUT:-runs/demo}
STEPS=${STEPS:-300}
mkdir -p runs
echo "== training grassmann-small on WikiText-2 for $STEPS steps (batch 16 x 128 tokens) into $OUT" >&2
# --force: the demo starts again in its own folder each time (a run elsewhere is never replaced without it)
$GF train --model grassmann-small --corpus wikitext-2 --out "$OUT" --force --steps "$STEPS" --batch 16 --seq-len 128 \
    --lr 2e-3 --min-lr 2e-4 --warmup 30 --eval-every "$STEPS" --log-every 25
echo "== validation perplexity of the best checkpoint" >&2
$GF eval --ckpt "$OUT/best.safetensors" --corpus wikitext-2 --split valid
echo "== a sample (temperature 0.8, top-k 40)" >&2
$GF generate --ckpt "$OUT/best.safetensors" --prompt "The history of the" --tokens 40 --temperature 0.8 --top-k 40 --seed 1
