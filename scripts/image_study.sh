#!/usr/bin/env bash
# The image study (issue 53, docs/images.md): every mixer over the 49 patches (4 x 4) of Fashion-MNIST's 28 x 28
# images, at about 0.4M parameters each (configs/image-study: d 96, 6 pre-norm layers, d_ff 192; the ViT of the
# issue's anchor), three seeds each, one recipe (EPOCHS epochs of the full training split, default 10, batch
# 128, AdamW lr 1e-3 cosine to 6e-5, no augmentation), and a softmax regression on the pixels as the linear
# baseline (scripts/image_linear.py, numpy). One run after another, each resumable (OMP_NUM_THREADS=1 leaves
# the other core free; two lists in two shells use both). A run takes about 20 minutes on one quiet core:
# many hours in all, so run it niced, and stop it with Ctrl-C or `kill PID` (scripts/job.sh: its state is saved).
#   bash scripts/image_study.sh run     train (or continue) each run into $IMG_OUT/NAME-sSEED (default
#                                       runs/image-state, kept out of git), then score its best checkpoint on
#                                       the test split (test.json) and time inference at batch 1 and 256
#                                       (infer-b1.json, infer-b256.json); RUNS="name:seed ..." picks some
#   bash scripts/image_study.sh sync    copy what the runs have into runs/image-study (kept in git) and write
#                                       its summary.md (python3 scripts/image_table.py), accuracy.svg (each
#                                       seed's test accuracy) and curves.svg (seed 1234's curves, by time)
#   bash scripts/image_study.sh linear  the linear baseline, three seeds: runs/image-study/linear-sSEED.json
# IMG_CORPUS (default fashion-mnist) and IMG_KEEP (default runs/image-study) point a trial elsewhere; IMG_EXTRA adds
# train flags to a new run's recipe (for example "--crop 2 --flip true": augmentation; a resumed run keeps its own).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/job.sh # job_run: Ctrl-C or `kill PID` stops the run in progress, its state saved
GF=${GF:-build/grassflow}
OUT=${IMG_OUT:-runs/image-state}
KEEP=${IMG_KEEP:-runs/image-study}
EPOCHS=${EPOCHS:-10}
CORPUS=${IMG_CORPUS:-fashion-mnist}
EVERY=500 # on the full set, an evaluation on valid every epoch (54,000 / 128 = 422 steps)
[ "$CORPUS" = fashion-mnist ] && EVERY=422
RECIPE=(--corpus "$CORPUS" --epochs "$EPOCHS" --batch 128 --lr 1e-3 --eval-every "$EVERY")
read -r -a EXTRA <<<"${IMG_EXTRA:-}"
RECIPE+=("${EXTRA[@]}")
NAMES="attention token-mlp grassmann-grid grassmann-raster window performer linformer"
SEEDS=${SEEDS:-1234 2 3}
if [ -z "${RUNS:-}" ]; then
    RUNS=""
    for s in $SEEDS; do for n in $NAMES; do RUNS+="$n:$s "; done; done
fi

train_one() { # name seed
    local dir="$OUT/$1-s$2" cfg="configs/image-study/$1.json" rc=0
    [ -f "$cfg" ] || { echo "image_study.sh: no $cfg (the models: $NAMES)" >&2; exit 2; }
    [ -f "$dir/done" ] && return 0
    if [ -f "$dir/state.safetensors" ]; then
        job_run "$GF" train --resume "$dir" || rc=$?
    else
        job_run "$GF" train --task image --config "$cfg" "${RECIPE[@]}" --seed "$2" --out "$dir" || rc=$?
    fi
    [ "$rc" = 0 ] || exit "$rc" # failed: no later run starts (a stop ends the study in job_stop)
    touch "$dir/done"
}

score_one() { # name seed: the test split, then inference at batch 1 and 256 (the test split's forward passes)
    local dir="$OUT/$1-s$2" f
    [ -f "$dir/done" ] || return 0
    for what in test:16 infer-b1:1 infer-b256:256; do
        f="$dir/${what%%:*}.json"
        [ -s "$f" ] && continue
        "$GF" eval --ckpt "$dir/best.safetensors" --corpus "$CORPUS" --split test --batch "${what##*:}" --json >"$f.tmp"
        mv "$f.tmp" "$f"
    done
}

case "${1:-}" in
run)
    mkdir -p "$OUT"
    for r in $RUNS; do
        train_one "${r%%:*}" "${r##*:}"
        score_one "${r%%:*}" "${r##*:}"
    done
    ;;
sync)
    mkdir -p "$KEEP"
    for r in $RUNS; do
        name="${r%%:*}-s${r##*:}" dir="$OUT/${r%%:*}-s${r##*:}"
        [ -f "$dir/metrics.jsonl" ] || continue
        mkdir -p "$KEEP/$name"
        cp "$dir/metrics.jsonl" "$KEEP/$name/"
        [ -f "$dir/best.safetensors" ] && "$GF" info --ckpt "$dir/best.safetensors" --json >"$KEEP/$name/info.json"
        for f in test infer-b1 infer-b256; do [ -f "$dir/$f.json" ] && cp "$dir/$f.json" "$KEEP/$name/"; done
    done
    python3 scripts/image_table.py "$KEEP" "$EPOCHS" >"$KEEP/summary.md.tmp" && mv "$KEEP/summary.md.tmp" "$KEEP/summary.md"
    "$GF" plot --table "$KEEP/accuracy.tsv" --kind bars --title "Fashion-MNIST test accuracy, each seed" \
        --ylabel "test accuracy (%)" --ymin 80 --ymax 92 --out "$KEEP/accuracy.svg"
    firsts=() # the validation curves of each model's first seed
    for n in $NAMES; do [ -f "$KEEP/$n-s1234/metrics.jsonl" ] && firsts+=("$KEEP/$n-s1234"); done
    [ ${#firsts[@]} -gt 0 ] && "$GF" plot "${firsts[@]}" --metric loss,accuracy --x time --out "$KEEP/curves.svg"
    cat "$KEEP/summary.md"
    ;;
linear)
    mkdir -p "$KEEP"
    for s in $SEEDS; do
        f="$KEEP/linear-s$s.json"
        [ -s "$f" ] || { /usr/bin/python3 scripts/image_linear.py --seed "$s" >"$f.tmp" && mv "$f.tmp" "$f"; }
    done
    ;;
*)
    awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
    ;;
esac
