#!/usr/bin/env bash
# A task added from one file (tests/task_vectors.c: sequences of float vectors, one class each, no tokenizer),
# linked into a build of the command, goes through the commands' generic paths: train (its option --dim
# stored in the recipe, its classes from the data), eval (accuracy with its class names, the count named as
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
acc=$(sed -n 's/.*test accuracy \([0-9.]*\).*/\1/p' "$tmp/out")
$PY -c "import sys; sys.exit(0 if float('$acc') >= 0.8 else 1)" && pass "it learns the task: test accuracy $acc" || fail "test accuracy '$acc': $(cat "$tmp/out")"
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
assert abs(r['accuracy'] - float('$acc')) < 5.1e-5, (r['accuracy'], '$acc')" 2>"$tmp/err" \
    && pass "eval --json: 60 sequences, the classes by name, the accuracy train reported" || fail "eval json: $(cat "$tmp/out") $(cat "$tmp/err")"
expect 0 "eval as text" "$GF" eval --ckpt "$tmp/a/best.safetensors" --corpus "$tmp/vec" --split test
grep -Eq '^  up ' "$tmp/out" && grep -q 'sequences 60' "$tmp/out" && pass "the text report names the classes" || fail "eval text: $(cat "$tmp/out")"
expect 0 "a run stopped at step 12" "$GF" train "${R[@]}" --steps 30 --out "$tmp/b" --stop-at 12
stopped_at "$tmp/b" 12
expect 0 "... resumed" "$GF" train --resume "$tmp/b"
$PY - "$tmp/a/last.safetensors" "$tmp/b/last.safetensors" <<'PYEOF' && pass "the resumed run ends bit for bit where the uninterrupted one did" || fail "resumed weights differ"
import sys
sys.path.insert(0, "tests/torch_ref")
import st_io
a, ma = st_io.read(sys.argv[1]); b, mb = st_io.read(sys.argv[2])
assert list(a) == list(b) and ma["step"] == mb["step"] == "30", (ma["step"], mb["step"])
sys.exit(1 if [k for k in a if a[k].tobytes() != b[k].tobytes()] else 0)
PYEOF

echo "task_plugin: compare"
expect 0 "compare two models on the task" "$GF" compare --models grassmann-tiny,transformer-tiny --task vectors --corpus "$tmp/vec" --dim 3 --steps 10 --batch 16 --eval-every 0 --out "$tmp/cmp"
grep -q 'recipe: task vectors (dim 3)' "$tmp/out" && grep -q 'seq/s' "$tmp/out" && pass "the table names the task, its options and its unit" || fail "compare: $(cat "$tmp/out")"

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
