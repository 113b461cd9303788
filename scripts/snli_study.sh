#!/usr/bin/env bash
# The SNLI study (issue 12, item 6): the Grassmann-Plücker head against the Transformer head, on each
# backbone, over seeds, with one recipe; writes OUT/results.tsv, OUT/dev-accuracy.svg (or --plot FILE: dev
# accuracy after each epoch, mean over the seeds) and prints a markdown table (mean and sample standard
# deviation of the best checkpoint's dev and test accuracy over the seeds).
#   bash scripts/snli_study.sh [--seeds 1,2,3] [--epochs N | --steps N] [--backbone B]... [--lm-epochs N |
#                              --lm-steps N] [--heads H1,H2,...] [--corpus C] [--lr LR] [--out DIR] [--plot FILE] [--plot-only]
# A head H (default grassmann,transformer; also window, performer) is configs/snli/none-H.json with no
# backbone and configs/snli/head-H.json on one; a head whose mixer this grassflow lacks is skipped, saying so.
# --steps and --lm-steps give optimizer steps instead of epochs (short checks). --corpus (default snli) trains and
# scores the heads on another folder of SNLI's splits (a hypothesis-only copy, say: docs/search.md). --lr (default
# 5e-4) the peak learning rate of the heads' runs (not of a pretraining).
# A backbone B is one of
#   none          the configs/snli/none-*.json models (the heads' layers on the token embeddings, trained
#                 end to end);
#   wt2:PRESET    PRESET pretrained here as a WordPiece language model on WikiText-2 (--lm-epochs, default 3,
#                 batch 32 x 128 tokens, the default LM recipe) into OUT/backbones/wt2-PRESET, then used as
#                 the next item says;
#   CKPT or DIR   a grassflow checkpoint or a Hugging Face DistilBERT folder: configs/snli/head-*.json on it,
#                 frozen.
# A run that was stopped resumes (a pretraining too); a finished one is not run again. SIGINT or SIGTERM
# (Ctrl-C stops the run in progress, which saves its state) ends the study once that run has ended.
# --plot-only: no training; the table and the plot again from OUT/results.tsv and the runs' metrics.
# The plot is drawn by $GF plot --table (scripts/plot_table.py).
set -euo pipefail
cd "$(dirname "$0")/.."
# OpenBLAS's core type: the one set if this CPU runs it, else its fastest (never one it would die on with SIGILL)
eval "$(bash tests/coretype.sh --export)"
GF=${GF:-build/grassflow}
seeds=1,2,3 length=(--epochs 5) lm_length=(--epochs 3) out=runs/snli-study plot="" backbones=() heads=grassmann,transformer
plot_only=0 corpus=snli lr=5e-4
while [ $# -gt 0 ]; do
    case $1 in
    --seeds) seeds=$2; shift 2 ;;
    --epochs|--steps) length=("$1" "$2"); shift 2 ;;
    --lm-epochs|--lm-steps) lm_length=("${1/lm-/}" "$2"); shift 2 ;;
    --heads) heads=$2; shift 2 ;;
    --corpus) corpus=$2; shift 2 ;;
    --lr) lr=$2; shift 2 ;;
    --backbone) backbones+=("$2"); shift 2 ;;
    --out) out=$2; shift 2 ;;
    --plot) plot=$2; shift 2 ;;
    --plot-only) plot_only=1; shift ;;
    *) echo "snli_study: unknown argument $1" >&2; exit 2 ;;
    esac
done
[ ${#backbones[@]} -gt 0 ] || backbones=(none)
[ $plot_only = 0 ] || backbones=() # the runs' loop below runs nothing
plot=${plot:-$out/dev-accuracy.svg}
stop=""
trap 'stop=1' INT TERM
stopped() {
    echo "snli_study: stopped by a signal; finished runs are in $out/results.tsv, the same command continues" >&2
    exit 130
}
mkdir -p "$out"
recipe=(--task snli --corpus "$corpus" "${length[@]}" --batch 32 --lr "$lr" --warmup 100 --eval-every 172)
res="$out/results.tsv"
[ -f "$res" ] || printf 'backbone\thead\tseed\tparams\ttrainable\tdev\ttest\twall_s\n' >"$res"
if ! head -1 "$res" | grep trainable >/dev/null; then # results of before the trainable column: all trainable
    awk -F'\t' -v OFS='\t' 'NR == 1 { $4 = $4 OFS "trainable" } NR > 1 { $4 = $4 OFS $4 } 1' "$res" >"$res.new" && mv "$res.new" "$res"
fi

# wt2:PRESET: pretrain (or resume, or find done) the WordPiece LM; prints its best checkpoint's path
pretrain() {
    local preset=$1 dir="$out/backbones/wt2-$1"
    if [ ! -f "$dir/done" ]; then
        mkdir -p "$out/backbones"
        local start=$SECONDS
        echo "snli_study: pretraining $preset on WikiText-2 (WordPiece), ${lm_length[*]#--}, into $dir" >&2
        if [ -f "$dir/state.safetensors" ]; then "$GF" train --resume "$dir" >"$dir.log" 2>"$dir.err"
        else
            "$GF" train --model "$preset" --corpus wikitext-2 --tokenizer wordpiece:data/bert-base-uncased/vocab.txt \
                "${lm_length[@]}" --batch 32 --seq-len 128 --eval-every 250 --out "$dir" >"$dir.log" 2>"$dir.err"
        fi || { rc=$?; [ $rc -lt 128 ] || exit $rc; echo "snli_study: pretraining $preset failed ($dir.err): $(tail -2 "$dir.err")" >&2; return 1; }
        printf '%s  wall_s %d\n' "$(tail -1 "$dir.log")" $((SECONDS - start)) >"$dir/done"
    fi
    echo "$dir/best.safetensors"
}

for spec in ${backbones[@]+"${backbones[@]}"}; do
    bb=$spec
    if [[ $spec == wt2:* ]]; then bb=$(pretrain "${spec#wt2:}") || { [ -z "$stop" ] || stopped; exit 1; }; fi
    [ -z "$stop" ] || stopped
    # a run folder's checkpoint is named by its folder (runs/LM/best.safetensors: LM), a DistilBERT folder by itself
    tag=$( [ "$bb" = none ] && echo none || { [ -d "$bb" ] && basename "$bb" || basename "$(dirname "$bb")"; })
    for head in ${heads//,/ }; do
        if ! why=$("$GF" info --config "configs/snli/none-$head.json" 2>&1 >/dev/null); then
            echo "snli_study: skipping the $head head: ${why#grassflow: error: }" >&2
            continue
        fi
        for seed in ${seeds//,/ }; do
            dir="$out/$tag/$head/s$seed"
            if grep -q "^$tag	$head	$seed	" "$res"; then continue; fi
            start=$SECONDS
            if [ -f "$dir/state.safetensors" ]; then "$GF" train --resume "$dir" >"$dir.log" 2>"$dir.err"
            elif [ "$bb" = none ]; then
                mkdir -p "$(dirname "$dir")"
                "$GF" train "${recipe[@]}" --config "configs/snli/none-$head.json" --seed "$seed" --out "$dir" >"$dir.log" 2>"$dir.err"
            else
                mkdir -p "$(dirname "$dir")"
                "$GF" train "${recipe[@]}" --backbone "$bb" --head "configs/snli/head-$head.json" --freeze-backbone \
                    --seed "$seed" --out "$dir" >"$dir.log" 2>"$dir.err"
            fi
            line=$(tail -1 "$dir.log")
            params=$(sed -n 's/.*params \([0-9]*\).*/\1/p' <<<"$line")
            trainable=$(sed -n 's/.*trainable \([0-9]*\).*/\1/p' <<<"$line")
            dev=$(sed -n 's/.*dev accuracy \([0-9.]*\).*/\1/p' <<<"$line")
            test=$(sed -n 's/.*test accuracy \([0-9.]*\).*/\1/p' <<<"$line")
            printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$tag" "$head" "$seed" "$params" "$trainable" "$dev" "$test" \
                $((SECONDS - start)) >>"$res"
            echo "snli_study: $tag $head seed $seed: dev $dev test $test ($((SECONDS - start)) s)" >&2
            [ -z "$stop" ] || stopped
        done
    done
done
for done in "$out"/backbones/*/done; do
    if [ -f "$done" ]; then echo "backbone $(basename "$(dirname "$done")"): $(cat "$done")"; fi
done
GRASSFLOW=$GF /usr/bin/python3 - "$res" "$out" "$plot" <<'PYEOF'
import csv, json, math, os, statistics as st, sys
sys.path.insert(0, "scripts")
from plot_table import plot as plot_table
res, out, plot = sys.argv[1:4]
rows = list(csv.DictReader(open(res), delimiter="\t"))
groups = list(dict.fromkeys((r["backbone"], r["head"]) for r in rows))
print("| backbone | head | params | trainable | seeds | dev accuracy | test accuracy | wall per run |")
print("|---|---|---|---|---|---|---|---|")
for key in groups:
    g = [r for r in rows if (r["backbone"], r["head"]) == key]
    dev, test = [float(r["dev"]) for r in g], [float(r["test"]) for r in g]
    sd = lambda x: st.stdev(x) if len(x) > 1 else 0.0
    print("| %s | %s | %s | %s | %d | %.4f ± %.4f | %.4f ± %.4f | %.0f s |" % (key[0], key[1], g[0]["params"], g[0]["trainable"], len(g),
          st.mean(dev), sd(dev), st.mean(test), sd(test), st.mean(float(r["wall_s"]) for r in g)))
# the plot: dev accuracy after each epoch (172 steps), mean over the seeds whose metrics are there
colours = {"grassmann": ["#2b7bba", "#6baed6", "#08306b"], "transformer": ["#d7301f", "#fc8d59", "#7f0000"],
           "window": ["#238b45", "#74c476", "#00441b"], "performer": ["#6a51a3", "#9e9ac8", "#3f007d"]}
backbones = list(dict.fromkeys(b for b, _ in groups))
others = ["#e6a000", "#8c564b", "#17becf", "#bcbd22", "#e377c2", "#7f7f7f"]  # heads of a user's own configs


def colour(head, backbone):  # the four heads' hues, a shade per backbone; a user's own head a hue of its own
    if head in colours:
        return colours[head][backbones.index(backbone) % 3]
    own = list(dict.fromkeys(g[1] for g in groups if g[1] not in colours))
    return others[own.index(head) % len(others)]
series, epochs = [], 1
for b, h in groups:
    curves = []
    for r in rows:
        path = os.path.join(out, b, h, "s" + r["seed"], "metrics.jsonl")
        if (r["backbone"], r["head"]) == (b, h) and os.path.exists(path):
            ev = [json.loads(l) for l in open(path) if '"val_acc"' in l]
            curves.append({e["step"]: e["val_acc"] for e in ev})
    steps = sorted(set.intersection(*(set(c) for c in curves))) if curves else []
    pts = [(i + 1, st.mean(c[s] for c in curves)) for i, s in enumerate(steps)]
    epochs = max(epochs, len(pts))
    series += [{"series": "%s, %s head" % (b, h), "x": x, "y": y, "colour": colour(h, b)} for x, y in pts]
series += [{"series": "majority class", "x": x, "y": 3329 / 9842, "colour": "#999999", "dash": "6,4"} for x in (1, epochs)]
top = max(0.7, math.ceil(max(r["y"] for r in series) * 10 + 0.5) / 10)
counts = sorted({sum((r["backbone"], r["head"]) == g for r in rows) for g in groups})
seeds = "%d seed%s" % (counts[0], "s"[:counts[0] != 1]) if len(counts) == 1 else "each head's seeds, %d to %d" % (counts[0], counts[-1])
plot_table(plot, series, title="SNLI dev accuracy, 1%% train sample (mean of %s)" % seeds,
           xlabel="epoch", ylabel="dev accuracy", ymin=0.3, ymax=top)
print("\nplot: %s" % plot)
PYEOF
