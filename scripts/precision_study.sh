#!/usr/bin/env bash
# The quality of low precision (issue 28; docs/precision.md, "Quality"): bf16 training against fp32, and
# bf16 and int8 weights in generation, on WikiText-2 words with grassmann-6L.
#   bash scripts/precision_study.sh [--quick] [--out DIR] [PART...]     (PART: train, score, docs, status;
#                                                                         default train score docs)
# train  `grassflow compare --models grassmann-6L --corpus wikitext-2 --epochs 1 --batch 32 --seq-len 128
#        --eval-every 0 --seeds 1,2` twice: in fp32 (OUT/fp32) and with --precision bf16 (OUT/bf16)
# score  the fp32 run's seed-1 best checkpoint on the validation split with the streaming engine
#        (`eval --stream`) with fp32, bf16 and int8 weights, and greedy continuations (`generate
#        --temperature 0`) of three prompts with each, compared token for token with fp32's
# docs   the tables, the commands and the verdicts into docs/precision.md, the four runs' training curves into
#        docs/precision/bf16-training.svg (with --quick: OUT/quality.md, OUT/bf16-training.svg)
# status what is done and what is left
# Every step keeps its result as soon as it ends and a rerun skips it; compare continues a stopped run bit
# for bit. Stop it with Ctrl-C or `kill PID` (not kill -9). --quick: the same steps at toy sizes (a few
# steps of grassmann-tiny on corpora cut from the shipped data) into runs/precision-study-quick.
# Machine time on 2 cores: about 2 x 17 min (fp32) + 2 x 10 min (bf16) of training and 15 min of scoring
# on the AMD EPYC of 2026-11-26 (fp32 streaming is its slowest part there: 330 tokens/s).
{ # read whole before it runs
set -euo pipefail
cd "$(dirname "$0")/.."
GF=${GF:-build/grassflow}
PY=/usr/bin/python3
quick=0 out="" parts=()
while [ $# -gt 0 ]; do
    case $1 in
    --quick) quick=1; shift ;;
    --out) out=${2:?--out needs a folder}; shift 2 ;;
    train|score|docs|status) parts+=("$1"); shift ;;
    -h|--help) sed -n '2,/^{ #/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "precision_study: unknown argument '$1' (parts: train score docs status; --quick, --out DIR; --help)" >&2; exit 2 ;;
    esac
done
[ ${#parts[@]} -gt 0 ] || parts=(train score docs)
[ "$quick" = 1 ] && out=${out:-runs/precision-study-quick} || out=${out:-runs/precision-study}
[ -x "$GF" ] || { echo "precision_study: $GF is missing: build it first (make -j2 all)" >&2; exit 2; }
mkdir -p "$out"
if [ "$quick" = 1 ]; then
    corpus=$out/corpus
    mkdir -p "$corpus"
    for s in train:300 valid:40 test:40; do
        n=${s#*:} s=${s%:*}
        [ -s "$corpus/$s.txt" ] || { xz -dc "data/wikitext-2/$s.txt.xz" || true; } | head -n "$n" >"$corpus/$s.txt"
    done
    MODEL=grassmann-tiny RECIPE=(--corpus "$corpus" --tokenizer word --steps 4 --batch 4 --seq-len 32 --warmup 2 --eval-every 0 --seeds 1,2)
    GEN_TOKENS=8
else
    MODEL=grassmann-6L RECIPE=(--corpus wikitext-2 --epochs 1 --batch 32 --seq-len 128 --eval-every 0 --seeds 1,2)
    GEN_TOKENS=40
fi
PROMPTS=("The history of" "In 1995 , the" "The album was")
export MODEL

# a stop (SIGINT/SIGTERM: scripts/job.sh) reaches the job in progress, which saves its state; the study then ends
JOB_STOPPED="finished steps are kept; resume with: bash scripts/precision_study.sh$([ "$quick" = 1 ] && echo " --quick" || true) --out $out ${parts[*]}"
. scripts/job.sh
run_job() { # OUT ERR CMD...: CMD's stdout into OUT (kept only when it succeeds), stderr appended to ERR
    local o=$1 e=$2 rc=0
    shift 2
    job_run "$@" >"$o.tmp" 2>>"$e" || rc=$?
    if [ $rc = 0 ]; then mv "$o.tmp" "$o"; else rm -f "$o.tmp"; fi
    return $rc
}

train() { # the two compares; each continues where it stopped
    local p dir
    for p in fp32 bf16; do
        dir=$out/$p
        if [ -f "$dir/summary.json" ] && $PY -c 'import json,sys; sys.exit(0 if json.load(open(sys.argv[1])).get("complete") else 1)' "$dir/summary.json"; then
            continue
        fi
        local cmd=("$GF" compare --models "$MODEL" "${RECIPE[@]}" --out "$dir")
        [ $p = fp32 ] || cmd+=(--precision bf16)
        mkdir -p "$dir"
        printf '%s\n' "${cmd[*]}" >"$out/$p.command"
        echo "precision_study: ${cmd[*]}" >&2
        run_job "$out/$p.table" "$out/$p.err" "${cmd[@]}" || { echo "precision_study: the $p compare failed ($out/$p.err)" >&2; tail -3 "$out/$p.err" >&2; exit 1; }
    done
}

score() {
    local ck=$out/fp32/$MODEL/seed-1/best.safetensors w i
    [ -f "$ck" ] || { echo "precision_study: score waits for the fp32 training ($ck is missing)" >&2; return 0; }
    local ecorpus=(--corpus "${RECIPE[1]}") # the checkpoint carries its tokenizer
    for w in fp32 bf16 int8; do
        if [ ! -s "$out/score-$w.json" ]; then
            local cmd=("$GF" eval --ckpt "$ck" "${ecorpus[@]}" --split valid --stream --weights "$w" --json)
            printf '%s\n' "${cmd[*]}" >"$out/score-$w.command"
            echo "precision_study: ${cmd[*]}" >&2
            run_job "$out/score-$w.json" "$out/score.err" "${cmd[@]}" || { echo "precision_study: eval --weights $w failed ($out/score.err)" >&2; exit 1; }
        fi
        for i in "${!PROMPTS[@]}"; do
            [ -s "$out/greedy-$w-$i.txt" ] && continue
            run_job "$out/greedy-$w-$i.txt" "$out/score.err" "$GF" generate --ckpt "$ck" --prompt "${PROMPTS[$i]}" \
                --tokens $GEN_TOKENS --temperature 0 --weights "$w" || { echo "precision_study: generate --weights $w failed" >&2; exit 1; }
        done
    done
    printf '%s\n' "$GF generate --ckpt $ck --prompt PROMPT --tokens $GEN_TOKENS --temperature 0 --weights W" >"$out/greedy.command"
}

curves() { # the four training runs' curves in one plot (docs/precision/bf16-training.svg; with --quick, OUT's)
    local runs=() p s
    for s in 1 2; do for p in fp32 bf16; do
        [ -s "$out/$p/$MODEL/seed-$s/metrics.jsonl" ] && runs+=("$out/$p/$MODEL/seed-$s")
    done; done
    [ ${#runs[@]} -gt 0 ] || return 0
    local svg=docs/precision/bf16-training.svg
    [ "$quick" = 1 ] && svg=$out/bf16-training.svg
    mkdir -p "$(dirname "$svg")"
    "$GF" plot "${runs[@]}" --out "$svg" >/dev/null
}

for p in "${parts[@]}"; do
    case $p in
    train) train ;;
    score) score ;;
    status) $PY scripts/precision_study.py status "$out" ;;
    docs) curves; $PY scripts/precision_study.py docs "$out" "$([ "$quick" = 1 ] && echo "$out/quality.md" || echo docs/precision.md)" ;;
    esac
done
exit 0
}
