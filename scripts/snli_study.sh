#!/usr/bin/env bash
# The SNLI study (issue 12, item 6): the Grassmann-Plücker head against the Transformer head, on each
# backbone, over seeds, with one recipe; writes OUT/results.tsv and prints a markdown table (mean and
# sample standard deviation of the best checkpoint's dev and test accuracy over the seeds).
#   bash scripts/snli_study.sh [--seeds 1,2,3] [--epochs N] [--backbone none|CKPT]... [--out DIR]
# Backbone "none": the configs/snli/none-*.json models (the heads' layers on the token embeddings, trained
# end to end); a grassflow checkpoint or a Hugging Face DistilBERT folder: configs/snli/head-*.json on it,
# frozen. A run that was stopped resumes; a finished one is not run again.
set -euo pipefail
cd "$(dirname "$0")/.."
GF=${GF:-build/grassflow}
seeds=1,2,3 epochs=5 out=runs/snli-study backbones=()
while [ $# -gt 0 ]; do
    case $1 in
    --seeds) seeds=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    --backbone) backbones+=("$2"); shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "snli_study: unknown argument $1" >&2; exit 2 ;;
    esac
done
[ ${#backbones[@]} -gt 0 ] || backbones=(none)
mkdir -p "$out"
recipe=(--task snli --corpus snli --epochs "$epochs" --batch 32 --lr 5e-4 --warmup 100 --eval-every 172)
res="$out/results.tsv"
[ -f "$res" ] || printf 'backbone\thead\tseed\tparams\ttrainable\tdev\ttest\twall_s\n' >"$res"
if ! head -1 "$res" | grep trainable >/dev/null; then # results of before the trainable column: all trainable
    awk -F'\t' -v OFS='\t' 'NR == 1 { $4 = $4 OFS "trainable" } NR > 1 { $4 = $4 OFS $4 } 1' "$res" >"$res.new" && mv "$res.new" "$res"
fi
for bb in "${backbones[@]}"; do
    # a run folder's checkpoint is named by its folder (runs/LM/best.safetensors: LM), a DistilBERT folder by itself
    tag=$( [ "$bb" = none ] && echo none || { [ -d "$bb" ] && basename "$bb" || basename "$(dirname "$bb")"; })
    for head in grassmann transformer; do
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
        done
    done
done
/usr/bin/python3 - "$res" <<'PYEOF'
import csv, statistics as st, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
print("| backbone | head | params | trainable | seeds | dev accuracy | test accuracy | wall per run |")
print("|---|---|---|---|---|---|---|---|")
for key in dict.fromkeys((r["backbone"], r["head"]) for r in rows):
    g = [r for r in rows if (r["backbone"], r["head"]) == key]
    dev, test = [float(r["dev"]) for r in g], [float(r["test"]) for r in g]
    sd = lambda x: st.stdev(x) if len(x) > 1 else 0.0
    print("| %s | %s | %s | %s | %d | %.4f ± %.4f | %.4f ± %.4f | %.0f s |" % (key[0], key[1], g[0]["params"], g[0]["trainable"], len(g),
          st.mean(dev), sd(dev), st.mean(test), sd(test), st.mean(float(r["wall_s"]) for r in g)))
PYEOF
