#!/usr/bin/env bash
# The default job (make demo), about a minute and a half on two cores: a small Grassmann language model
# (grassmann-small over Tiny Shakespeare's 65 characters with a causal depthwise convolution of 4 before each
# layer's reduction, conv 4: 758,208 parameters with its learned positions) trained for STEPS steps of 8 x 128
# characters (default 2,400: about 2.5M characters, two and a half passes over the play texts), scored once on
# the validation split at the end of training, then a 400-character sample from its best checkpoint (past 128
# characters each new one re-reads the last 128). Progress at least every 5 s (and every 100 steps). Outputs
# go to runs/demo/ (OUT=...).
#   STEPS=N OUT=DIR GF=build/grassflow bash scripts/demo.sh
# Why this recipe: bash scripts/demo_recipes.sh trains the candidates (validation loss per character after
# 2,400 steps, AMD EPYC, one thread): conv 4, 1.64; conv 2, 1.71; conv 8, 1.65; conv 4 at lr 1e-2, 1.67; the
# plain Grassmann layer (conv 0), 2.01, whose samples are half-formed words; the Transformer twin
# (transformer-small), 1.69.
set -euo pipefail
cd "$(dirname "$0")/.."
GF=${GF:-build/grassflow}
OUT=${OUT:-runs/demo}
STEPS=${STEPS:-2400}
start=$(date +%s)
echo "== training grassmann-small (conv 4) on Tiny Shakespeare (characters) for $STEPS steps of 8 x 128 into $OUT" >&2
# --force: the demo starts again in its own folder each time (a run elsewhere is never replaced without it).
# fp32-fast: the fused fp32 forms of every op (docs/precision.md), on every CPU; no dropout in so short a run.
$GF train --model grassmann-small --set conv=4 --corpus tinyshakespeare --out "$OUT" --force --steps "$STEPS" \
    --batch 8 --seq-len 128 --lr 6e-3 --min-lr 6e-4 --warmup 50 --dropout 0 --precision fp32-fast \
    --eval-every "$STEPS" --log-every 100
echo "== a sample of the best checkpoint (temperature 0.6, top-k 20)" >&2
$GF generate --ckpt "$OUT/best.safetensors" --prompt $'ROMEO:\n' --tokens 400 --temperature 0.6 --top-k 20 --seed 1
echo >&2
echo "== done in $(($(date +%s) - start)) s. Going further, the paper's experiment (WikiText-2, Grassmann against" >&2
echo "   its Transformer twin, 30 epochs: hours; docs/paper.md):" >&2
echo "   build/grassflow compare --models grassmann-6L,transformer-6L --corpus wikitext-2 --epochs 30 --batch 32 --seq-len 128 --out runs/table1" >&2
