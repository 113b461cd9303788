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
#                                   of 128 with [CLS]/[SEP] once): runs/table1/scores.{tsv,md}
set -euo pipefail
cd "$(dirname "$0")/.."
GF=${GF:-build/grassflow}
OUT=${TABLE1_OUT:-runs/table1-state}
KEEP=runs/table1
if [ -z "${PRECISION:-}" ]; then
    PRECISION=fp32-fast
    grep -qw avx512_bf16 /proc/cpuinfo && PRECISION=bf16
fi
case "${1:-}" in
run)
    exec nice -n 19 "$GF" compare --models grassmann-6L,transformer-6L --corpus wikitext-2 \
        --tokenizer wordpiece:data/bert-base-uncased/vocab.txt --epochs 30 --batch 32 --seq-len 128 \
        --eval-every 540 --precision "$PRECISION" --out "$OUT"
    ;;
sync)
    mkdir -p "$KEEP"
    dirs=()
    for m in grassmann-6L transformer-6L; do
        [ -f "$OUT/$m/metrics.jsonl" ] || continue
        mkdir -p "$KEEP/$m" && cp "$OUT/$m/metrics.jsonl" "$KEEP/$m/"
        dirs+=("$OUT/$m")
    done
    for f in summary.json summary.md summary.tsv; do [ -f "$OUT/$f" ] && cp "$OUT/$f" "$KEEP/"; done
    [ ${#dirs[@]} -gt 0 ] && "$GF" plot "${dirs[@]}" --metric ppl --x step --out "$KEEP/curves.svg"
    ;;
score)
    mkdir -p "$KEEP"
    tsv="$KEEP/scores.tsv" md="$KEEP/scores.md"
    printf 'model\tepoch\ttext\tsplit\tprotocol\ttokens\tloss\tppl\n' >"$tsv.tmp"
    for m in grassmann-6L transformer-6L; do
        ck="$OUT/$m/best.safetensors"
        [ -f "$ck" ] || continue
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
    sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
