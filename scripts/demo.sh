#!/usr/bin/env bash
# The default job (make demo), about two minutes on two cores: a small Grassmann language model
# (grassmann-small over Tiny Shakespeare's 65 characters, 739,264 parameters, with no position embedding (a Grassmann layer knows order by its offsets), so
# that it streams a sample of any length at constant cost) trained for STEPS steps of
# 16 x 64 characters (default 2,400: about 2.5M characters, two and a half passes over the play texts),
# scored once on the validation split at the end of training, then a sample streamed from its best
# checkpoint. Progress at least every 5 s (and every 100 steps). Outputs go to runs/demo/ (OUT=...).
#   STEPS=N OUT=DIR GF=build/grassflow bash scripts/demo.sh
set -euo pipefail
cd "$(dirname "$0")/.."
GF=${GF:-build/grassflow}
OUT=${OUT:-runs/demo}
STEPS=${STEPS:-2400}
start=$(date +%s)
echo "== training grassmann-small on Tiny Shakespeare (characters) for $STEPS steps of 16 x 64 into $OUT" >&2
# --force: the demo starts again in its own folder each time (a run elsewhere is never replaced without it).
# fp32-fast: the fused fp32 forms of every op (docs/precision.md), on every CPU; no dropout in so short a run.
$GF train --model grassmann-small --set pos=none --corpus tinyshakespeare --out "$OUT" --force --steps "$STEPS" \
    --batch 16 --seq-len 64 --lr 6e-3 --min-lr 6e-4 --warmup 50 --dropout 0 --precision fp32-fast \
    --eval-every "$STEPS" --log-every 100
echo "== a sample of the best checkpoint (temperature 0.8, top-k 20)" >&2
$GF generate --ckpt "$OUT/best.safetensors" --prompt $'ROMEO:\n' --tokens 400 --temperature 0.8 --top-k 20 --seed 1
echo >&2
echo "== done in $(($(date +%s) - start)) s. Going further, the paper's experiment (WikiText-2, Grassmann against" >&2
echo "   its Transformer twin, 30 epochs: hours; docs/paper.md):" >&2
echo "   build/grassflow compare --models grassmann-6L,transformer-6L --corpus wikitext-2 --epochs 30 --batch 32 --seq-len 128 --out runs/table1" >&2
