#!/usr/bin/env bash
# grassflow compare as an experiment runner: stopped by a signal mid-model and run again, it ends with the
# numbers of a compare never stopped; --seeds (mean, sample std); per-model --set; the summary in three
# formats that agree; --json; a rerun with another recipe refused, --force starting over.
#   bash tests/cli/compare.sh [BUILD]
set -uo pipefail
BUILD=${1:-build}
cd "$(dirname "$0")/../.."
GF="$BUILD/grassflow"
PY=/usr/bin/python3
tmp=$(mktemp -d /tmp/grassflow-compare-XXXXXX)
export GRASSFLOW_CACHE="$tmp/cache"
trap 'rm -rf "$tmp"' EXIT
. tests/lib.sh
$PY -c "
import random; random.seed(2); w = 'the game of cafe a story ends begins and then'.split()
open('$tmp/small.txt', 'w').write(''.join(' '.join(random.choice(w) for _ in range(random.randint(2, 10))) + '\n' for _ in range(300)))"
M="--models grassmann-tiny,transformer-tiny"
TR="--corpus $tmp/small.txt --tokenizer word --steps 6 --batch 4 --seq-len 16 --eval-every 3 --warmup 2 --no-cache"
py() { $PY - "$@" 2>"$tmp/pyerr" <<<"$PYCODE"; }
cmp_state_step_of() { $PY -c 'import sys, json, struct
b = open(sys.argv[1] + "/state.safetensors", "rb").read(); n = struct.unpack("<Q", b[:8])[0]
print(json.loads(b[8:8 + n])["__metadata__"]["step"])' "$1" 2>&1 | tail -1; }

echo "compare: the summary"
expect 0 "compare --json" "$GF" compare $M $TR --json --out "$tmp/u"
$PY -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['complete'] and len(d['models']) == 2" "$tmp/out" \
    && pass "--json prints the summary as JSON" || fail "--json: $(head -c 300 "$tmp/out")"
cmp -s "$tmp/out" <(cat "$tmp/u/summary.json"; echo) && pass "... the one in --out/summary.json" || fail "--json differs from summary.json"
PYCODE='
import csv, json, sys
d = json.load(open(sys.argv[1] + "/summary.json"))
tsv = list(csv.DictReader(open(sys.argv[1] + "/summary.tsv"), delimiter="\t"))
md = [l.split("|")[1:-1] for l in open(sys.argv[1] + "/summary.md") if l.startswith("| ") and "model" not in l]
r = d["recipe"]
assert r["tokenizer_used"] == "word (vocabulary 12)" and r["blas_kernel"] and r["cpu"], r
for m, t, row in zip(d["models"], tsv, md):
    assert t["model"] == m["model"] == row[0].strip()
    for k in ("val_mean", "test_mean", "tokens_per_s", "wall_s", "gap"):
        assert float(t[k]) == m[k], (k, t[k], m[k])
    assert int(t["params"]) == m["params"] == int(row[1])
    assert row[4].strip() == "%.2f" % m["test_mean"] and row[3].strip() == "%.2f" % m["val_mean"], row
    assert m["val_std"] is None and t["val_std"] == ""
assert len(d["models"]) == len(tsv) == len(md) == 2
'
py "$tmp/u" && pass "summary.json, summary.tsv and summary.md agree (the recipe names tokenizer, kernel, CPU)" \
    || fail "summaries: $(tail -3 "$tmp/pyerr")"
grep -q "recipe: .*tokenizer word (vocabulary 12)" "$tmp/u/summary.md" && pass "the recipe line names the tokenizer" || fail "recipe line: $(tail -2 "$tmp/u/summary.md")"
$PY -c '
import sys, xml.dom.minidom as x
d = x.parse(sys.argv[1] + "/curves.svg")
assert len(d.getElementsByTagName("polyline")) >= 4, "a training and a validation curve per model"
text = " ".join(t.firstChild.data for t in d.getElementsByTagName("text") if t.firstChild)
assert "grassmann-tiny" in text and "transformer-tiny" in text, text
' "$tmp/u" && pass "compare draws the curves of every model into OUT/curves.svg (grassflow plot)" || fail "compare curves.svg: $(ls "$tmp/u")"

echo "compare: stopped by a signal mid-model, then resumed"
# the 8th step of the process is the second model's 2nd: the first is done, the second stops in between
GRASSFLOW_FAULT_SIGINT_AT=8 "$GF" compare $M $TR --force --out "$tmp/i" >"$tmp/out" 2>"$tmp/err"; rc=$?
resume=$(sed -n 's/^resume with: //p' "$tmp/err" | tail -1)
[ $rc = 130 ] && grep -q "interrupted by SIGINT during transformer-tiny; its state is saved in $tmp/i/transformer-tiny" "$tmp/err" \
    && [ "$resume" = "grassflow compare $M $TR --out $tmp/i" ] \
    && pass "SIGINT: exit 130, what stopped, and the command that resumes (without --force)" || fail "SIGINT: exit $rc, $(tail -3 "$tmp/err")"
PYCODE='
import json, sys
d = json.load(open(sys.argv[1]))
s = [r["status"] for m in d["models"] for r in m["runs"]]
assert s == ["done", "stopped"] and not d["complete"], s
'
py "$tmp/i/summary.json" && [ -s "$tmp/i/transformer-tiny/state.safetensors" ] && [ -s "$tmp/i/transformer-tiny/last.safetensors" ] \
    && pass "... the summary says which run is done and which stopped; the stopped one's state is kept" || fail "after SIGINT: $(tail -2 "$tmp/pyerr")"
expect 0 "the printed command resumes it" "$GF" ${resume#grassflow }
grep -q "grassmann-tiny" "$tmp/err" && fail "the finished model was trained again: $(grep grassmann-tiny "$tmp/err" | head -2)" \
    || pass "... the finished model is read back, not trained again"
grep -q "transformer-tiny: .*resuming" "$tmp/err" && pass "... the stopped one continues from its state" || fail "resume: $(head -3 "$tmp/err")"
PYCODE='
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
for x, y in zip(a["models"], b["models"]):
    for k in ("params", "val_mean", "test_mean", "gap"):
        assert x[k] == y[k], (x["model"], k, x[k], y[k])
    assert x["runs"][0]["steps"] == y["runs"][0]["steps"] == 6
assert b["complete"]
'
py "$tmp/u/summary.json" "$tmp/i/summary.json" && pass "... and ends with the numbers of the compare never stopped, to the bit" \
    || fail "resumed != uninterrupted: $(tail -2 "$tmp/pyerr")"
PYCODE='
import sys
sys.path.insert(0, "tests/parity/torch_ref")
import st_io
for f in ("transformer-tiny/last.safetensors", "transformer-tiny/best.safetensors", "grassmann-tiny/best.safetensors"):
    a, _ = st_io.read(sys.argv[1] + "/" + f); b, _ = st_io.read(sys.argv[2] + "/" + f)
    assert list(a) == list(b) and all(a[k].tobytes() == b[k].tobytes() for k in a), f
'
py "$tmp/u" "$tmp/i" && pass "... with checkpoints byte-identical to it" || fail "resumed checkpoints differ: $(tail -2 "$tmp/pyerr")"
# a signal from outside: SIGTERM (as a scheduler sends) mid-model
LONG="--corpus $tmp/small.txt --tokenizer word --steps 600 --batch 4 --seq-len 16 --eval-every 200 --log-every 1 --no-cache"
"$GF" compare $M $LONG --out "$tmp/t" >"$tmp/out" 2>"$tmp/terr" &
pid=$!
end=$((SECONDS + 30))
until grep -q "grassmann-tiny step [0-9]*/600" "$tmp/terr" 2>/dev/null || [ $SECONDS -ge $end ]; do sleep 0.05; done
kill -TERM $pid
wait $pid
rc=$?
[ $rc = 143 ] && grep -q "grassflow compare: interrupted by SIGTERM during grassmann-tiny; its state is saved in $tmp/t/grassmann-tiny" "$tmp/terr" \
    && grep -q "^resume with: grassflow compare $M $LONG --out $tmp/t$" "$tmp/terr" \
    && pass "SIGTERM from outside: exit 143, what stopped and the command that resumes" || fail "SIGTERM: exit $rc, $(tail -c 400 "$tmp/terr")"
grep -q "^recipe: .*, 600 steps, batch 4," "$tmp/t/summary.md" \
    && pass "... the summary written before any run ended gives the recipe's steps (not 0)" || fail "recipe line: $(grep recipe "$tmp/t/summary.md")"
GRASSFLOW_FAULT_SIGINT_AT=2 "$GF" compare $M ${TR/--steps 6/--epochs 1} --out "$tmp/e" >/dev/null 2>&1
grep -q "^recipe: .*, 1 epoch, batch 4," "$tmp/e/summary.md" \
    && pass "... and --epochs' count when the steps are not known yet" || fail "recipe line with --epochs: $(grep recipe "$tmp/e/summary.md")"
grep -q "^| transformer-tiny | - | - | - | - | - | - | reference |$" "$tmp/e/summary.md" \
    && pass "... a model not started has no figures (not a wall time of 0s)" || fail "row of a model not started: $(grep transformer-tiny "$tmp/e/summary.md")"
expect 0 "... which resumes it" "$GF" compare $M $LONG --out "$tmp/t"
grep -q "grassmann-tiny: .*resuming" "$tmp/err" && grep -q '"complete":	true' "$tmp/t/summary.json" \
    && pass "... the stopped model continues, the other starts, the summary is complete" || fail "after SIGTERM: $(head -c 300 "$tmp/err")"
# SIGKILL: no chance to save; the summary says the run was running, and the rerun goes on from the last
# state saved, or starts that run again when it had saved none
"$GF" compare $M $LONG --out "$tmp/k" >"$tmp/out" 2>"$tmp/kerr" &
pid=$!
end=$((SECONDS + 30))
until grep -q "grassmann-tiny step [0-9]*/600" "$tmp/kerr" 2>/dev/null || [ $SECONDS -ge $end ]; do sleep 0.05; done
{ kill -KILL $pid; wait $pid; } 2>/dev/null
grep -q '"status":	"running"' "$tmp/k/summary.json" && pass "SIGKILL: the summary says which run was running" || fail "SIGKILL: $(grep status "$tmp/k/summary.json")"
expect 0 "... and the rerun finishes the compare" "$GF" compare $M $LONG --out "$tmp/k"
grep -Eq "grassmann-tiny: (stopped before it saved a state: started again|.*resuming)" "$tmp/err" && grep -q '"complete":	true' "$tmp/k/summary.json" \
    && pass "... continuing the killed run from its state or, without one, starting it again" || fail "after SIGKILL: $(head -c 300 "$tmp/err")"
expect 0 "a rerun of a finished compare" "$GF" compare $M $TR --out "$tmp/u"
grep -q "step" "$tmp/err" && fail "... trained again: $(head -2 "$tmp/err")" || { grep -q "^grassmann-tiny " "$tmp/out" && grep -q "^transformer-tiny " "$tmp/out"; } \
    && pass "... trains nothing and prints the table of both models" || fail "rerun of a finished compare: $(head -c 300 "$tmp/out")"
cp -r "$tmp/u" "$tmp/forged" && $PY -c "
import json, sys
p = sys.argv[1] + '/summary.json'; d = json.load(open(p))
d['models'][0]['params'] = 1e300; d['models'][1]['runs'][0]['steps'] = 1e300
json.dump(d, open(p, 'w'))" "$tmp/forged"
expect 0 "a rerun of a compare whose summary.json says 1e300 parameters and 1e300 steps" "$GF" compare $M $TR --out "$tmp/forged"
PYCODE='
import json, sys
a, b = (json.load(open(p + "/summary.json")) for p in sys.argv[1:3])
assert [(m["params"], m["runs"][0]["steps"], m["test_mean"]) for m in a["models"]] == [(m["params"], m["runs"][0]["steps"], m["test_mean"]) for m in b["models"]], b
'
py "$tmp/u" "$tmp/forged" && grep -q "^grassmann-tiny  *$($PY -c "import json; print(json.load(open('$tmp/u/summary.json'))['models'][0]['params'])") " "$tmp/out" \
    && pass "... takes them for no counts: both runs are scored again from their states, to the same numbers" || fail "forged counts: $(tail -1 "$tmp/pyerr") $(head -4 "$tmp/out")"
cp -r "$tmp/u" "$tmp/bad" && echo '{"models": [' >"$tmp/bad/summary.json"
want="$tmp/bad/summary.json: not a grassflow compare summary"; expect 1 "a summary.json that is not one is refused, naming it" "$GF" compare $M $TR --out "$tmp/bad"
want="--resume: --out $tmp/none holds no compare to resume"; expect 2 "--resume where there is no compare" "$GF" compare $M $TR --resume --out "$tmp/none"

echo "compare: a different recipe"
want='--out .*/u holds a compare whose recipe key "lr" is 0.0006; this one asks for 0.001: continuing it would mix two recipes'
expect 1 "a rerun with another --lr is refused, naming the key" "$GF" compare $M $TR --lr 0.001 --out "$tmp/u"
want='--set list of the model grassmann-tiny is \[\]; this one asks for \["rank=4"\]'
expect 1 "... and one with another --set for one model" "$GF" compare $M $TR --set grassmann-tiny:rank=4 --out "$tmp/u"
want='holds a compare without --seeds'; expect 1 "... and one with --seeds into a compare without" "$GF" compare $M $TR --seeds 1,2 --out "$tmp/u"
# a compare from before a task option (eval_blocks, eval_specials) ran with its default: the same recipe
cp -r "$tmp/u" "$tmp/older" && $PY -c "
import json, sys
p = sys.argv[1] + '/summary.json'; d = json.load(open(p))
assert d['recipe'].pop('eval_blocks') == 'stride' and d['recipe'].pop('eval_specials') == 'none'
json.dump(d, open(p, 'w'))" "$tmp/older"
expect 0 "a rerun of a compare from before an option, which ran with its default, reads it back" "$GF" compare $M $TR --out "$tmp/older"
grep -q "step" "$tmp/err" && fail "... but trained again: $(head -2 "$tmp/err")" || pass "... and trains nothing"
want='recipe key "eval_blocks" is "stride"; this one asks for "chunks"'
expect 1 "... (its summary now says the default) but not with the option at another value" "$GF" compare $M $TR --eval-blocks chunks --out "$tmp/older"
# --force stopped in the first model: the second's old run (the old recipe) is still there; the resume
# must replace it, not continue it, and not refuse it either
cp -r "$tmp/u" "$tmp/f"
GRASSFLOW_FAULT_SIGINT_AT=2 "$GF" compare $M $TR --lr 0.001 --force --out "$tmp/f" >/dev/null 2>&1
expect 0 "a --force compare stopped before it reached a model's old run resumes" "$GF" compare $M $TR --lr 0.001 --out "$tmp/f"
grep -q "grassmann-tiny: .*resuming" "$tmp/err" && grep -q "transformer-tiny: .*from scratch" "$tmp/err" \
    && pass "... the stopped model continues, the old run of the other is replaced, not continued" || fail "resume after --force: $(grep "parameters" "$tmp/err")"
expect 0 "--force starts over with the new recipe" "$GF" compare $M $TR --lr 0.001 --force --out "$tmp/u"
grep -q '"lr":	0.001' "$tmp/u/summary.json" && grep -q "grassmann-tiny: .*from scratch" "$tmp/err" \
    && pass "... retrained from scratch, the summary has the new lr" || fail "--force: $(grep '"lr"' "$tmp/u/summary.json")"
PYCODE='
import json, sys
a, b = (json.load(open(p + "/summary.json")) for p in sys.argv[1:3])
assert [m["test_mean"] for m in a["models"]] == [m["test_mean"] for m in b["models"]] and b["complete"]
'
py "$tmp/u" "$tmp/f" && pass "... and the --force compare that was stopped and resumed ends the same" || fail "--force resumed: $(tail -2 "$tmp/pyerr")"

echo "compare: extended like train --resume --steps N (issue 48: a finished compare could not be)"
# no --warmup: the default (a tenth of --steps) must stay the first compare's, 0 for 6 steps, when rerun with 10
TX=${TR/--warmup 2 /}
expect 0 "a 6-step compare" "$GF" compare $M $TX --out "$tmp/ext"
want="extending the compare in $tmp/ext from 6 to 10 steps: every run goes on from its state"
expect 0 "... run again with --steps 10: extended, not refused" "$GF" compare $M ${TX/--steps 6/--steps 10} --out "$tmp/ext"
[ "$(cmp_state_step_of "$tmp/ext/grassmann-tiny")" = 10 ] && [ "$(cmp_state_step_of "$tmp/ext/transformer-tiny")" = 10 ] \
    && grep -q '"steps":	10' "$tmp/ext/summary.json" && pass "... both runs at step 10, the summary's recipe says 10 steps" \
    || fail "extended compare: $(grep -c resuming "$tmp/err") resumed; $(grep '"steps"' "$tmp/ext/summary.json" | head -3)"
"$GF" train --model grassmann-tiny $TX --out "$tmp/ext-train" >/dev/null 2>&1 && "$GF" train --resume "$tmp/ext-train" --steps 10 >/dev/null 2>&1
[ "$(grep '"type": "eval"' "$tmp/ext/grassmann-tiny/metrics.jsonl" | tail -1)" != "" ] \
    && [ "$(grep '"type": "eval"' "$tmp/ext/grassmann-tiny/metrics.jsonl" | tail -1 | sed 's/"elapsed_s": [^,]*,//')" = \
         "$(grep '"type": "eval"' "$tmp/ext-train/metrics.jsonl" | tail -1 | sed 's/"elapsed_s": [^,]*,//')" ] \
    && pass "... grassmann-tiny ends as train --resume DIR --steps 10 of the same 6-step run does" \
    || fail "extended compare vs train --resume --steps: $(grep '"type": "eval"' "$tmp/ext/grassmann-tiny/metrics.jsonl" "$tmp/ext-train/metrics.jsonl" | tail -2)"
want="holds a compare of 10 steps; this one asks for 8: a compare is extended, never cut back"
expect 1 "... run again with --steps 8: refused" "$GF" compare $M ${TX/--steps 6/--steps 8} --out "$tmp/ext"
grep -q "HINT: --steps 10 or more" "$tmp/err" && pass "... with a HINT" || fail "cut back: $(cat "$tmp/err")"
want="--epochs 3 and --steps 6: give one"; expect 2 "compare --epochs with --steps: refused" "$GF" compare $M $TX --epochs 3 --out "$tmp/ext2"

echo "compare: --seeds and --set MODEL:KEY=VALUE"
expect 0 "--seeds 1,2,3 with --set grassmann-tiny:rank=4" "$GF" compare $M $TR --seeds 1,2,3 --set grassmann-tiny:rank=4 --out "$tmp/s"
ls -d "$tmp"/s/{grassmann-tiny,transformer-tiny}/seed-{1,2,3} >/dev/null 2>&1 && pass "... a folder per model and seed" || fail "seed folders: $(ls -R "$tmp/s" | head)"
[ "$(grep -o "<polyline" "$tmp/s/curves.svg" | wc -l)" -ge 12 ] && grep -q "grassmann-tiny/seed-2" "$tmp/s/curves.svg" \
    && pass "... curves.svg has every seed's curves, named model/seed" || fail "seeds curves.svg: $(grep -o "<text[^<]*" "$tmp/s/curves.svg" | head)"
grep -q "mean ± sample standard deviation (n - 1) over 3 seeds" "$tmp/out" && grep -q "over 3 seeds" "$tmp/s/summary.md" && pass "... the table and summary.md say what ± is" || fail "table: $(cat "$tmp/out")"
PYCODE='
import json, statistics, sys
d = json.load(open(sys.argv[1] + "/summary.json")); u = json.load(open(sys.argv[2] + "/summary.json"))
for m in d["models"]:
    for k in ("val", "test"):
        xs = [r[k] for r in m["runs"]]
        assert len(set(xs)) == 3, xs  # each seed is its own run
        assert abs(m[k + "_mean"] - statistics.mean(xs)) <= 1e-12 * abs(m[k + "_mean"]), k
        assert abs(m[k + "_std"] - statistics.stdev(xs)) <= 1e-9 * m[k + "_std"], (k, m[k + "_std"], statistics.stdev(xs))
    assert [r["seed"] for r in m["runs"]] == [1, 2, 3]
g, t = d["models"]; ug, ut = u["models"]
assert g["set"] == ["rank=4"] and t["set"] == [], (g["set"], t["set"])
assert g["params"] < ug["params"] and t["params"] == ut["params"], (g["params"], ug["params"], t["params"], ut["params"])
'
py "$tmp/s" "$tmp/i" && pass "... mean and sample std recomputed from the per-seed runs; the --set changed only its model" \
    || fail "seeds: $(tail -2 "$tmp/pyerr")"
want="--set rank=4 does not apply to the model transformer-tiny: .*no layer of this model has a mixer with key \"rank\""
expect 2 "a --set that does not fit one model names it" "$GF" compare $M $TR --set rank=4 --out "$tmp/x"
want="HINT: set it only on the models it applies to: --set grassmann-tiny:rank=4"
expect 2 "... and the fix" "$GF" compare $M $TR --set rank=4 --out "$tmp/x"
want="--set nosuch:rank=4: nosuch is not one of --models"; expect 2 "a --set for a model not compared" "$GF" compare $M $TR --set nosuch:rank=4 --out "$tmp/x"
want="--seed and --seeds"; expect 2 "--seed with --seeds" "$GF" compare $M $TR --seed 3 --seeds 1,2 --out "$tmp/x"
[ ! -e "$tmp/x" ] && pass "... and nothing is created" || fail "a refused compare left $tmp/x"
# every model's config with its --set options is checked against the recipe before the first trains
want="the model transformer-tiny with its --set options: --seq-len 16 is above the model's max_len 8"
expect 2 "--set transformer-tiny:max_len=8 under --seq-len 16: refused before grassmann-tiny trains" "$GF" compare $M $TR --set transformer-tiny:max_len=8 --out "$tmp/x"
[ ! -e "$tmp/x" ] && pass "... and nothing is created" || fail "a refused compare left $tmp/x"
want="--set transformer-tiny:vocab_size=10 does not apply with --task lm: the vocabulary is the tokenizer's"
expect 2 "--set vocab_size (for one model): refused, not ignored" "$GF" compare $M $TR --set transformer-tiny:vocab_size=10 --out "$tmp/x"
[ ! -e "$tmp/x" ] && pass "... and nothing is created" || fail "a refused compare left $tmp/x"
want="--seeds 1,,2: item 2 is empty"; expect 2 "--seeds 1,,2" "$GF" compare $M $TR --seeds 1,,2 --out "$tmp/x"
want="--seeds 1,2,: item 3 is empty"; expect 2 "--seeds 1,2, (a trailing comma)" "$GF" compare $M $TR --seeds 1,2, --out "$tmp/x"
want="--seeds 3,03: lists the seed 3 twice"; expect 2 "--seeds 3,03 (one seed twice)" "$GF" compare $M $TR --seeds 3,03 --out "$tmp/x"
want="--seeds expects an integer .* got 'two'"; expect 2 "--seeds 1,two" "$GF" compare $M $TR --seeds 1,two --out "$tmp/x"
want="--models grassmann-tiny,,transformer-tiny: item 2 is empty"; expect 2 "--models with an empty item" "$GF" compare --models grassmann-tiny,,transformer-tiny $TR --out "$tmp/x"
[ ! -e "$tmp/x" ] && pass "... and nothing is created" || fail "a refused compare left $tmp/x"

echo "compare: summary.json is a cache of what the run folders prove (two compares on one --out, edits, copies)"
runs_in() { $PY -c "
import json, sys; d = json.load(open(sys.argv[1] + '/summary.json'))
print(' '.join(sorted(r['dir'] + ':' + r['status'] for m in d['models'] for r in m['runs'])))" "$1"; }
expect 0 "a compare of one model" "$GF" compare --models grassmann-tiny $TR --out "$tmp/two"
expect 0 "... another compare of another model on the same --out" "$GF" compare --models transformer-tiny $TR --out "$tmp/two"
grep -q "summary.json also lists 1 run of another compare on this --out: models grassmann-tiny" "$tmp/out" \
    && pass "... says the summary also lists the first one's run" || fail "carried note: $(tail -3 "$tmp/out")"
[ "$(runs_in "$tmp/two")" = "grassmann-tiny:done transformer-tiny:done" ] && pass "... the summary lists both finished runs" || fail "summary runs: $(runs_in "$tmp/two")"
want=; expect 0 "... and the first command still continues (reads its run back)" "$GF" compare --models grassmann-tiny $TR --out "$tmp/two"
grep -q "from scratch\|resuming" "$tmp/err" && fail "... but it trained again: $(head -c 300 "$tmp/err")" || pass "... without training again"
[ "$(runs_in "$tmp/two")" = "grassmann-tiny:done transformer-tiny:done" ] && pass "... and the summary still lists both" || fail "summary runs after: $(runs_in "$tmp/two")"
# at once: each write takes the summary's lock and merges what is on disk
"$GF" compare --models grassmann-tiny $TR --out "$tmp/once" >/dev/null 2>"$tmp/err1" & p1=$!
"$GF" compare --models transformer-tiny $TR --out "$tmp/once" >/dev/null 2>"$tmp/err2" & p2=$!
wait $p1; r1=$?; wait $p2; r2=$?
[ $r1 = 0 ] && [ $r2 = 0 ] && [ "$(runs_in "$tmp/once")" = "grassmann-tiny:done transformer-tiny:done" ] \
    && pass "two compares at once on one --out: both finish, the summary lists both runs" || fail "at once: exit $r1 $r2, $(runs_in "$tmp/once") $(tail -c 300 "$tmp/err1" "$tmp/err2")"
expect 0 "--seeds 1,2,3" "$GF" compare --models grassmann-tiny $TR --seeds 1,2,3 --out "$tmp/seeds3"
expect 0 "... then --seeds 1,2 on the same --out" "$GF" compare --models grassmann-tiny $TR --seeds 1,2 --out "$tmp/seeds3"
[ "$(runs_in "$tmp/seeds3")" = "grassmann-tiny/seed-1:done grassmann-tiny/seed-2:done grassmann-tiny/seed-3:done" ] \
    && pass "... the summary still lists seed 3" || fail "seeds summary: $(runs_in "$tmp/seeds3")"
expect 0 "... and --seeds 1,2,3 continues" "$GF" compare --models grassmann-tiny $TR --seeds 1,2,3 --out "$tmp/seeds3"
grep -q "from scratch\|resuming" "$tmp/err" && fail "... but it trained again" || pass "... reading every run back"
cp "$tmp/out" "$tmp/table3"
row() { grep "^grassmann-tiny" "$1" | tr -s ' ' | cut -d' ' -f1-9; } # model, params, trainable, val ± sd, test ± sd
edit() { $PY - "$tmp/seeds3/summary.json" "$1" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1])); m = d["models"][0]
exec(sys.argv[2])
json.dump(d, open(sys.argv[1], "w"))
PYEOF
}
edit 'm["runs"][1]["test"] = 1.5'
expect 0 "a test score changed in summary.json is not believed" "$GF" compare --models grassmann-tiny $TR --seeds 1,2,3 --out "$tmp/seeds3"
grep -q "gave $tmp/seeds3/grassmann-tiny/seed-2 a test score of 1.5; its best checkpoint scores" "$tmp/err" && pass "... it is scored again, and named as corrected" || fail "no correction note: $(head -c 400 "$tmp/err")"
[ "$(row "$tmp/out")" = "$(row "$tmp/table3")" ] && pass "... the same table as before the edit" || fail "after the test edit: $(row "$tmp/out") vs $(row "$tmp/table3")"
edit 'm["runs"][0]["val"] = -5; m["trainable"] = 1e30'
expect 0 "val -5 and trainable 1e30 in summary.json are not believed" "$GF" compare --models grassmann-tiny $TR --seeds 1,2,3 --out "$tmp/seeds3"
[ "$(row "$tmp/out")" = "$(row "$tmp/table3")" ] && pass "... the runs are read again from their folders: the same table as before the edit" || fail "edited summary: $(row "$tmp/out") vs $(row "$tmp/table3")"
! grep -q -- "-5\.00\|-9223372036854775808" "$tmp/out" "$tmp/seeds3/summary.json" && pass "... no -5 and no INT64_MIN anywhere" || fail "edited numbers leaked"
"$GF" train --model transformer-tiny $TR --seed 2 --out "$tmp/other" >/dev/null 2>&1
cp "$tmp/other"/* "$tmp/seeds3/grassmann-tiny/seed-2/"
want="seed-2 holds the state of a run \(of transformer-tiny\) whose model is not this compare's for grassmann-tiny"
expect 1 "a transformer-tiny state copied into grassmann-tiny/seed-2 is refused, not averaged in" "$GF" compare --models grassmann-tiny $TR --seeds 1,2,3 --out "$tmp/seeds3"
rm "$tmp/seeds3/grassmann-tiny/seed-1/state.safetensors"
want="seed-1 holds best.safetensors but no state.safetensors"
expect 1 "a finished run whose state was deleted is refused, not trained over" "$GF" compare --models grassmann-tiny $TR --seeds 1,2,3 --out "$tmp/seeds3"
[ -f "$tmp/seeds3/grassmann-tiny/seed-1/best.safetensors" ] && pass "... its checkpoints stay" || fail "checkpoints of the run without a state are gone"
echo "compare: names that break formats (a script tag, a tab, a newline; bytes that are not UTF-8 are refused)"
GFA=$(cd "$(dirname "$GF")" && pwd)/grassflow
mkdir -p "$tmp/names/<script>alert(1)<" && cd "$tmp/names" || exit 1
N1='<script>alert(1)</script>.json' N2=$(printf 'a\tb|c\nd.json') N3=$(printf 'x\xffy.json') NC=$(printf 'c<b>|\tx.txt')
for n in "$N1" "$N2" "$N3"; do echo '{"base": "grassmann-tiny"}' >"$n"; done
cp "$tmp/small.txt" "$NC"
want="--models x.*xffy.json: byte 1 \(0xff\) is not UTF-8"
expect 2 "a model named with a byte that is not UTF-8: refused before anything is written (its run folder goes into every checkpoint's JSON header)" "$GFA" compare --models "$N1,$N3" --corpus "$NC" ${TR#--corpus $tmp/small.txt} --out o3
[ ! -e o3 ] && pass "... no o3 folder" || fail "... o3 written: $(ls -R o3 | head -5)"
NAMES=(--models "$N1,$N2" --corpus "$NC" ${TR#--corpus $tmp/small.txt} --out o)
expect 0 "compare two models so named, on a corpus so named" "$GFA" compare "${NAMES[@]}"
PYCODE='
import re
md = open("o/summary.md", "rb").read().decode("utf-8", "strict")
assert "<script" not in md and "<b>" not in md, "raw HTML in summary.md"
rows = [re.split(r"(?<!\\)\|", l)[1:-1] for l in md.splitlines() if l.startswith("| ") and "model" not in l]
assert [r[0].strip() for r in rows] == ["&lt;script&gt;alert(1)&lt;/script&gt;.json", r"a\tb\|c\nd.json"], rows
assert all(len(r) == 8 for r in rows), rows
assert r"c&lt;b&gt;\|\tx.txt, tokenizer word (vocabulary 12)" in md, md
'
py && pass "... summary.md: no HTML, a row of 8 cells per model, the names and the corpus shown as they are" || fail "names in summary.md: $(tail -1 "$tmp/pyerr")"
PYCODE='
import csv
tsv = list(csv.reader(open("o/summary.tsv", encoding="utf-8"), delimiter="\t", quoting=csv.QUOTE_NONE))
assert len(tsv) == 3 and all(len(r) == 11 for r in tsv), tsv
assert [r[0] for r in tsv[1:]] == ["<script>alert(1)</script>.json", r"a\tb|c\nd.json"], tsv
'
py && pass "... summary.tsv: 11 columns on each of 3 lines (a tab and a newline as \\t \\n)" || fail "names in summary.tsv: $(tail -1 "$tmp/pyerr")"
PYCODE='
import json
d = json.loads(open("o/summary.json", "rb").read().decode("utf-8", "strict"))
assert [m["model"] for m in d["models"]] == ["<script>alert(1)</script>.json", "a\tb|c\nd.json"], d["models"]
assert d["recipe"]["corpus"] == "c<b>|\tx.txt", d["recipe"]["corpus"]
'
py && pass "... summary.json is UTF-8, the names as they are" || fail "names in summary.json: $(tail -1 "$tmp/pyerr")"
PYCODE='
import xml.dom.minidom
assert len(xml.dom.minidom.parse("o/curves.svg").getElementsByTagName("polyline")) == 4
'
py && pass "... curves.svg is XML" || fail "names in curves.svg: $(tail -1 "$tmp/pyerr")"
PYCODE='
import sys
out = open(sys.argv[1], "rb").read().decode("utf-8", "strict").splitlines()
h = next(i for i, l in enumerate(out) if l.startswith("model "))
assert [l.split(" ")[0] for l in out[h + 1:h + 3]] == ["<script>alert(1)</script>.json", r"a\tb|c\nd.json"], out
assert out[h + 3].startswith("recipe: ") and r"c<b>|\tx.txt, tokenizer" in out[h + 3], out[h + 3]
assert all("\t" not in l for l in out), out
'
py "$tmp/out" && pass "... the printed table: a line per model, no tab" || fail "names in the printed table: $(tail -1 "$tmp/pyerr")"
expect 0 "... a rerun" "$GFA" compare "${NAMES[@]}"
grep -q "step" "$tmp/err" && fail "... trained again: $(head -2 "$tmp/err")" || pass "... reads every run back from summary.json, trains nothing"
cd - >/dev/null || exit 1

echo "compare: --help"
"$GF" compare --help >"$tmp/help"
! grep -q -- "--head\|--stop-at\|--accept-changed-data\|--model PRESET\|--vocab" "$tmp/help" && grep -q -- "--seeds" "$tmp/help" \
    && pass "--help lists no option that does not apply to compare" || fail "compare --help: $(grep -- "--head\|--stop-at\|--vocab" "$tmp/help")"

[ $fails = 0 ] && echo "compare: all passed" || { echo "compare: $fails FAILED"; exit 1; }
