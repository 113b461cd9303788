#!/usr/bin/env bash
# Task synth (issue 52): synthetic sequence pairs made from a seed. A tiny attention encoder-decoder learns to
# reverse digits (at least 99% exact at the trained lengths, decoded greedily), and predict reverses a number;
# sort and add make their examples; what the task refuses says why.
#   bash tests/train/synth.sh [BUILD]
set -uo pipefail
BUILD=${1:-build}
cd "$(dirname "$0")/../.."
GF="$BUILD/grassflow"
tmp=$(mktemp -d /tmp/grassflow-synth-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. tests/lib.sh
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
cat >"$tmp/att.json" <<'JSON'
{"format": 3, "head": {"kind": "next_token"}, "vocab_size": 12, "source_vocab": 11, "cross_heads": 2,
 "d_model": 64, "n_layer": 2, "d_ff": 128, "max_len": 24, "norm": "pre", "direction": "bidirectional",
 "layers": [{"mixer": "attention", "n_head": 2}], "stacks": [{"name": "decoder", "d_model": 64, "d_ff": 128,
 "n_layer": 2, "direction": "causal", "layers": [{"mixer": "attention", "n_head": 2}]}]}
JSON

echo "synth: reversal"
expect 0 "a tiny attention encoder-decoder trains on reverse (800 steps)" "$GF" train --task synth --corpus reverse \
    --config "$tmp/att.json" --steps 800 --batch 32 --lr 3e-3 --warmup 50 --eval-every 800 --out "$tmp/rev"
expect 0 "eval decodes the 1,000 valid examples" "$GF" eval --ckpt "$tmp/rev/best.safetensors" --corpus reverse --json
/usr/bin/python3 -c 'import json, sys; o = json.load(open(sys.argv[1])); assert o["examples"] == 1000 and o["wer"] <= 0.01, o' \
    "$tmp/out" && pass "... at least 99% of them exactly" || fail "eval --json: $(cat "$tmp/out")"
expect 0 "eval decodes the longer test examples" "$GF" eval --ckpt "$tmp/rev/best.safetensors" --corpus reverse --split test
grep -Eq 'exact by source length: 9 [0-9.]+% \([0-9]+\),.* 16 [0-9.]+% \([0-9]+\)$' "$tmp/out" \
    && pass "... and its exact-match rate for each source length, 9 to 16" || fail "eval printed: $(cat "$tmp/out")"
printf '31415\n2718\n' >"$tmp/nums.txt"
expect 0 "predict reverses numbers" "$GF" predict --ckpt "$tmp/rev/best.safetensors" --corpus "$tmp/nums.txt"
[ "$(cut -f2 "$tmp/out" | tr '\n' ',')" = "5 1 4 1 3,8 1 7 2," ] && pass "... 31415 -> 5 1 4 1 3, 2718 -> 8 1 7 2" \
    || fail "predict printed: $(cat "$tmp/out")"

echo "synth: sort and add make their examples"
for k in sort add; do
    expect 0 "$k: a step and its evaluation" "$GF" train --task synth --corpus $k --config "$tmp/att.json" --steps 2 \
        --batch 8 --eval-every 2 --out "$tmp/$k" --examples 200
done
grep -q 'add: 200 train examples (valid 100 at the same lengths, test 100 longer)' "$tmp/err" \
    && pass "... the counts: 200, 100, 100" || fail "add: $(grep -m1 'train examples' "$tmp/err")"

echo "synth: refusals"
want='--corpus nosuch: task synth makes reverse, sort or add' expect 1 "an unknown corpus" \
    "$GF" train --task synth --corpus nosuch --config "$tmp/att.json" --steps 1 --out "$tmp/no"
printf '12a4\n' >"$tmp/bad.txt"
want='bad.txt:1: character 3 is not a digit or \+' expect 1 "a character predict cannot read, with its line" \
    "$GF" predict --ckpt "$tmp/rev/best.safetensors" --corpus "$tmp/bad.txt"
[ "$fails" -eq 0 ] || { echo "synth: $fails FAILED"; exit 1; }
echo "synth: all passed"
