#!/usr/bin/env bash
# The figures and statistics of docs/interpretability.md (issue 51, item 4), made with grassflow inspect.
#   bash scripts/interpretability.sh --ckpt CKPT [--out DIR] [--paragraphs N]
# 1. one sentence of WikiText-2's raw validation split (the lobster article's first two) inspected whole:
#    OUT/lobster.txt (inspect's summary), and its heat maps OUT/lobster-layer0-{gates,offsets,plucker}.svg and
#    OUT/lobster-layer5-offsets.svg (the gates of the first 24 tokens: 256 channels a token make big files);
# 2. the first N paragraphs (default 40) of the same split, each cut to its first 80 words, inspected one by
#    one; scripts/interpretability.py sums their JSON up into OUT/stats.md: per layer the mean gate, each offset's mean share and loss change when
#    dropped, the gate of the 100 most frequent tokens of the training split against the rest, the
#    coordinates most often in a token's top 4.
# Default OUT: docs/interpretability. Takes a few minutes on one thread.
set -euo pipefail
cd "$(dirname "$0")/.."
GF=${GRASSFLOW:-build/grassflow}
CKPT="" OUT=docs/interpretability N=40
while [ $# -gt 0 ]; do
    case "$1" in
    --ckpt) CKPT=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --paragraphs) N=$2; shift 2 ;;
    *) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
    esac
done
[ -n "$CKPT" ] || { echo "interpretability.sh: --ckpt CKPT is required" >&2; exit 2; }
mkdir -p "$OUT"
tmp=$(mktemp -d /tmp/grassflow-interp-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
VALID=data/wikitext-2-raw/wiki.valid.raw.xz

# 1. the sentence
sent=$(xz -dc "$VALID" | sed -n 4p 2>/dev/null | python3 -c 'import sys; t = sys.stdin.read().split(" . "); print(" . ".join(t[:2]).strip() + " .")')
"$GF" inspect --ckpt "$CKPT" --text "$sent" --svg-dir "$tmp/all" >"$OUT/lobster.txt" 2>/dev/null
"$GF" inspect --ckpt "$CKPT" --text "$sent" --svg-dir "$tmp/short" --svg-tokens 24 >/dev/null 2>&1
cp "$tmp/short/layer0-gates.svg" "$OUT/lobster-layer0-gates.svg"
for f in layer0-offsets layer0-plucker layer5-offsets; do cp "$tmp/all/$f.svg" "$OUT/lobster-$f.svg"; done

# 2. the paragraphs
xz -dc "$VALID" | python3 -c '
import sys
n = int(sys.argv[1]); k = 0
for line in sys.stdin.readlines():  # all of it: xz is not cut off (pipefail)
    w = line.split()
    if len(w) < 40 or w[0] == "=" or k == n:
        continue
    open(sys.argv[2] + "/p%03d.txt" % k, "w").write(" ".join(w[:80]) + "\n")
    k += 1' "$N" "$tmp"
: >"$tmp/paragraphs.jsonl"
for p in "$tmp"/p*.txt; do
    "$GF" inspect --ckpt "$CKPT" --text-file "$p" --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
for l in d["layers"]:
    l.pop("gate", None)  # 256 numbers a token: the means are kept
print(json.dumps(d))' >>"$tmp/paragraphs.jsonl"
done
python3 scripts/interpretability.py "$tmp/paragraphs.jsonl" "$CKPT" >"$OUT/stats.md"
cat "$OUT/stats.md"
