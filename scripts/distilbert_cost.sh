#!/usr/bin/env bash
# What a frozen DistilBERT under an SNLI head costs here, with its output kept (the feature cache) and with
# the backbone run at every step. No weights can be downloaded, so the backbone is a folder of
# distilbert-base-uncased's shape (768 wide, 6 layers, 12 heads, 66M parameters) with random weights
# (tests/parity/torch_ref/distilbert.py make --base): the cost is the shape's, whatever the weights.
# Training pairs: the 1% sample; dev and test: their first 640 rows (the rates, not the accuracies, matter).
#   bash scripts/distilbert_cost.sh [--head FILE]     prints the rates and a run of the study's recipe
set -euo pipefail
cd "$(dirname "$0")/.."
# OpenBLAS's core type: the one set if this CPU runs it, else its fastest (never one it would die on with SIGILL)
eval "$(bash tests/coretype.sh --export)"
GF=${GF:-build/grassflow}
head=configs/snli/head-grassmann.json
[ "${1:-}" = --head ] && head=$2
tmp=$(mktemp -d /tmp/grassflow-dbcost-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
/usr/bin/python3 tests/parity/torch_ref/distilbert.py make --out "$tmp/db" --base data/bert-base-uncased/vocab.txt --bare
mkdir -p "$tmp/snli"
xz -dc data/snli/snli_1.0_train_0.01.tsv.xz >"$tmp/snli/snli_1.0_train.tsv"
for s in dev test; do xz -dc "data/snli/snli_1.0_$s.tsv.xz" | { head -640; cat >/dev/null; } >"$tmp/snli/snli_1.0_$s.tsv"; done
run() { "$GF" train --task snli --backbone "$tmp/db" --head "$head" --freeze-backbone --corpus "$tmp/snli" --log-every 10 "$@"; }
echo "distilbert_cost: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset}" >&2
run --no-feature-cache --steps 30 --eval-every 0 --out "$tmp/every" >/dev/null 2>"$tmp/every.err"
run --epochs 2 --eval-every 172 --out "$tmp/kept" >/dev/null 2>"$tmp/kept.err"
/usr/bin/python3 - "$tmp/every/metrics.jsonl" "$tmp/kept/metrics.jsonl" <<'PYEOF'
import json, statistics as st, sys
every = [json.loads(l) for l in open(sys.argv[1]) if '"tokens_per_s"' in l]
kept = [json.loads(l) for l in open(sys.argv[2]) if '"tokens_per_s"' in l]
u = st.median(e["tokens_per_s"] for e in every[1:])      # pairs/s once warm: backbone and head, every step
h = st.median(e["tokens_per_s"] for e in kept[2:])        # pairs/s of the head alone (the output kept)
build = kept[0]["elapsed_s"] - 10 * 32 / h                # the first 10 steps' window holds the forward pass over train
f = 5498 / build                                          # pairs/s of a forward pass (backbone and head, no backward)
print("backbone at every step: %.0f pairs/s; output kept: %.0f pairs/s (%.1fx); keeping it: one forward pass over a "
      "split first, %.0f pairs/s (5,498 training pairs in %.0f s)" % (u, h, h / u, f, build))
# the study's recipe (5 epochs of 5,498 pairs, dev of 9,842 pairs after each, test of 9,824 once), from these rates;
# an evaluation over kept features costs next to nothing and is left out
every_s = 5 * 5498 / u + (5 * 9842 + 9824) / f
kept_s = (5498 + 9842 + 9824) / f + 5 * 5498 / h
print("a run of the study's recipe, computed from these rates: %.0f min with the backbone at every step, %.0f min with "
      "its output kept" % (every_s / 60, kept_s / 60))
PYEOF
