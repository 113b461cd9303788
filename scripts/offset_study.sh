#!/usr/bin/env bash
# The offset study (issue 51, item 4; issue 53 for images): what each offset and each layer's gate of a trained
# Grassmann model is worth, measured by the validation loss (and a classifier's accuracy) when it is taken away
# at evaluation time (grassflow inspect's overrides: the weights untouched, docs/usage.md "grassflow inspect").
#   bash scripts/offset_study.sh --ckpt CKPT [--out DIR] [--corpus C] [--split S] [--per-layer] [--docs]
# For the checkpoint (a Grassmann or hybrid model: a language model, or a classifier such as an image task's)
# on the split (default wikitext-2 valid, read as its training run read it):
#   base           the loss as trained (grassflow eval)
#   drop D         offset D dropped from every layer that lists it (the model whose config lacks D)
#   layer K gate 0 / gate 1   layer K's gate forced to a = 0 (the Grassmann update alone) and a = 1 (no
#                  Grassmann update: the mixer passes its input through)
#   --per-layer    also offset D dropped from layer K alone, for every layer and offset (a heat map)
# Each evaluation is one row of OUT/results.tsv (default runs/offset-study), written as it ends: a rerun
# skips the rows that are there, so the study can be stopped (Ctrl-C) and continued. Then OUT/table.md and
# the bar charts OUT/offsets.svg and OUT/gates.svg (grassflow plot --table), and for layers on a patch grid
# (the mixer's grid key) OUT/neighbours.svg, the loss change of each offset drawn at its 2-D step (and its
# mirror: a bidirectional layer pairs both ways) around the patch; --docs draws them from the
# results without evaluating anything. An evaluation of the 6-layer WikiText-2 model's validation split
# takes about two minutes on one thread of an AVX-512 EPYC: the default study is 1 + 6 + 12 = 19 of them.
set -euo pipefail
cd "$(dirname "$0")/.."
GF=${GRASSFLOW:-build/grassflow}
CKPT="" OUT=runs/offset-study CORPUS=wikitext-2 SPLIT=valid PER_LAYER=0 DOCS_ONLY=0
while [ $# -gt 0 ]; do
    case "$1" in
    --ckpt) CKPT=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --corpus) CORPUS=$2; shift 2 ;;
    --split) SPLIT=$2; shift 2 ;;
    --per-layer) PER_LAYER=1; shift ;;
    --docs) DOCS_ONLY=1; shift ;;
    *) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
    esac
done
mkdir -p "$OUT"
RES="$OUT/results.tsv"

# layers and offsets of the checkpoint: "K D1,D2,... gate|nogate GRID" per Grassmann layer (its config, as
# grassflow info reads it; a layer's list is the one it was trained with)
layers_of() {
    "$GF" info --ckpt "$CKPT" --json | python3 -c '
import json, sys
for k, l in enumerate(json.load(sys.stdin)["config"]["layers"]):
    if l.get("mixer") == "grassmann":
        print(k, ",".join(str(d) for d in dict.fromkeys(l["offsets"])), "gate" if l.get("gate", True) else "nogate",
              l.get("grid", 0))'
}

# one evaluation: NAME LAYER OFFSET GATE -- grassflow arguments; its row appended to results.tsv
run() {
    local name=$1 layer=$2 offset=$3 gate=$4
    shift 5
    grep -q "^$name	" "$RES" 2>/dev/null && return 0
    echo "offset study: $name" >&2
    local js
    js=$("$GF" "$@" --corpus "$CORPUS" --split "$SPLIT" --json)
    # a language model counts tokens, a classifier its examples and its accuracy (a results.tsv begun before the
    # accuracy column keeps its six)
    python3 -c 'import json, sys; d = json.loads(sys.argv[1]); six = sys.argv[2] == "6"
n = d.get("tokens", d.get("images", d.get("examples")))
acc = [] if six else [repr(d["accuracy"]) if "accuracy" in d else "-"]
print("\t".join(sys.argv[3:] + [str(n), repr(d["loss"])] + acc))' \
        "$js" "$(head -1 "$RES" | awk -F'\t' '{print NF}')" "$name" "$layer" "$offset" "$gate" >>"$RES"
}

evaluate() {
    [ -n "$CKPT" ] || { echo "offset_study.sh: --ckpt CKPT is required" >&2; exit 2; }
    [ -f "$RES" ] || printf 'name\tlayer\toffset\tgate\ttokens\tloss\taccuracy\n' >"$RES"
    local spec
    spec=$(layers_of)
    echo "$spec" | awk '{print $4}' | sort -n | tail -1 >"$OUT/grid" # the patch grid's columns (0: none)
    [ -n "$spec" ] || { echo "offset_study.sh: $CKPT has no Grassmann layer" >&2; exit 1; }
    run base - - - -- eval --ckpt "$CKPT"
    local all_offsets
    all_offsets=$(echo "$spec" | awk '{print $2}' | tr ',' '\n' | sort -n | uniq)
    for d in $all_offsets; do run "drop $d" all "$d" - -- inspect --ckpt "$CKPT" --drop-offset "$d"; done
    while read -r k offs gate grid; do
        [ "$gate" = gate ] || continue
        for g in 0 1; do run "layer $k gate $g" "$k" - "$g" -- inspect --ckpt "$CKPT" --force-gate "$g" --layer "$k"; done
    done <<<"$spec"
    if [ "$PER_LAYER" = 1 ]; then
        while read -r k offs gate grid; do
            for d in ${offs//,/ }; do
                run "layer $k drop $d" "$k" "$d" - -- inspect --ckpt "$CKPT" --drop-offset "$d" --layer "$k"
            done
        done <<<"$spec"
    fi
}

[ "$DOCS_ONLY" = 1 ] || evaluate
[ -f "$RES" ] || { echo "offset_study.sh: no $RES yet" >&2; exit 1; }
python3 scripts/offset_study.py "$RES" "$OUT" "$(cat "$OUT/grid" 2>/dev/null || echo 0)"
case $SPLIT in valid) S=Validation ;; test) S=Test ;; *) S="$SPLIT split" ;; esac # the split in the titles (--docs: give --split again)
for f in offsets gates per-layer; do
    [ -f "$OUT/$f.tsv" ] || continue
    case $f in
    offsets) t="$S loss change when an offset is dropped from every layer" ;;
    gates) t="$S loss change when a layer's gate is forced" ;;
    per-layer) t="$S loss change when an offset is dropped from one layer" ;;
    esac
    unit=token
    [ "$(head -1 "$RES" | awk -F'\t' '{print NF}')" = 7 ] && [ "$(awk -F'\t' 'NR == 2 {print $7}' "$RES")" != - ] && unit=example
    "$GF" plot --table "$OUT/$f.tsv" --kind bars --ylabel "loss change (nats per $unit)" --title "$t" --out "$OUT/$f.svg"
done
cat "$OUT/table.md"
