#!/usr/bin/env bash
# scripts/image_table.py's tallies, in a second and without training: each model's mean and spread over its
# scored seeds, and its gap to attention paired seed by seed (only the seeds both have scored; a run not yet
# scored counts in neither).
#   bash tests/studies/image_table.sh
set -uo pipefail
tmp=$(mktemp -d /tmp/grassflow-image-table-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. tests/lib.sh
# run NAME-sSEED ACC: a made-up finished run (ACC empty: still training, no test.json)
run() {
    mkdir -p "$tmp/$1"
    printf '{"type": "eval", "val_acc": 0.9}\n{"type": "train", "epoch": 10.0, "images": 540000, "elapsed_s": 1200}\n' \
        >"$tmp/$1/metrics.jsonl"
    [ -z "$2" ] || printf '{"accuracy": %s, "per_class": {"a": 1, "b": 1}, "confusion": [[1, 0], [0, 1]]}\n' "$2" >"$tmp/$1/test.json"
}
run attention-s1234 0.8737
run attention-s2 0.8726
run attention-s3 0.8743
run grassmann-grid-s1234 0.8986
run grassmann-grid-s2 0.8979
run grassmann-grid-s3 ""
run window-s3 0.8800
run window-s7 0.9000 # attention has no seed 7: not paired
expect 0 "the table" python3 scripts/image_table.py "$tmp" 10
out=$(python3 scripts/image_table.py "$tmp" 10)
grep -qF '| attention | 3 | 87.35% ± 0.09 |' <<<"$out" && pass "attention's mean and sd over 3 seeds" ||
    fail "means: $(grep '^| attention |' <<<"$out")"
[ -s "$tmp/confusion.svg" ] && grep -q 'grassmann-grid: test confusion (2 seeds, summed' "$tmp/confusion.svg" &&
    pass "confusion.svg of the best model, its scored seeds summed" || fail "no confusion.svg of grassmann-grid"
grep -qF '| grassmann-grid | 2 | +2.51 ± 0.03 | 1234: +2.49, 2: +2.53 |' <<<"$out" &&
    pass "grassmann-grid's gap paired over the 2 seeds both scored" || fail "gap: $(grep '^| grassmann-grid | 2 | [+]' <<<"$out")"
grep -qF '| window | 1 | +0.57 | 3: +0.57 |' <<<"$out" && pass "a single paired seed has no spread" ||
    fail "gap: $(grep '^| window | 1 | [+]' <<<"$out")"
# accuracy.tsv (the bars of accuracy.svg) names each bar by its seed, not by its place in the list
grep -qP '^grassmann-grid\tseed 2\t89.79$' "$tmp/accuracy.tsv" && grep -qP '^window\tseed 7\t90.00$' "$tmp/accuracy.tsv" &&
    ! grep -q 'seed 1\s' "$tmp/accuracy.tsv" && pass "accuracy.tsv's bars named by their seeds" ||
    fail "accuracy.tsv: $(cat "$tmp/accuracy.tsv")"
[ "$fails" = 0 ] && echo "image_table: all passed" || { echo "image_table: $fails failed"; exit 1; }
