#!/usr/bin/env bash
# The G2P study (issue 52, docs/seq2seq.md): every encoder-decoder family on the whole of CMUdict 0.4 (festlex-cmu:
# 95,047 training words, 5,281 valid, 5,336 test), stress stripped (--stress strip, as the published CMUdict
# results score: a vowel without its stress digit; Festival's 0.4 has 40 phonemes so, CMUdict's 39 and its
# schwa ax, which CMUdict writes ah0), two seeds (the default 1234, and 2),
# one recipe (EPOCHS epochs of 32 words, default 5, lr 1e-3, the defaults otherwise), one run after another, each
# resumable. A run of other than 5 epochs is its own family, NAME-eEPOCHS (EPOCHS=15 RUNS=gru-bahdanau:1234 trains
# gru-bahdanau-e15-s1234; give sync and score the same EPOCHS). G2P_EXTRA adds train flags to a new run's recipe,
# and G2P_TAG names such a family: G2P_TAG=w2000 G2P_EXTRA="--warmup 2000" RUNS=transformer:1234 trains
# transformer-w2000-s1234 (a resumed run keeps its own flags). OMP_NUM_THREADS=1 leaves the other core free; two
# RUNS lists in two shells use both.
# *Why 5 epochs:* a run's state lives on the machine that trains it, and a machine lasts a sitting of about
# three hours; 5 epochs take about an hour on one core, so a run ends where it began. (runs/g2p-study-v1 keeps
# the first plan's run, 15 epochs with stress kept, which stopped at 10.5 when its machine went.)
# G2P_LEXICON reads another lexicon: CMUdict 0.7b itself, stress stripped, is Debian's pocketsphinx-en-us
# (G2P_LEXICON=/usr/share/pocketsphinx/model/en-us/cmudict-en-us.dict, with a G2P_TAG of its own, and
# G2P_EXTRA="--alternates all" to train on every pronunciation of a word and count a decoded word right when it is
# any of them).
# Stop it with Ctrl-C or `kill PID` (SIGINT or SIGTERM to the script, scripts/job.sh: the state is saved); the
# same command continues where it stopped, on the same machine.
#   bash scripts/g2p_study.sh run     train (or continue) each run into $G2P_OUT (default runs/g2p-state, kept
#                                     out of git), then score it (below); RUNS="name:seed ..." picks some
#                                     (default: all, in order)
#   bash scripts/g2p_study.sh score   each finished run's best checkpoint (by validation loss) on test, decoded
#                                     greedily and by beam search (beam 5): $G2P_OUT/NAME-sSEED/test-*.json
#   bash scripts/g2p_study.sh sync    copy what the runs have into runs/g2p-study (kept in git): each run's
#                                     metrics.jsonl and test scores, each ensemble's, and the table summary.md
#                                     (G2P_KEEP points a trial elsewhere)
#   ENSEMBLE="RUN RUN ..." bash scripts/g2p_study.sh ensemble
#                                     finished runs (folder names under $G2P_OUT, e.g. gru-bahdanau-cmu07-s1234)
#                                     decoding as one model (eval --ensemble: each phoneme's probability the
#                                     mean of theirs) on test, greedily and by beam 5, with the first run's data
#                                     options: $G2P_OUT/ensemble+RUN+RUN.../test-*.json
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/job.sh # job_run: Ctrl-C or `kill PID` stops the run in progress, its state saved
GF=${GF:-build/grassflow}
OUT=${G2P_OUT:-runs/g2p-state}
KEEP=${G2P_KEEP:-runs/g2p-study}
LEX=${G2P_LEXICON:-/usr/share/festival/dicts/cmu/cmudict-0.4.out}
EPOCHS=${EPOCHS:-5}
RECIPE=(--epochs "$EPOCHS" --batch 32 --lr 1e-3 --stress strip)
read -r -a EXTRA <<<"${G2P_EXTRA:-}"
RECIPE+=("${EXTRA[@]}")
TAG=${G2P_TAG:-}
[ -n "${G2P_EXTRA:-}" ] && [ -z "$TAG" ] && { echo "g2p_study.sh: G2P_EXTRA needs G2P_TAG, the name of its family" >&2; exit 2; }
# name|preset (or a config file, *.json)|--set options: each family once per seed
FAMILIES=(
    "gru-luong|gru-g2p|"
    "transformer|transformer-g2p|"
    "grassmann|grassmann-g2p|"
    "gru-none|gru-g2p|attention=none"
    "gru-bahdanau|gru-g2p|attention=bahdanau"
    "gru-bahdanau-512|configs/g2p/gru-bahdanau-512.json|"
)
ALL="transformer:1234 grassmann:1234 gru-luong:1234 gru-none:1234 transformer:2 grassmann:2 gru-bahdanau:1234 gru-luong:2
     gru-none:2 gru-bahdanau:2"
RUNS=${RUNS:-$ALL}

run_dir() { # name seed -> the run's folder under $OUT (and its name under runs/g2p-study)
    local tag=""
    [ -z "$TAG" ] || tag="-$TAG"
    [ "$EPOCHS" = 5 ] || tag="$tag-e$EPOCHS"
    echo "$OUT/$1$tag-s$2"
}

family() { # name -> "preset|sets"
    for f in "${FAMILIES[@]}"; do [ "${f%%|*}" = "$1" ] && { echo "${f#*|}"; return; }; done
    echo "g2p_study.sh: no family '$1' (the families: gru-luong transformer grassmann gru-none gru-bahdanau gru-bahdanau-512)" >&2
    exit 2
}

train_one() { # name seed
    local dir spec preset sets args=()
    dir=$(run_dir "$1" "$2")
    [ -f "$dir/done" ] && return 0
    spec=$(family "$1") preset=${spec%%|*} sets=${spec#*|}
    case $preset in *.json) args+=(--config "$preset") ;; *) args+=(--model "$preset") ;; esac
    for s in ${sets//,/ }; do args+=(--set "$s"); done
    local rc=0 # (explicit: set -e does not reach inside a function called from a condition)
    if [ -f "$dir/state.safetensors" ]; then
        job_run "$GF" train --resume "$dir" || rc=$?
    else
        job_run "$GF" train --task g2p "${args[@]}" --corpus "$LEX" "${RECIPE[@]}" --seed "$2" \
            --out "$dir" || rc=$?
    fi
    [ "$rc" = 0 ] || exit "$rc" # failed: no later run starts (a stop ends the study in job_stop)
    touch "$dir/done"
}

score_one() { # name seed
    local dir f
    dir=$(run_dir "$1" "$2")
    [ -f "$dir/done" ] || return 0
    for beam in 1 5; do
        f="$dir/test-beam$beam.json"
        [ -s "$f" ] && continue
        "$GF" eval --ckpt "$dir/best.safetensors" --corpus "$LEX" --split test --beam "$beam" --json >"$f.tmp" || exit
        mv "$f.tmp" "$f"
    done
}

ensemble_score() { # $ENSEMBLE (run folders under $OUT, each finished) decoded as one on test
    local first="" rest="" name="ensemble" d beam f
    for r in ${ENSEMBLE:-}; do
        d="$OUT/$r"
        [ -f "$d/done" ] || { echo "g2p_study.sh: $d has not finished (no $d/done); an ensemble takes finished runs" >&2; exit 2; }
        if [ -z "$first" ]; then first="$d/best.safetensors"; else rest="$rest${rest:+,}$d/best.safetensors"; fi
        name="$name+$r"
    done
    [ -n "$rest" ] || { echo "g2p_study.sh: ENSEMBLE names ${ENSEMBLE:-no run}; an ensemble takes two runs or more" >&2; exit 2; }
    mkdir -p "$OUT/$name"
    for beam in 1 5; do
        f="$OUT/$name/test-beam$beam.json"
        [ -s "$f" ] && continue
        "$GF" eval --ckpt "$first" --ensemble "$rest" --corpus "$LEX" --split test --beam "$beam" --json >"$f.tmp" || exit
        mv "$f.tmp" "$f"
    done
}

case "${1:-}" in
ensemble)
    ensemble_score
    ;;
run)
    case $LEX in */pocketsphinx/*) pkg=pocketsphinx-en-us ;; *) pkg=festlex-cmu ;; esac
    [ -f "$LEX" ] || { echo "g2p_study.sh: $LEX is missing; apt-get install $pkg (or set G2P_LEXICON)" >&2; exit 2; }
    mkdir -p "$OUT"
    for r in $RUNS; do
        train_one "${r%%:*}" "${r##*:}"
        score_one "${r%%:*}" "${r##*:}"
    done
    ;;
score)
    for r in $RUNS; do score_one "${r%%:*}" "${r##*:}"; done
    ;;
sync)
    mkdir -p "$KEEP"
    for r in $RUNS; do
        dir=$(run_dir "${r%%:*}" "${r##*:}")
        name=${dir##*/}
        [ -f "$dir/metrics.jsonl" ] || continue
        mkdir -p "$KEEP/$name"
        cp "$dir/metrics.jsonl" "$KEEP/$name/"
        [ -f "$dir/best.safetensors" ] && "$GF" info --ckpt "$dir/best.safetensors" --json >"$KEEP/$name/info.json"
        for f in "$dir"/test-beam*.json; do [ -f "$f" ] && cp "$f" "$KEEP/$name/"; done
    done
    for d in "$OUT"/ensemble+*; do
        [ -d "$d" ] || continue
        mkdir -p "$KEEP/${d##*/}"
        for f in "$d"/test-beam*.json; do [ -f "$f" ] && cp "$f" "$KEEP/${d##*/}/"; done
    done
    python3 scripts/g2p_table.py "$KEEP" >"$KEEP/summary.md.tmp" && mv "$KEEP/summary.md.tmp" "$KEEP/summary.md"
    ;;
*)
    awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
    ;;
esac
