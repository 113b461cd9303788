#!/usr/bin/env bash
# A task added from one file (tests/plugins/task_vectors.c: sequences of float vectors, one class each, no tokenizer),
# linked into a build of the command, goes through the commands' generic paths: train (its option --dim
# stored in the recipe, its classes from the data; its own metric, an error rate where lower is better, through the
# best checkpoint, --patience, eval, compare's summary and table, and plot), eval (with its class names, the count named as
# it counts), a run stopped and resumed bit for bit, compare, and the refusals (another task's flag, a
# corrupt file). No line of the library or the command names the task.
set -uo pipefail
BUILD=${1:-build}
GF="$BUILD/tests/grassflow-vectors"
PY=/usr/bin/python3
tmp=$(mktemp -d /tmp/grassflow-taskplugin-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. tests/lib.sh
[ -x "$GF" ] || { echo "task_plugin: $GF is missing (make $GF)"; exit 1; }

echo "task_plugin: data (two classes: vectors around +0.5 or -0.5, 6 positions of 3 numbers)"
mkdir -p "$tmp/vec"
$PY - "$tmp/vec" <<'PYEOF'
import random, sys
random.seed(5)
for name, n in (("train", 240), ("valid", 60), ("test", 60)):
    with open(f"{sys.argv[1]}/{name}.txt", "w") as f:
        f.write("classes: down up\n")
        for _ in range(n):
            c = random.randrange(2)
            mu = 0.5 if c else -0.5
            f.write(("up" if c else "down") + " " + " ".join(f"{random.gauss(mu, 1.0):.4f}" for _ in range(18)) + "\n")
PYEOF
R=(--model grassmann-tiny --task vectors --corpus "$tmp/vec" --dim 3 --batch 16 --lr 3e-3 --warmup 5 --eval-every 10 --seed 7)

echo "task_plugin: train, eval, resume"
expect 0 "train --task vectors (a task the command does not name)" "$GF" train "${R[@]}" --steps 30 --out "$tmp/a"
grep -q 'vectors' "$tmp/err" && grep -q 'sequences of float vectors' <("$GF" train --help) && pass "train --help lists the task and its option" || fail "train --help: $("$GF" train --help | tail -5)"
"$GF" info --tasks | grep -Eq '^    vectors +sequences of float vectors' && "$GF" info --tasks | grep -q -- '--dim ' && pass "info --tasks lists the added task and its option" || fail "info --tasks: $("$GF" info --tasks)"
err=$(sed -n 's/.*test error rate \([0-9.]*\).*/\1/p' "$tmp/out")
$PY -c "import sys; sys.exit(0 if float('$err') <= 0.2 else 1)" && pass "it learns the task: test error rate $err (its own metric)" || fail "test error rate '$err': $(cat "$tmp/out")"
$PY - "$tmp/a" <<'PYEOF' && pass "metrics.jsonl: the metric error_rate, val_err on every evaluation; best.safetensors is the first of lowest error rate (is_best), the state keeps it as best_val_err" || fail "the task's metric in the run: $(head -c 600 "$tmp/a/metrics.jsonl")"
import json, struct, sys
rows = [json.loads(l) for l in open(sys.argv[1] + "/metrics.jsonl")]
assert rows[0]["type"] == "start" and rows[0]["metric"] == "error_rate", rows[0]
ev = [r for r in rows if r["type"] == "eval"]
assert len(ev) == 3 and all("val_err" in r and "val_acc" not in r for r in ev), ev
best = None
for r in ev:
    assert r["is_best"] == (best is None or r["val_err"] < best), (r, best)
    if r["is_best"]: best, step = r["val_err"], r["step"]
def meta(f):
    b = open(f, "rb").read(); n = struct.unpack("<Q", b[:8])[0]; return json.loads(b[8:8 + n])["__metadata__"]
assert meta(sys.argv[1] + "/best.safetensors")["step"] == str(step), (meta(sys.argv[1] + "/best.safetensors")["step"], step)
st = meta(sys.argv[1] + "/state.safetensors")
assert abs(float(st["best_val_err"]) - best) < 1e-6 and "best_val_acc" not in st, st.keys()
PYEOF
expect 0 "--patience 1: early stopping counts evaluations without a lower error rate" "$GF" train "${R[@]}" --steps 200 --eval-every 5 --lr 3e-2 --patience 1 --out "$tmp/p"
grep -q "no validation error rate below the best" "$tmp/err" && pass "... and says so in the metric's words: $(grep -o 'no validation error rate below the best[^;]*' "$tmp/err" | head -1)" || fail "patience: $(tail -3 "$tmp/err")"
acc=$($PY -c "print(1 - float('$err'))")
grep -q 'seq/s' "$tmp/out" && pass "the summary counts in the task's unit (seq/s)" || fail "summary: $(cat "$tmp/out")"
$PY - "$tmp/a/best.safetensors" <<'PYEOF' && pass "the recipe stores the task and its option (task vectors, dim 3); no tokenizer" || fail "recipe: $(head -c 300 "$tmp/err")"
import json, struct, sys
b = open(sys.argv[1], "rb").read(); n = struct.unpack("<Q", b[:8])[0]; meta = json.loads(b[8:8 + n])["__metadata__"]
r = json.loads(meta["train"]); assert r["task"] == "vectors" and r["dim"] == 3, r
assert "tokenizer" not in meta, meta.keys()
PYEOF
expect 0 "eval picks the task the checkpoint was trained for" "$GF" eval --ckpt "$tmp/a/best.safetensors" --corpus "$tmp/vec" --split test --json
$PY -c "
import json, sys; r = json.load(open('$tmp/out'))
assert r['sequences'] == 60 and set(r['per_class']) == {'down', 'up'} and len(r['confusion']) == 2, r
assert abs(r['error_rate'] - float('$err')) < 5.1e-5 and abs(r['accuracy'] + r['error_rate'] - 1) < 1e-9, (r, '$err')" 2>"$tmp/err" \
    && pass "eval --json: 60 sequences, the classes by name, the error rate train reported (and the accuracy)" || fail "eval json: $(cat "$tmp/out") $(cat "$tmp/err")"
expect 0 "eval as text" "$GF" eval --ckpt "$tmp/a/best.safetensors" --corpus "$tmp/vec" --split test
grep -Eq '^  up ' "$tmp/out" && grep -q 'sequences 60  error rate [0-9.]*  accuracy' "$tmp/out" && pass "the text report names the classes and the task's metric" || fail "eval text: $(cat "$tmp/out")"
expect 0 "a run stopped at step 12" "$GF" train "${R[@]}" --steps 30 --out "$tmp/b" --stop-at 12
stopped_at "$tmp/b" 12
expect 0 "... resumed" "$GF" train --resume "$tmp/b"
$PY - "$tmp/a/last.safetensors" "$tmp/b/last.safetensors" <<'PYEOF' && pass "the resumed run ends bit for bit where the uninterrupted one did" || fail "resumed weights differ"
import sys
sys.path.insert(0, "tests/parity/torch_ref")
import st_io
a, ma = st_io.read(sys.argv[1]); b, mb = st_io.read(sys.argv[2])
assert list(a) == list(b) and ma["step"] == mb["step"] == "30", (ma["step"], mb["step"])
sys.exit(1 if [k for k in a if a[k].tobytes() != b[k].tobytes()] else 0)
PYEOF

echo "task_plugin: compare"
expect 0 "compare two models on the task" "$GF" compare --models grassmann-tiny,transformer-tiny --task vectors --corpus "$tmp/vec" --dim 3 --steps 10 --batch 16 --eval-every 0 --out "$tmp/cmp"
grep -q 'recipe: task vectors (dim 3)' "$tmp/out" && grep -q 'seq/s' "$tmp/out" && pass "the table names the task, its options and its unit" || fail "compare: $(cat "$tmp/out")"
grep -Eq 'dev err +test err' "$tmp/out" && grep -Eq 'reference|pts' "$tmp/out" && grep -q '| dev err | test err |' "$tmp/cmp/summary.md" \
    && $PY -c "
import json, sys; s = json.load(open('$tmp/cmp/summary.json'))
assert s['metric'] == 'error_rate' and s['val'] == 'dev error rate of the best checkpoint' and s['gap'].endswith('points'), s
assert all(0 <= m['runs'][0]['test'] <= 1 for m in s['models']), s['models']" \
    && pass "compare's table, summary.md and summary.json in the task's metric (dev err, test err, points)" || fail "compare's metric: $(cat "$tmp/out") $(head -c 300 "$tmp/cmp/summary.json")"
expect 0 "plot the runs" "$GF" plot "$tmp/a" "$tmp/p" --out "$tmp/v.svg"
grep -q 'validation error rate' "$tmp/v.svg" && pass "plot: a panel of the task's metric below the loss (validation error rate)" || fail "plot: $(grep -o '<text[^>]*>[^<]*' "$tmp/v.svg" | head -5)"
expect 0 "plot --metric error_rate" "$GF" plot "$tmp/a" --metric error_rate --out "$tmp/v2.svg" --force
want="--metric: 'bleu' is not one of loss, ppl, accuracy, error_rate"; expect 2 "plot --metric: the names there are, the task's among them" "$GF" plot "$tmp/a" --metric bleu

echo "task_plugin: class names from the data that break formats (a byte that is not UTF-8, an escape sequence, | and <)"
mkdir -p "$tmp/odd"
for f in train valid test; do
    { printf 'classes: d\xffown \x1b[31mup s|<i>de\n'; sed 1d "$tmp/vec/$f.txt" | sed 's/^up /\x1b[31mup /; s/^down /d\xffown /'; } >"$tmp/odd/$f.txt"
done
expect 0 "train on them" "$GF" train "${R[@]}" --corpus "$tmp/odd" --steps 6 --out "$tmp/o"
expect 0 "predict: a TSV line per sequence" "$GF" predict --ckpt "$tmp/o/best.safetensors" --corpus "$tmp/odd" --split test
$PY - "$tmp/out" <<'PYEOF' 2>"$tmp/pyerr" && pass "... UTF-8, the names as fields (\\xff, \\x1b), 6 columns on every line" || fail "predict TSV: $(tail -1 "$tmp/pyerr")"
import csv, sys
rows = list(csv.reader(open(sys.argv[1], "rb").read().decode("utf-8", "strict").splitlines(), delimiter="\t", quoting=csv.QUOTE_NONE))
assert rows[0] == ["index", "label", r"d\xffown", r"\x1b[31mup", "s|<i>de", "gold"], rows[0]
assert len(rows) == 61 and all(len(r) == 6 for r in rows), [r for r in rows if len(r) != 6][:3]
PYEOF
expect 0 "predict --json" "$GF" predict --ckpt "$tmp/o/best.safetensors" --corpus "$tmp/odd" --split test --json --limit 2
$PY -c "
import json, sys
for l in open(sys.argv[1], 'rb').read().decode('utf-8', 'strict').splitlines():
    assert set(json.loads(l)['probs']) == {'d\ufffdown', '\x1b[31mup', 's|<i>de'}, l" "$tmp/out" 2>"$tmp/pyerr" \
    && pass "... each line UTF-8 JSON (U+FFFD for the byte)" || fail "predict --json: $(tail -1 "$tmp/pyerr")"
expect 0 "eval --json" "$GF" eval --ckpt "$tmp/o/best.safetensors" --corpus "$tmp/odd" --split test --json
$PY -c "
import json, sys
assert set(json.loads(open(sys.argv[1], 'rb').read().decode('utf-8', 'strict'))['per_class']) == {'d\ufffdown', '\x1b[31mup', 's|<i>de'}" "$tmp/out" 2>"$tmp/pyerr" \
    && pass "... UTF-8 JSON" || fail "eval --json: $(tail -1 "$tmp/pyerr")"
expect 0 "eval as text" "$GF" eval --ckpt "$tmp/o/best.safetensors" --corpus "$tmp/odd" --split test
$PY -c "
import sys
t = open(sys.argv[1], 'rb').read().decode('utf-8', 'strict')
assert '\x1b' not in t and '  \\\\x1b[31mup       ' in t and '  d\\\\xffown          ' in t, t" "$tmp/out" 2>"$tmp/pyerr" \
    && pass "... the table: no escape sequence reaches the terminal, each name in its 14 columns" || fail "eval text: $(tail -1 "$tmp/pyerr")"

echo "task_plugin: refusals"
want="--seq-len does not apply to --task vectors.*it is for --task lm"; expect 2 "another task's flag" "$GF" train "${R[@]}" --steps 3 --out "$tmp/x" --seq-len 8
want="--max-sent does not apply to --task vectors \(the task .* was trained for\)"; expect 2 "another task's flag on eval" "$GF" eval --ckpt "$tmp/a/best.safetensors" --corpus "$tmp/vec" --max-sent 8
want="--dim: .*4097"; expect 2 "an option out of its range" "$GF" train "${R[@]}" --steps 3 --out "$tmp/x" --dim 4097
want="--dim does not apply to --task lm"; expect 2 "the task's flag with another task" "$GF" train --model grassmann-tiny --corpus tinyshakespeare --steps 1 --out "$tmp/x" --dim 3
cp -r "$tmp/vec" "$tmp/bad" && echo "sideways 1 2 3" >>"$tmp/bad/valid.txt"
want="valid.txt:62: the class sideways is not one of the file's classes"; expect 1 "a corrupt split names its file and line" "$GF" train "${R[@]}" --steps 3 --corpus "$tmp/bad" --out "$tmp/x"
[ ! -e "$tmp/x" ] && pass "a refused run leaves no folder" || fail "$tmp/x was created"
want="the vectors task reads"; expect 1 "a missing corpus" "$GF" eval --ckpt "$tmp/a/best.safetensors" --corpus "$tmp/nowhere"

[ "$fails" -eq 0 ] && echo "task_plugin: all passed" || { echo "task_plugin: $fails FAILED"; exit 1; }
