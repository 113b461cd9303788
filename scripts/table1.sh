#!/usr/bin/env bash
# The paper's Table 1 at its budget (issue 51): grassmann-6L against transformer-6L, the BERT WordPiece
# vocabulary (WikiText's <unk> read as one [UNK]), block 128, batch 32, 30 epochs, evaluated every epoch
# (540 steps), one compare that resumes where it stopped. Many hours: run it niced in the background, and
# stop it with Ctrl-C (or SIGTERM), which saves the state; the same command continues it.
#   bash scripts/table1.sh run      train (or continue) into $TABLE1_OUT (default runs/table1-state, whose
#                                   checkpoints stay out of git); PRECISION=fp32|fp32-fast|bf16 (default: bf16
#                                   where the CPU has AVX512_BF16, else fp32-fast; a resume keeps what the
#                                   run was started with)
#   bash scripts/table1.sh sync     copy what the run has so far into runs/table1 (kept in git): the summary,
#                                   each model's metrics.jsonl and curves.svg, drawn by grassflow plot
#   bash scripts/table1.sh score    each model's best checkpoint (the epoch of its best tokenized validation
#                                   loss) on the tokenized and the raw text (wikitext-2, wikitext-2-raw), valid
#                                   and test, under grassflow's protocol (stride) and the reproductions' (chunks
#                                   of 128 with [CLS]/[SEP] once): runs/table1/scores.{tsv,md}; a model whose
#                                   checkpoint is not in $TABLE1_OUT keeps the rows it has there
#   bash scripts/table1.sh replay MODEL STEP
#                                   a state lost with its machine: train MODEL alone again from scratch, with
#                                   the compare's recipe, up to STEP (the epoch of its best checkpoint) into
#                                   $TABLE1_OUT/MODEL, then check that every gradient norm and validation loss
#                                   it logged equals the kept runs/table1/MODEL/metrics.jsonl's, digit for
#                                   digit; `score` then scores it
set -euo pipefail
cd "$(dirname "$0")/.."
GF=${GF:-build/grassflow}
OUT=${TABLE1_OUT:-runs/table1-state}
KEEP=runs/table1
if [ -z "${PRECISION:-}" ]; then
    PRECISION=fp32-fast
    grep -qw avx512_bf16 /proc/cpuinfo && PRECISION=bf16
fi
RECIPE=(--corpus wikitext-2 --tokenizer wordpiece:data/bert-base-uncased/vocab.txt --epochs 30 --batch 32 --seq-len 128
    --eval-every 540)
case "${1:-}" in
run)
    exec nice -n 19 "$GF" compare --models grassmann-6L,transformer-6L "${RECIPE[@]}" --precision "$PRECISION" \
        --out "$OUT"
    ;;
replay)
    m=${2:?"table1.sh replay MODEL STEP: which model (grassmann-6L or transformer-6L)"}
    step=${3:?"table1.sh replay MODEL STEP: up to which step (the best epoch times 540)"}
    kept="$KEEP/$m/metrics.jsonl"
    [ -f "$kept" ] || { echo "table1.sh: $kept is missing: nothing to replay against" >&2; exit 2; }
    at=0
    [ -f "$OUT/$m/last.safetensors" ] && at=$("$GF" info --ckpt "$OUT/$m/last.safetensors" --json | python3 -c \
        'import json, sys; print(json.load(sys.stdin).get("step", 0))')
    if [ "$at" -ge "$step" ]; then
        echo "table1.sh: $OUT/$m is at step $at already: checking it"
    elif [ -f "$OUT/$m/state.safetensors" ]; then
        nice -n 19 "$GF" train --resume "$OUT/$m" --stop-at "$step"
    else
        nice -n 19 "$GF" train --model "$m" "${RECIPE[@]}" --precision "$PRECISION" --out "$OUT/$m" --stop-at "$step"
    fi
    python3 - "$kept" "$OUT/$m/metrics.jsonl" "$step" <<'PY'
import json, sys
def losses(path, last):
    out = {}
    for line in open(path):
        r = json.loads(line)
        if r.get("type") in ("train", "eval") and r["step"] <= last:
            # a logged training loss averages the steps since the last line, which a resume cuts short:
            # the step's own gradient norm stands for it, and each evaluation's loss
            out[(r["type"], r["step"])] = r.get("grad_norm", r.get("val_loss"))
    return out
kept, new = losses(sys.argv[1], int(sys.argv[3])), losses(sys.argv[2], int(sys.argv[3]))
bad = [k for k in kept if k in new and kept[k] != new[k]]
if bad or not new:
    sys.exit("table1.sh replay: %d of %d logged values differ from %s (first: %s)" % (len(bad), len(kept), sys.argv[1], bad[:1]))
print("table1.sh replay: all %d gradient norms and validation losses logged up to step %s equal the kept run's"
      % (len(new), sys.argv[3]))
PY
    ;;
sync)
    mkdir -p "$KEEP"
    dirs=()
    for m in grassmann-6L transformer-6L; do
        new="$OUT/$m/metrics.jsonl" kept="$KEEP/$m/metrics.jsonl"
        if [ -f "$new" ]; then
            # a replay (or a state started again) logs less than the kept record: keep the longer one
            if [ -f "$kept" ] && [ "$(wc -l <"$kept")" -gt "$(wc -l <"$new")" ]; then
                echo "table1.sh: $kept is longer than $new: kept as it is" >&2
            else
                mkdir -p "$KEEP/$m" && cp "$new" "$KEEP/$m/"
            fi
        fi
        [ -f "$kept" ] && dirs+=("$KEEP/$m")
    done
    if [ -f "$OUT/summary.json" ]; then
        for f in summary.json summary.md summary.tsv; do [ -f "$OUT/$f" ] && cp "$OUT/$f" "$KEEP/"; done
    fi
    [ ${#dirs[@]} -gt 0 ] && "$GF" plot "${dirs[@]}" --metric ppl --x step --out "$KEEP/curves.svg"
    ;;
score)
    mkdir -p "$KEEP"
    tsv="$KEEP/scores.tsv" md="$KEEP/scores.md"
    printf 'model\tepoch\ttext\tsplit\tprotocol\ttokens\tloss\tppl\n' >"$tsv.tmp"
    for m in grassmann-6L transformer-6L; do
        ck="$OUT/$m/best.safetensors"
        if [ ! -f "$ck" ]; then # not here (another machine scored it): keep its rows
            [ -f "$tsv" ] && awk -F'\t' -v m="$m" '$1 == m' "$tsv" >>"$tsv.tmp"
            continue
        fi
        ep=$("$GF" info --ckpt "$ck" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["step"] // 540)') # 540 steps an epoch
        for text in wikitext-2 wikitext-2-raw; do
            for split in valid test; do
                for proto in "stride none" "chunks cls-sep"; do
                    set -- $proto
                    "$GF" eval --ckpt "$ck" --corpus "$text" --split "$split" --eval-blocks "$1" --eval-specials "$2" \
                        --json 2>/dev/null | python3 -c 'import json,sys; d=json.load(sys.stdin); print("\t".join(
                        sys.argv[1:] + [str(d["tokens"]), "%.6f" % d["loss"], "%.2f" % d["ppl"]]))' \
                        "$m" "$ep" "$text" "$split" "$1+$2" >>"$tsv.tmp"
                done
            done
        done
    done
    mv "$tsv.tmp" "$tsv"
    python3 - "$tsv" >"$md" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
print("| model | best epoch | text | split | protocol | tokens scored | loss | ppl |")
print("|---|---:|---|---|---|---:|---:|---:|")
for r in rows:
    print("| %(model)s | %(epoch)s | %(text)s | %(split)s | %(protocol)s | %(tokens)s | %(loss)s | %(ppl)s |" % r)
PY
    cat "$md"
    ;;
*)
    awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
