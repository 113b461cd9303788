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
*)
    sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
