#!/usr/bin/env bash
# The mixer study's bookkeeping (scripts/mixer_study.py, which scripts/mixer_study.sh calls) on made-up
# results, in a second: the variant part (b) picks, what `status` says is done and left, the tables `docs`
# writes from the results (peak memory, a skipped variant, the hand-written section kept across a rewrite),
# where a cost meets the Transformer's, and the Pareto plots. The study's runs themselves are not made here
# (`bash scripts/mixer_study.sh --quick` runs them at toy sizes in minutes). The plots are drawn by BUILD's
# grassflow (grassflow plot --table).
#   bash tests/studies/mixer_study.sh [BUILD]
set -uo pipefail
PY=/usr/bin/python3
export GRASSFLOW=${1:-build}/grassflow
tmp=$(mktemp -d /tmp/grassflow-mixer-study-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. tests/lib.sh
export A_VARIANTS="grassmann-small|grassmann-small
transformer-small|transformer-small
window-small|configs/mixer-study/window-small.json
hybrid-last-small|configs/mixer-study/hybrid-last-small.json" \
    C_VARIANTS="grassmann-small|grassmann-small
transformer-small|transformer-small" C_LENS="256 1024 4096" C_WINDOW=128 C_GEN=64 C_TOKENS=8192 C_STEPS=600 \
    C_TOKENS_FULL=8192 C_STEPS_FULL=600 QUICK=0
O=$tmp/study
# unit DIR MODEL VAL TEST TOKENS_PER_S RUNS_DONE(of 2): a compare's summary.json as grassflow compare writes it
# (the CPU of its recipe: $CPU, default "a CPU")
unit() {
    mkdir -p "$1/runs"
    $PY - "$@" "${CPU:-a CPU}" <<'PYEOF'
import json, sys
d, model, val, test, tps, done = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6])
runs = [{"seed": k + 1, "status": "done" if k < done else "stopped"} for k in range(2)]
s = {"complete": done == 2, "recipe": {"blas_kernel": "Haswell", "blas_threads": 2, "cpu": sys.argv[7], "tokenizer_used": "word"},
     "models": [{"model": model, "n": done, "params": 1000, "val_mean": val, "val_std": 1.0 if done == 2 else None,
                 "test_mean": test, "test_std": 2.0 if done == 2 else None, "tokens_per_s": tps, "wall_s": 75, "runs": runs}]}
json.dump(s, open(d + "/runs/summary.json", "w"))
PYEOF
}
unit "$O/a/grassmann-small" grassmann-small 300 310 1000 2
unit "$O/a/transformer-small" transformer-small 200 210 1000 2
unit "$O/a/hybrid-last-small" configs/mixer-study/hybrid-last-small.json 250 260 1000 1
mkdir -p "$O/a/window-small" && echo '"layers"[0].mixer is "window"; it must be one of the mixers' >"$O/a/window-small/skipped"
printf 'Command exited with non-zero status 130\n2048\n4096\n' >"$O/a/grassmann-small/maxrss_kb"

echo "mixer_study: the variant part (b) takes to the 6-layer size"
best=$($PY scripts/mixer_study.py best "$O" 2>"$tmp/err")
[ -z "$best" ] && grep -q "part (a) is not finished: hybrid-last-small left" "$tmp/err" && pass "none while a variant of (a) has a seed left (a skipped one does not count)" || fail "best: '$best' $(cat "$tmp/err")"
unit "$O/a/hybrid-last-small" configs/mixer-study/hybrid-last-small.json 250 260 1000 2
best=$($PY scripts/mixer_study.py best "$O" 2>"$tmp/err")
[ "$best" = configs/mixer-study/hybrid-last-small.json ] && pass "then the lowest mean validation perplexity but the Transformer's: its model as compare ran it" || fail "best: '$best'"
$PY scripts/mixer_study.py best "$tmp/none" >/dev/null 2>"$tmp/err" && fail "best with no part (a) succeeded" ||
    { grep -q "part (a) is not finished: grassmann-small, transformer-small" "$tmp/err" && pass "no part (a) yet: an error that says so"  || fail "best: $(cat "$tmp/err")"; }

echo "mixer_study: status"
unit "$O/c/L256/grassmann-small" grassmann-small 3.0 3.1 2000 2
unit "$O/c/L1024/grassmann-small" grassmann-small 3.0 3.1 2000 1
$PY scripts/mixer_study.py status "$O" >"$tmp/status"
grep -Eq '^a  grassmann-small +done$' "$tmp/status" && grep -Eq '^a  window-small +skipped: "layers"' "$tmp/status" &&
    grep -Eq '^c  grassmann-small L=256 +trained; streaming cost not measured$' "$tmp/status" &&
    grep -Eq '^c  grassmann-small L=1024 +1 of 2 runs done$' "$tmp/status" && grep -Eq '^c  transformer-small L=4096 +not started$' "$tmp/status" && grep -q '^8 of 12 jobs left' "$tmp/status" &&
    pass "each job done, skipped (saying why), half done or not started, and how many are left" || fail "status: $(cat "$tmp/status")"

echo "mixer_study: docs"
for L in 256 1024 4096; do # the Transformer's streaming cost grows 4x a step, grassmann's stays: they meet at 512
    unit "$O/c/L$L/grassmann-small" grassmann-small "$([ $L = 4096 ] && echo 1.5 || echo 4)" 4 2000 2
    unit "$O/c/L$L/transformer-small" transformer-small 2 2 $((4000 * 256 / L)) 2
    echo "{\"results\": [{\"us_per_token\": 20, \"state_bytes\": 4096}]}" >"$O/c/L$L/grassmann-small/stream.json"
    echo "{\"results\": [{\"us_per_token\": $((10 * L / 256)), \"state_bytes\": $((L * 1024))}]}" >"$O/c/L$L/transformer-small/stream.json"
done
printf '# old\n<!-- what-wins: written by hand after the full run; scripts/mixer_study.sh docs keeps it -->\nWindow wins at 4,096.\n<!-- /what-wins -->\nold table\n' >"$tmp/mixers.md"
$PY scripts/mixer_study.py docs "$O" "$tmp/mixers.md" >/dev/null 2>"$tmp/err" || fail "docs: $(cat "$tmp/err")"
D=$tmp/mixers.md
grep -q '^Window wins at 4,096.$' "$D" && ! grep -q 'old table' "$D" && ! grep -q 'The study has not run yet' "$D" &&
    pass "the hand-written section is kept, everything else rewritten" || fail "docs: the hand-written section: $(head -c 600 "$D")"
grep -Fq '| hybrid-last-small | `configs/mixer-study/hybrid-last-small.json` | 1000 | 250.00 ± 1.00 | 260.00 ± 2.00 | 2 | 1000 | - | 1m15s |' "$D" &&
    grep -Fq '| grassmann-small | `grassmann-small` | 1000 | 300.00 ± 1.00 | 310.00 ± 2.00 | 2 | 1000 | 4 MB | 1m15s |' "$D" &&
    grep -Fq '| window-small | `configs/mixer-study/window-small.json` | - | - | - | 0 | - | - | skipped: "layers"\[0\].mixer is "window"; it must be one of the mixers |' "$D" &&
    pass "table (a): mean ± spread, the largest peak memory recorded, a skipped variant and why" || fail "docs table (a): $(grep '^| ' "$D" | head -8)"
grep -q '^Machine: OpenBLAS kernel Haswell, CPU a CPU (2 threads); tokenizer word.$' "$D" && ! grep -q 'more than one CPU' "$D" &&
    pass "one CPU: the machine line names it, the rates stand alone" || fail "docs: the machine line: $(grep '^Machine' "$D")"
CPU="AMD EPYC 9R14" unit "$O/a/transformer-small" transformer-small 200 210 1000 2
$PY scripts/mixer_study.py docs "$O" "$D" >/dev/null 2>"$tmp/err" || fail "docs: $(cat "$tmp/err")"
grep -Fq '| transformer-small | `transformer-small` | 1000 | 200.00 ± 1.00 | 210.00 ± 2.00 | 2 | 1000 (EPYC) |' "$D" &&
    grep -Fq '| grassmann-small | `grassmann-small` | 1000 | 300.00 ± 1.00 | 310.00 ± 2.00 | 2 | 1000 (a CPU) |' "$D" &&
    grep -q '^Machine: OpenBLAS kernel Haswell, CPU AMD EPYC 9R14; OpenBLAS kernel Haswell, CPU a CPU (2 threads); tokenizer word. The runs of this part were made on more than one CPU' "$D" &&
    pass "units trained on two CPUs: each rate names its CPU, the machine line both and why" || fail "docs: two CPUs: $(grep -E '^(\| transformer-small|Machine)' "$D")"
CPU="a CPU" unit "$O/a/transformer-small" transformer-small 200 210 1000 2
grep -Fq '| grassmann | L ≈ 512 (between 256 and 1024) | L ≈ 512 (between 256 and 1024) |' "$D" &&
    grep -Fq '| transformer | 4096 | 1000 | 1.000 | 1.000 | 4000.0 | 160.0 | 4096 KiB |' "$D" &&
    pass "table (c): bits per character, costs per token, the state; where the costs meet the Transformer's" || fail "docs table (c): $(grep '^| ' "$D" | tail -12)"
# the README's summary: between its markers only, rewritten each time; a README without them left alone
printf '# grassflow\nbefore\n<!-- mixers:begin -->\nold rows\n<!-- mixers:end -->\nafter\n' >"$tmp/README.md"
printf '# grassflow\nno markers\n' >"$tmp/README-none.md"
$PY scripts/mixer_study.py docs "$O" "$D" "$tmp/README.md" >/dev/null 2>"$tmp/err" &&
    $PY scripts/mixer_study.py docs "$O" "$D" "$tmp/README.md" >/dev/null 2>>"$tmp/err" &&
    $PY scripts/mixer_study.py docs "$O" "$D" "$tmp/README-none.md" >/dev/null 2>"$tmp/err2" || fail "docs with a README: $(cat "$tmp/err")"
grep -Fxq '| grassmann-small | 0.0M | 300.00 ± 1.00 | 310.00 ± 2.00 | 2 |' "$tmp/README.md" &&
    grep -Fxq '| transformer | 1.000 | 1.000 | 1.000 |' "$tmp/README.md" && ! grep -q 'old rows' "$tmp/README.md" &&
    [ "$(head -2 "$tmp/README.md")" = "$(printf '# grassflow\nbefore')" ] && [ "$(tail -2 "$tmp/README.md")" = "$(printf '<!-- mixers:end -->\nafter')" ] &&
    [ "$(grep -c 'mixers:begin' "$tmp/README.md")" = 1 ] && [ "$(cat "$tmp/README-none.md")" = "$(printf '# grassflow\nno markers')" ] &&
    grep -q 'has no <!-- mixers:begin --> ... <!-- mixers:end --> markers' "$tmp/err2" &&
    pass "the README's summary: (a) and (c) between the markers, the rest of the file kept, twice the same; none without markers" ||
    fail "README summary: $(sed -n '/mixers:begin/,/mixers:end/p' "$tmp/README.md" | head -8) $(cat "$tmp/err2")"
$PY - "$tmp/mixers/pareto-train.svg" "$tmp/mixers/pareto-stream.svg" <<'PYEOF' 2>"$tmp/err" &&
import sys, xml.dom.minidom as x
train, stream = (x.parse(f) for f in sys.argv[1:])
el = lambda d, tag, cls: [e for e in d.getElementsByTagName(tag) if e.getAttribute("class") == cls]
assert len(el(stream, "circle", "point")) == 6, "a dot per (mixer, L)"
assert sorted(t.firstChild.data for t in el(stream, "text", "label")) == sorted(["L=256", "L=1024", "L=4096"] * 2)
front = el(stream, "polyline", "front")
assert len(front) == 1 and len(front[0].getAttribute("points").split()) == 2, "the front: 2 of the 6 points"
legend = [g.getElementsByTagName("text")[0].firstChild.data for g in el(stream, "g", "legend")]
assert legend == ["grassmann", "transformer", "Pareto front"], legend
PYEOF
    grep -q '](mixers/pareto-stream.svg)' "$D" && pass "the Pareto plots (grassflow plot --table): XML, a labelled point per (mixer, L), the front (2 of the 6 points: none cheaper and better), linked from the document" ||
    fail "pareto: $(cat "$tmp/err")"
mkdir -p "$O/d" && printf 'backbone wt2-grassmann-small: model grassmann-small  steps 4\n| backbone | head |\n|---|---|\n| none | grassmann |\n\nplot: x.svg\n' >"$O/d/table.md"
echo "window performer" >"$O/d/skipped"
$PY scripts/mixer_study.py status "$O" >"$tmp/status"
grep -q '^d  SNLI heads  *done without the window, performer head(s): their mixers were missing$' "$tmp/status" &&
    $PY scripts/mixer_study.py docs "$O" "$D" >/dev/null && grep -q '^The backbone wt2-grassmann-small: model grassmann-small  steps 4$' "$D" &&
    grep -A4 'The backbone wt2' "$D" | grep -q '^| none | grassmann |$' && ! grep -q '^plot:' "$D" &&
    pass "part (d): the SNLI study's table and its backbone, the heads it skipped" || fail "part (d): $(sed -n '/^## (d)/,$p' "$D")"
echo "mixer_study: the machine-time plan"
printf 'part\tvariant\tbatch\tseq_len\ttokens_per_s\nref\tgrassmann-6L\t32\t128\t1300\na\tgrassmann-small\t32\t128\t1000\nc\tgrassmann-small L=4096\t2\t4096\t500\nref\tgrassmann-6L\t32\t128\t1395\n' >"$O/plan.tsv"
echo "Measured on a busy machine." >"$O/plan.machine"
$PY scripts/mixer_study.py docs "$O" "$D" >/dev/null 2>"$tmp/err" || fail "docs: $(cat "$tmp/err")"
grep -Fq '| a | grassmann-small | 2 | 1.2 |' "$D" && grep -Fq '| c | grassmann-small L=4096 | 1 | 1.4 |' "$D" && grep -q 'Measured on a busy machine. The rates are scaled by 2.00' "$D" &&
    pass "each run's hours from its rate, scaled by the reference's (2695 over the mean of 1300 and 1395): 2 seeds of 2 epochs and the evaluations; (c)'s tokens" ||
    fail "plan: $(grep -A12 '^## Machine time' "$D")"
rm "$tmp/mixers.md"
$PY scripts/mixer_study.py docs "$tmp/none" "$tmp/mixers.md" >/dev/null 2>"$tmp/err"
grep -q 'The study has not run yet' "$tmp/mixers.md" && grep -q 'Not run yet (`bash scripts/mixer_study.sh a`)' "$tmp/mixers.md" && grep -q 'Not run yet (`bash scripts/mixer_study.sh c`)' "$tmp/mixers.md" &&
    ! grep -q '^| grassmann' "$tmp/mixers.md" && pass "no results: each part says it has not run (no table, no claim)" || fail "docs with no results: $(cat "$tmp/err")"
[ "$fails" -eq 0 ] && echo "mixer_study: all passed" || { echo "mixer_study: $fails FAILED"; exit 1; }
