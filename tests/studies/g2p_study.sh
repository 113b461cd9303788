#!/usr/bin/env bash
# scripts/g2p_study.sh's naming of a run, in a second and without training: a recipe variant (G2P_TAG with
# G2P_EXTRA) and a run of other than 5 epochs (EPOCHS) are each their own family, NAME-TAG-eEPOCHS-sSEED, which
# sync copies and g2p_table.py tallies apart from the study's own NAME-sSEED; G2P_EXTRA without a tag is refused
# (it would train into the study's family under another recipe); a family whose model is a config file trains
# with --config.
#   bash tests/studies/g2p_study.sh
set -uo pipefail
tmp=$(mktemp -d /tmp/grassflow-g2p-study-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. tests/lib.sh
# run DIR WER: a made-up finished run's metrics and beam-5 score (no checkpoint: sync then skips `info`)
run() {
    mkdir -p "$1"
    printf '{"type": "eval", "epoch": 5.0, "val_ppl": 1.2}\n{"type": "train", "elapsed_s": 60, "phonemes": 600}\n' \
        >"$1/metrics.jsonl"
    printf '{"wer": %s, "per": 0.1}\n' "$2" >"$1/test-beam5.json"
}
run "$tmp/state/transformer-s1234" 0.4065
run "$tmp/state/transformer-w2000-e15-s1234" 0.3000
# (GF=false: were it not refused, the run would fail with 1 at once rather than train)
want='G2P_EXTRA needs G2P_TAG' expect 2 "G2P_EXTRA without G2P_TAG refused" \
    env GF=false G2P_OUT="$tmp/state" G2P_KEEP="$tmp/keep" G2P_EXTRA="--warmup 2000" RUNS=gru-none:1234 \
    bash scripts/g2p_study.sh run
expect 0 "sync of the tagged 15-epoch run" env G2P_OUT="$tmp/state" G2P_KEEP="$tmp/keep" G2P_TAG=w2000 EPOCHS=15 \
    RUNS=transformer:1234 bash scripts/g2p_study.sh sync
[ -f "$tmp/keep/transformer-w2000-e15-s1234/test-beam5.json" ] && [ ! -e "$tmp/keep/transformer-s1234" ] &&
    pass "sync took NAME-TAG-eEPOCHS-sSEED and not the study's run" || fail "sync copied: $(ls "$tmp/keep")"
grep -q '^| transformer-w2000-e15 | 1 | 30.00% | 10.00% |$' "$tmp/keep/summary.md" &&
    pass "the variant is its own family in the table" || fail "table: $(tail -n 3 "$tmp/keep/summary.md")"
expect 0 "sync of the study's run" env G2P_OUT="$tmp/state" G2P_KEEP="$tmp/keep" RUNS=transformer:1234 \
    bash scripts/g2p_study.sh sync
grep -q '^| transformer | 1 | 40.65% | 10.00% |$' "$tmp/keep/summary.md" &&
    pass "the study's family apart from the variant" || fail "table: $(tail -n 3 "$tmp/keep/summary.md")"
# a family whose model is a config file trains with --config FILE (not --model): a stand-in grassflow records
# the arguments it is given (the run's folder made beforehand, as train would make it)
printf '#!/bin/sh\necho "$*" >>"%s/args"\n' "$tmp" >"$tmp/gf" && chmod +x "$tmp/gf"
mkdir -p "$tmp/cfg/gru-bahdanau-512-e4-s1234"
expect 0 "a config-file family runs" env GF="$tmp/gf" G2P_OUT="$tmp/cfg" EPOCHS=4 RUNS=gru-bahdanau-512:1234 \
    bash scripts/g2p_study.sh run
grep -q '^train --task g2p --config configs/g2p/gru-bahdanau-512.json --corpus .* --epochs 4 .*--out '"$tmp"'/cfg/gru-bahdanau-512-e4-s1234$' \
    "$tmp/args" && ! grep -q -- '--model' "$tmp/args" &&
    pass "the config-file family trains with --config" || fail "arguments: $(cat "$tmp/args")"
# ensemble: finished runs decoded as one by eval --ensemble (the stand-in records its arguments), kept by sync in a
# table of its own
mkdir -p "$tmp/ens/a-s1" "$tmp/ens/b-s2" "$tmp/ens/c-s3" && touch "$tmp/ens/a-s1/done" "$tmp/ens/b-s2/done"
printf '#!/bin/sh\necho "$*" >>"%s/eargs"\necho "{\\"wer\\": 0.25, \\"per\\": 0.06}"\n' "$tmp" >"$tmp/gfe" && chmod +x "$tmp/gfe"
expect 0 "ensemble of two finished runs" env GF="$tmp/gfe" G2P_OUT="$tmp/ens" ENSEMBLE="a-s1 b-s2" bash scripts/g2p_study.sh ensemble
grep -q "^eval --ckpt $tmp/ens/a-s1/best.safetensors --ensemble $tmp/ens/b-s2/best.safetensors --corpus .* --split test --beam 5 --json$" \
    "$tmp/eargs" && [ -s "$tmp/ens/ensemble+a-s1+b-s2/test-beam1.json" ] && pass "... eval --ensemble of the second, greedy and beam 5" \
    || fail "arguments: $(cat "$tmp/eargs")"
want='c-s3 has not finished' expect 2 "a run that has not finished is refused" env GF="$tmp/gfe" G2P_OUT="$tmp/ens" \
    ENSEMBLE="a-s1 c-s3" bash scripts/g2p_study.sh ensemble
want='two runs or more' expect 2 "one run is no ensemble" env GF="$tmp/gfe" G2P_OUT="$tmp/ens" ENSEMBLE="a-s1" \
    bash scripts/g2p_study.sh ensemble
run "$tmp/ens/a-s1" 0.3
expect 0 "sync keeps the ensemble" env GF="$tmp/gfe" G2P_OUT="$tmp/ens" G2P_KEEP="$tmp/ekeep" RUNS=x:1 bash scripts/g2p_study.sh sync
grep -q '^| a-s1 + b-s2 | 25.00% / 6.00% | 25.00% / 6.00% |$' "$tmp/ekeep/summary.md" && pass "... in a table of its own" \
    || fail "table: $(cat "$tmp/ekeep/summary.md")"
[ "$fails" = 0 ] && echo "g2p_study: all passed" || { echo "g2p_study: $fails failed"; exit 1; }
