#!/usr/bin/env bash
# The mixer study (issue 27, item 5): which sequence mixer to pick, at which length, for which budget.
#   bash scripts/mixer_study.sh [--quick] [--out DIR] [--6L-from DIR] [--snli-from DIR] [PART...]
#   bash scripts/mixer_study.sh [--quick] [--out DIR] status | plan | docs
# PART is a, b, c, d (default: all four, then docs):
#   a  WikiText-2 words, the small size (d 128, 4 layers), 2 epochs, seeds 1 and 2: every variant of
#      configs/mixer-study (and the grassmann-small and transformer-small presets); perplexity, parameters,
#      training tokens/s and peak memory (the largest max RSS, /usr/bin/time, of the processes that ran it)
#   b  the best non-Transformer variant of (a) (lowest mean validation perplexity) at the 6-layer size
#      beside grassmann-6L and transformer-6L, 1 epoch (the README's one-epoch recipe); --6L-from DIR seeds
#      it with a finished compare of that recipe (e.g. runs/wt2-1ep; DIR is not changed: its checkpoints
#      are hard-linked, its other files copied). It
#      waits until every variant of (a) that this grassflow has is done; the choice is kept in OUT/b/best
#      (delete OUT/b to choose again, e.g. after a variant skipped before was run)
#   c  Tiny Shakespeare characters at L = 256, 1,024 and 4,096, the same training tokens at each length,
#      seed 1: grassmann, transformer, window, performer; streaming cost per token from bench generate;
#      the Pareto plots and where each mixer breaks even with the Transformer
#   d  the SNLI head study (scripts/snli_study.sh) with the window and performer heads beside the
#      Grassmann and Transformer heads, with no backbone and on the frozen WikiText-2 language model;
#      --snli-from DIR starts from a finished study of the same recipe (e.g. the README's runs/snli-study:
#      its runs and language model are read back; DIR is not changed)
# status   what is done and what is left, part by part (no training)
# plan     times a training step of every variant (grassflow bench train) and of grassmann-6L before and
#          after them, and estimates each part's machine time (OUT/plan.tsv; docs/mixers.md shows it)
# docs     the tables and plots from the results so far into docs/mixers.md (with --quick: OUT/mixers.md)
# Every run is a `grassflow compare` in its own folder under OUT (default runs/mixer-study): its results are
# kept as soon as it ends, and a rerun reads them back and continues a stopped one bit for bit. Stop the
# study with Ctrl-C or `kill PID` (SIGINT/SIGTERM; not kill -9): the run in progress saves its state.
# A variant whose mixer or key this grassflow does not have is skipped with the error that says so.
# --quick (or MIXER_STUDY_QUICK=1): the same steps at toy sizes (a few steps, short blocks, small corpora cut
# from the shipped data) into runs/mixer-study-quick, to check the machinery in minutes.
{ # the whole script is read before it runs: a file changed under a running study (a merge) does not change it
set -euo pipefail
cd "$(dirname "$0")/.."
GF=${GF:-build/grassflow}
quick=${MIXER_STUDY_QUICK:-0} out="" from6="" from_snli="" parts=()
while [ $# -gt 0 ]; do
    case $1 in
    --quick) quick=1; shift ;;
    --out) out=$2; shift 2 ;;
    --6L-from) from6=$2; shift 2 ;;
    --snli-from) from_snli=$2; shift 2 ;;
    a|b|c|d|status|plan|docs) parts+=("$1"); shift ;;
    all) parts+=(a b c d docs); shift ;;
    -h|--help) sed -n '2,/^{ #/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "mixer_study: unknown argument '$1' (parts: a b c d status plan docs; --help)" >&2; exit 2 ;;
    esac
done
[ ${#parts[@]} -gt 0 ] || parts=(a b c d docs)
[ "$quick" = 1 ] && out=${out:-runs/mixer-study-quick} || out=${out:-runs/mixer-study}
[ -x "$GF" ] || { echo "mixer_study: $GF is missing: build it first (make -j2 all)" >&2; exit 2; }
mkdir -p "$out"
PY=/usr/bin/python3
CFG=configs/mixer-study

# ---- the study's sizes (full, or --quick) -------------------------------------------------------------
# the variants of (a): name|model (a preset, or a config file)
A_VARIANTS="grassmann-small|grassmann-small
transformer-small|transformer-small
window-small|window-small
performer-small|performer-small
grassmann-small-noplucker|$CFG/grassmann-small-noplucker.json
grassmann-small-nogate|$CFG/grassmann-small-nogate.json
hybrid-last-small|hybrid-last-small
hybrid-middle-small|hybrid-middle-small
hybrid-window-small|hybrid-window-small"
# the variants of (c), on characters, and the window every (c) window layer has
C_VARIANTS="grassmann-small|grassmann-small
transformer-small|transformer-small
window-small|window-small
performer-small|performer-small"
C_LENS_FULL="256 1024 4096" C_TOKENS_FULL=8192 C_STEPS_FULL=600 # (c): lengths, tokens a step, steps
if [ "$quick" = 1 ]; then
    WT2=$out/corpora/wikitext-2 TS=$out/corpora/tinyshakespeare
    A_RECIPE=(--corpus "$WT2" --tokenizer word --steps 4 --batch 4 --seq-len 32 --warmup 2 --eval-every 0 --seeds 1,2)
    B_RECIPE=(--corpus "$WT2" --tokenizer word --steps 2 --batch 4 --seq-len 32 --warmup 1 --eval-every 0)
    C_LENS="32 64 128" C_TOKENS=256 C_STEPS=4 C_WINDOW=16 C_GEN=8
    C_RECIPE=(--corpus "$TS" --tokenizer char --steps $C_STEPS --lr 2e-3 --min-lr 2e-4 --warmup 2 --dropout 0.1
              --eval-every 0 --seed 1)
    D_ARGS=(--seeds 1 --steps 6 --backbone none --backbone wt2:grassmann-small --lm-steps 4)
else
    A_RECIPE=(--corpus wikitext-2 --epochs 2 --batch 32 --seq-len 128 --seeds 1,2)
    B_RECIPE=(--corpus wikitext-2 --epochs 1 --batch 32 --seq-len 128 --eval-every 0)
    C_LENS=$C_LENS_FULL C_TOKENS=$C_TOKENS_FULL C_STEPS=$C_STEPS_FULL C_WINDOW=128 C_GEN=64
    C_RECIPE=(--corpus tinyshakespeare --steps $C_STEPS --lr 2e-3 --min-lr 2e-4 --warmup 100 --dropout 0.1
              --eval-every 0 --seed 1)
    D_ARGS=(--backbone none --backbone wt2:grassmann-small)
fi
D_HEADS="grassmann transformer window performer"
export A_VARIANTS C_VARIANTS C_LENS C_WINDOW C_GEN C_TOKENS C_STEPS C_TOKENS_FULL C_STEPS_FULL QUICK=$quick

# ---- running one job (scripts/job.sh: its own process group, so that a stop reaches it; a stop ends the study)
JOB_STOPPED="every finished run is kept, the one in progress saved its state; resume with: bash scripts/mixer_study.sh$([ "$quick" = 1 ] && echo " --quick" || true) --out $out ${parts[*]}"
. scripts/job.sh
trap 'echo "mixer_study: stopped by an error at line $LINENO (above)" >&2' ERR
# run_job LOG ERR CMD...: CMD as a job (appending to LOG and ERR), waited for; its exit status
run_job() {
    local log=$1 err=$2
    shift 2
    job_run "$@" >>"$log" 2>>"$err"
}

# why a model (preset or config file; or a comma-separated list of them) cannot be built by this grassflow
# ("" if it can)
missing() {
    local m flag
    for m in ${1//,/ }; do
        [[ $m == *.json ]] && flag=--config || flag=--model
        "$GF" info "$flag" "$m" --vocab 65 2>&1 >/dev/null | head -1 | sed 's/^grassflow: error: //; s/; the keys are.*//' || true
    done | head -1
}
failed=0

# unit DIR MODEL COMPARE-ARGS...: `grassflow compare --models MODEL ARGS --out DIR/runs` unless its summary
# says it is complete; DIR/command holds the command, DIR/maxrss_kb every session's peak resident memory.
unit() {
    local dir=$1 model=$2 why
    shift 2
    why=$(missing "$model")
    if [ -n "$why" ]; then
        echo "mixer_study: skipping $dir: $why" >&2
        mkdir -p "$dir" && printf '%s\n' "$why" >"$dir/skipped"
        return 0
    fi
    rm -f "$dir/skipped"
    if $PY scripts/mixer_study.py complete "$dir/runs"; then return 0; fi
    mkdir -p "$dir"
    local cmd=("$GF" compare --models "$model" "$@" --out "$dir/runs")
    printf '%s\n' "${cmd[*]}" >"$dir/command"
    echo "mixer_study: $dir: ${cmd[*]}" >&2
    local start=$SECONDS
    if run_job "$dir/log" "$dir/err" /usr/bin/time -f '%M' -a -o "$dir/maxrss_kb" "${cmd[@]}"; then
        echo "mixer_study: $dir done ($((SECONDS - start)) s)" >&2
    else
        echo "mixer_study: $dir FAILED ($dir/err):" >&2
        tail -3 "$dir/err" >&2
        failed=$((failed + 1))
    fi
}

# seed_from SRC DST: DST a copy of the finished runs in SRC, SRC unchanged: the checkpoints hard-linked (grassflow
# replaces a checkpoint by a rename, never writes into one), every other file (summaries, metrics, logs, to
# which a continued run appends) copied
seed_from() {
    mkdir -p "$(dirname "$2")"
    rm -rf "$2.tmp"
    if cp -al "$1" "$2.tmp" 2>/dev/null; then
        find "$2.tmp" -type f ! -name '*.safetensors' -exec sh -c 'for f; do cp -p "$f" "$f.copy" && mv "$f.copy" "$f"; done' _ {} +
    else
        rm -rf "$2.tmp" && cp -a "$1" "$2.tmp"
    fi
    mv "$2.tmp" "$2"
}

# ---- the parts -------------------------------------------------------------------------------------------
quick_corpora() { # small corpora cut from the shipped data (the same vocabulary-building code paths)
    [ "$quick" = 1 ] || return 0
    local s n
    mkdir -p "$WT2" "$TS"
    for s in train:400 valid:60 test:60; do
        n=${s#*:} s=${s%:*}
        [ -s "$WT2/$s.txt" ] || { xz -dc "data/wikitext-2/$s.txt.xz" || true; } | head -n "$n" >"$WT2/$s.txt"
    done
    if [ ! -s "$TS/test.txt" ]; then
        { xz -dc data/tinyshakespeare/input.txt.xz || true; } | head -c 60000 >"$TS/train.txt"
        xz -dc data/tinyshakespeare/input.txt.xz | tail -c 8000 | { head -c 4000 || true; } >"$TS/valid.txt"
        xz -dc data/tinyshakespeare/input.txt.xz | tail -c 4000 >"$TS/test.txt"
    fi
}

part_a() {
    local name model
    while IFS='|' read -r name model; do
        unit "$out/a/$name" "$model" "${A_RECIPE[@]}"
    done <<<"$A_VARIANTS"
}

part_b() {
    local best dir=$out/b
    if [ -f "$dir/best" ]; then best=$(cat "$dir/best")
    else # the best small variant's model, at the 6-layer size: its name with -small as -6L
        best=$($PY scripts/mixer_study.py best "$out") || { echo "mixer_study: part b waits for part a (above)" >&2; return 0; }
        best=${best/-small/-6L}
        mkdir -p "$dir" && echo "$best" >"$dir/best"
    fi
    local models=grassmann-6L,transformer-6L
    [ "$best" = grassmann-6L ] || models+=",$best"
    if [ -n "$from6" ] && [ ! -e "$dir/runs" ]; then
        [ -f "$from6/summary.json" ] || { echo "mixer_study: --6L-from $from6 holds no compare (summary.json)" >&2; exit 2; }
        seed_from "$from6" "$dir/runs"
        echo "mixer_study: part b starts from the runs of $from6 (copied into $dir/runs)" >&2
    fi
    unit "$dir" "$models" "${B_RECIPE[@]}" --reference transformer-6L
}

part_c() {
    local L name model sets
    for L in $C_LENS; do
        while IFS='|' read -r name model; do
            sets=(--set max_len=$L)
            [[ $name == window* ]] && sets+=(--set window=$C_WINDOW)
            unit "$out/c/L$L/$name" "$model" "${C_RECIPE[@]}" --seq-len "$L" --batch $((C_TOKENS / L)) "${sets[@]}"
            stream_cost "$out/c/L$L/$name" "$model" "$L" "${sets[@]}"
        done <<<"$C_VARIANTS"
    done
}

# the streaming cost per token at the end of a context of L: bench generate at position L - C_GEN
stream_cost() {
    local dir=$1 model=$2 L=$3 flag=--model
    shift 3
    [ ! -f "$dir/skipped" ] && [ ! -s "$dir/stream.json" ] || return 0
    [[ $model == *.json ]] && flag=--config
    local cmd=("$GF" bench generate "$flag" "$model" --vocab 65 "$@" --positions $((L - C_GEN)) --tokens $C_GEN --json)
    printf '%s\n' "${cmd[*]}" >"$dir/stream.command"
    rm -f "$dir/stream.tmp"
    if run_job "$dir/stream.tmp" "$dir/stream.err" "${cmd[@]}"; then mv "$dir/stream.tmp" "$dir/stream.json"
    else echo "mixer_study: $dir: bench generate FAILED ($dir/stream.err)" >&2; failed=$((failed + 1)); fi
}

part_d() {
    local heads=() h why skipped=""
    for h in $D_HEADS; do
        why=$(missing "configs/snli/none-$h.json")
        if [ -n "$why" ]; then echo "mixer_study: skipping the SNLI $h head: $why" >&2; skipped+=" $h"
        else heads+=("$h"); fi
    done
    if [ -n "$from_snli" ] && [ ! -e "$out/d" ]; then
        [ -f "$from_snli/results.tsv" ] || { echo "mixer_study: --snli-from $from_snli holds no SNLI study (results.tsv)" >&2; exit 2; }
        seed_from "$from_snli" "$out/d"
        echo "mixer_study: part d starts from the runs of $from_snli (copied into $out/d)" >&2
    fi
    mkdir -p "$out/d"
    rm -f "$out/d/table.md" # until this run of the study ends
    if [ -n "$skipped" ]; then echo "${skipped# }" >"$out/d/skipped"; else rm -f "$out/d/skipped"; fi
    local cmd=(bash scripts/snli_study.sh "${D_ARGS[@]}" --heads "$(IFS=,; echo "${heads[*]}")" --out "$out/d")
    printf '%s\n' "${cmd[*]}" >"$out/d/command"
    rm -f "$out/d/table.tmp"
    echo "mixer_study: $out/d: ${cmd[*]}" >&2
    if run_job "$out/d/table.tmp" "$out/d/err" env GF="$GF" "${cmd[@]}"; then mv "$out/d/table.tmp" "$out/d/table.md"
    else echo "mixer_study: the SNLI study FAILED ($out/d/err):" >&2; tail -3 "$out/d/err" >&2; failed=$((failed + 1)); fi
}

# the tokens/s of a few training steps of every variant, at each part's shape
plan() {
    local name model L sets res=$out/plan.tsv
    printf 'part\tvariant\tbatch\tseq_len\ttokens_per_s\n' >"$res.tmp"
    probe() { # part name model batch L [--set ...]
        local p=$1 n=$2 m=$3 B=$4 L=$5 f=--model
        shift 5
        [[ $m == *.json ]] && f=--config
        [ -z "$(missing "$m")" ] || { echo "mixer_study: plan: no $n ($(missing "$m"))" >&2; return 0; }
        local tps
        tps=$("$GF" bench train "$f" "$m" "$@" --batch "$B" --seq-len "$L" --steps 1 --json | sed -n 's/.*"tokens_per_s": \([0-9.]*\).*/\1/p')
        printf '%s\t%s\t%s\t%s\t%s\n' "$p" "$n" "$B" "$L" "$tps" >>"$res.tmp"
        echo "mixer_study: plan: $p $n B $B L $L: $tps tokens/s" >&2
    }
    probe ref grassmann-6L grassmann-6L 32 128 # the reference, before and after: how busy the machine is
    while IFS='|' read -r name model; do probe a "$name" "$model" 32 128; done <<<"$A_VARIANTS"
    while IFS='|' read -r name model; do probe b "${name/-small/-6L}" "${model/-small/-6L}" 32 128; done <<<"$A_VARIANTS"
    for L in $C_LENS_FULL; do
        while IFS='|' read -r name model; do
            sets=(--vocab 65 --set max_len=$L)
            [[ $name == window* ]] && sets+=(--set window=128) # part c's window, as C_WINDOW is in full
            probe c "$name L=$L" "$model" $((C_TOKENS_FULL / L)) "$L" "${sets[@]}"
        done <<<"$C_VARIANTS"
    done
    probe ref grassmann-6L grassmann-6L 32 128
    mv "$res.tmp" "$res"
    printf 'Measured on %s on %s (%s cores; the 1-minute load average was %s as it ended, its own %s threads included).\n' \
        "$(date -u +%Y-%m-%d)" "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)" "$(nproc --all)" \
        "$(cut -d' ' -f1 /proc/loadavg)" "$(nproc)" >"$out/plan.machine"
}

for p in "${parts[@]}"; do
    case $p in
    a) quick_corpora; part_a ;;
    b) quick_corpora; part_b ;;
    c) quick_corpora; part_c ;;
    d) part_d ;;
    plan) plan ;;
    status) $PY scripts/mixer_study.py status "$out" ;;
    docs) if [ "$quick" = 1 ]; then GRASSFLOW=$GF $PY scripts/mixer_study.py docs "$out" "$out/mixers.md"
          else GRASSFLOW=$GF $PY scripts/mixer_study.py docs "$out" docs/mixers.md docs/paper.md; fi ;;
    esac
done
[ "$failed" = 0 ] || { echo "mixer_study: $failed job(s) failed (above); rerun to retry them" >&2; exit 1; }
exit 0
}
