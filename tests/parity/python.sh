#!/usr/bin/env bash
# The Python package (python/grassflow) against the C engine, on five tiny models trained here: a Grassmann
# LM (word tokens, learned positions), a Transformer LM (bytes), a hybrid (grassmann, attention, grassmann in
# post-norm, then a stack of a windowed multi-head Grassmann layer and attention; chars, sinusoidal), window
# attention with global tokens under attention (chars) and an SNLI classifier (WordPiece pairs with token
# types, attention and Grassmann layers, a windowed stack on top, then a linformer stack).
#   - ctypes (no PyTorch in the process): score = grassflow score / eval, generate (streamed, greedy and
#     sampled) = grassflow generate, features = grassflow features --json (also of a Hugging Face DistilBERT
#     folder, and as lists without numpy), predict = eval's accuracy and loss;
#   - grassflow.torch.load(path): the module's float32 logits within 1e-5 of the C engine's, for all five
#     (and for int8 and bf16 files of grassflow quantize, read as the values they stand for);
#     a mixer key at the top level of a config reaches its layers as in the C engine;
#     a changed weight is seen; a PyTorch fine-tuning step saved back is read by the C engine; refusals;
#   - Model.decode (greedy and beam search of an encoder-decoder) equals tests/parity/beam_check.py's beam
#     search over the PyTorch reference, on tiny Transformer, Grassmann, GRU and GRU-Bahdanau encoder-decoders;
#   - the package's checks of arguments before they cross to C, and of what outlives close(); close() in one
#     thread while another is inside a call on the model;
#   - the README's Python block as one script, grassflow imported before torch and after (no hang);
#   - OpenBLAS's kernel: left unset, the package gives OpenBLAS its fast core type as the command does.
set -euo pipefail
BUILD=${1:-build}
PY=/usr/bin/python3
GF="$BUILD/grassflow"
if ! $PY -c 'import torch, numpy' 2>/dev/null; then
    echo "python: PyTorch is missing for $PY; install it with: apt-get install python3-torch python3-numpy" >&2
    exit 1
fi
tmp=$(mktemp -d /tmp/grassflow-python-XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT
export PYTHONPATH="$PWD/python" GRASSFLOW_LIB="$(cd "$BUILD" && pwd)/libgrassflow.so" TMPDIR_PY="$tmp"
# an ASan+UBSan build (make test-san): Python loads that library through ctypes, so the sanitizers' runtimes
# must be loaded first; what Python itself never frees is not the library's leak
if nm -D "$GRASSFLOW_LIB" 2>/dev/null | grep "U __asan_init" >/dev/null; then # (not -q: nm must not die of SIGPIPE)
    PY="env LD_PRELOAD=$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so) ASAN_OPTIONS=detect_leaks=0:${ASAN_OPTIONS:-} $PY"
fi
CHK="$PY tests/parity/python_check.py"
failed=0
pass() { echo "  ok   $1"; }
fail() { echo "  FAIL $1"; failed=1; }

echo "python: tiny models"
$PY - "$tmp/small.txt" <<'PYEOF'
import random, sys
random.seed(3)
words = "the game of café naïve story ends begins and then a an over".split()
open(sys.argv[1], "w").write("".join(" ".join(random.choice(words) for _ in range(random.randint(2, 12))) + "\n" for _ in range(300)))
PYEOF
cat >"$tmp/hybrid.json" <<'EOF'
{"base": "hybrid-tiny", "norm": "post", "tie_head": false, "pos": "sinusoidal",
 "stacks": [{"name": "top", "d_model": 24, "d_ff": 40, "n_layer": 2, "norm": "pre",
             "layers": [{"mixer": "grassmann", "rank": 8, "offsets": [1, 3], "heads": 2, "window": 4, "extra_proj": true},
                        {"mixer": "attention", "n_head": 3}]}]}
EOF
cat >"$tmp/classifier.json" <<'EOF'
{"base": "grassmann-tiny", "head": {"kind": "classify", "n_classes": 3}, "direction": "bidirectional",
 "segments": 2, "layers": [{"mixer": "grassmann", "rank": 6, "offsets": [1, 2, 4]}, {"mixer": "attention", "n_head": 4}],
 "stacks": [{"name": "head", "d_model": 32, "d_ff": 48, "n_layer": 1,
             "layers": [{"mixer": "grassmann", "rank": 8, "heads": 2, "offsets": [1, 2, 4], "window": 8}]},
            {"name": "lin", "d_model": 32, "d_ff": 48, "n_layer": 1, "layers": [{"mixer": "linformer", "n_head": 2, "k_proj": 8}]}]}
EOF
# the paper's Grassmann ablations: pair.weight in place of plucker.*, no gate.* (an LM and a padded classifier)
cat >"$tmp/ablation.json" <<'EOF'
{"base": "grassmann-tiny", "layers": [{"mixer": "grassmann", "rank": 8, "offsets": [1, 2, 4], "plucker": false},
                                      {"mixer": "grassmann", "rank": 6, "offsets": [1, 3], "gate": false, "extra_proj": true}]}
EOF
cat >"$tmp/ablation_classifier.json" <<'EOF'
{"base": "grassmann-tiny", "head": {"kind": "classify", "n_classes": 3}, "direction": "bidirectional", "segments": 2,
 "layers": [{"mixer": "grassmann", "rank": 6, "offsets": [1, 2, 4], "window": 8, "plucker": false, "gate": false},
            {"mixer": "grassmann", "rank": 6, "offsets": [1, 3], "plucker": false}]}
EOF
mkdir -p "$tmp/snli"
for s in train_0.01 dev test; do { xz -dc "data/snli/snli_1.0_$s.tsv.xz" || true; } | head -64 >"$tmp/snli/snli_1.0_${s%_0.01}.tsv"; done
TR="--corpus $tmp/small.txt --steps 3 --batch 4 --seq-len 16 --eval-every 0 --no-cache"
"$GF" train --model grassmann-tiny --tokenizer word $TR --out "$tmp/grassmann" >"$tmp/log" 2>&1 || { cat "$tmp/log"; exit 1; }
"$GF" train --model transformer-tiny --tokenizer byte $TR --out "$tmp/transformer" >"$tmp/log" 2>&1 || { cat "$tmp/log"; exit 1; }
"$GF" train --config "$tmp/hybrid.json" --tokenizer char $TR --out "$tmp/hybrid" >"$tmp/log" 2>&1 || { cat "$tmp/log"; exit 1; }
"$GF" train --model transformer-tiny --set mixers=w,a --set window=3 --set n_global=2 --tokenizer char $TR --out "$tmp/window" \
    >"$tmp/log" 2>&1 || { cat "$tmp/log"; exit 1; }
"$GF" train --task snli --config "$tmp/classifier.json" --corpus "$tmp/snli" --steps 6 --batch 8 --lr 0.03 --warmup 0 \
    --eval-every 0 --no-cache --out "$tmp/classifier" >"$tmp/log" 2>&1 || { cat "$tmp/log"; exit 1; }
"$GF" train --config "$tmp/ablation.json" --tokenizer word $TR --out "$tmp/ablation" >"$tmp/log" 2>&1 || { cat "$tmp/log"; exit 1; }
"$GF" train --task snli --config "$tmp/ablation_classifier.json" --corpus "$tmp/snli" --steps 6 --batch 8 --lr 0.03 --warmup 0 \
    --eval-every 0 --no-cache --out "$tmp/ablation_classifier" >"$tmp/log" 2>&1 || { cat "$tmp/log"; exit 1; }
# a performer (its omega redrawn every 2 steps: the checkpoint holds the last draw, which PyTorch must read)
"$GF" train --model transformer-tiny --set mixers=p,a --set features=16 --set redraw=2 --tokenizer word $TR \
    --out "$tmp/performer" >"$tmp/log" 2>&1 || { cat "$tmp/log"; exit 1; }
LMS="grassmann transformer hybrid window performer"
TEXT="the game of café ends
and then a story begins"
SHORT="the game of café" # at most max_len + 1 tokens for every tokenizer: one line for grassflow score
# features: the same ids and the same float32 values (cJSON prints a float's double to 15 digits when those
# read back to within its epsilon, so the doubles may differ below float32's precision)
same_json() { $PY -c "
import json, sys, numpy as np
a, b = (json.loads(x) for x in sys.argv[1:])
sys.exit(not a['ids'] or a['ids'] != b['ids'] or not np.array_equal(np.float32(a['hidden']), np.float32(b['hidden'])))" "$1" "$2"; }
close() { $PY -c "import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); sys.exit(not abs(a - b) <= 2e-6 * max(1, abs(b)))" "$1" "$2"; }
field() { $PY -c "import json, sys; print(json.loads(sys.argv[1])[sys.argv[2]])" "$1" "$2"; }

echo "python: the package (ctypes) against the command"
for name in $LMS; do
    ck="$tmp/$name/last.safetensors"
    # one line of ids: grassflow score
    $CHK ids "$ck" "$SHORT" >"$tmp/ids.txt"
    c=$("$GF" score --ckpt "$ck" --tokens "$tmp/ids.txt" --json 2>"$tmp/err") || fail "$name: grassflow score: $(cat "$tmp/err")"
    p=$($CHK score "$ck" "$SHORT")
    [ "$(field "$c" tokens)" = "$(field "$p" tokens)" ] && close "$(field "$p" loss)" "$(field "$c" loss)" \
        && pass "$name: score(text) = grassflow score of its ids ($(field "$c" tokens) tokens, loss $(field "$c" loss))" \
        || fail "$name: score: python $p, grassflow score $c"
    # a whole split in blocks: grassflow eval --seq-len
    mkdir -p "$tmp/corpus" && for s in train valid test; do head -40 "$tmp/small.txt" >"$tmp/corpus/$s.txt"; done
    c=$("$GF" eval --ckpt "$ck" --corpus "$tmp/corpus" --split test --seq-len 12 --json 2>/dev/null)
    p=$($CHK score "$ck" "@$tmp/corpus/test.txt" 12)
    [ "$(field "$c" tokens)" = "$(field "$p" tokens)" ] && close "$(field "$p" loss)" "$(field "$c" loss)" \
        && pass "$name: score(split, seq_len=12) = grassflow eval --seq-len 12 ($(field "$c" tokens) tokens)" \
        || fail "$name: score of a split: python $p, grassflow eval $c"
    # generate, streamed: the same bytes (60 tokens: past the word model's max_len 32, so its window slides)
    for flags in "0 0 1 1234" "1.3 40 0.9 8" "1 0 1 77"; do
        read -r T K P S <<<"$flags"
        sflags=(--temperature "$T"); [ "$T" = 0 ] || sflags+=(--top-k "$K" --top-p "$P" --seed "$S")
        a=$("$GF" generate --ckpt "$ck" --prompt "the game" --tokens 60 "${sflags[@]}" 2>/dev/null | od -c)
        b=$($CHK generate "$ck" "the game" 60 "$T" "$K" "$P" "$S" | od -c)
        [ $name != grassmann ] || b=$($CHK generate-text "$ck" "the game" 60 "$T" "$K" "$P" "$S" | od -c) # as str
        [ "$a" != 0000000 ] && [ "$a" = "$b" ] && pass "$name: generate (temperature $T, top-k $K, top-p $P, seed $S) = grassflow generate" \
            || fail "$name: generate $flags differs: $(diff <(echo "$a") <(echo "$b") | head -4)"
    done
    a=$("$GF" features --ckpt "$ck" --text "$SHORT" --json 2>/dev/null)
    b=$($CHK features "$ck" "$SHORT")
    same_json "$a" "$b" && pass "$name: features = grassflow features --json (ids and every float)" || fail "$name: features differ"
    b=$(NO_NUMPY=1 $CHK features "$ck" "$SHORT")
    same_json "$a" "$b" && pass "$name: ... and the same as lists, without numpy" || fail "$name: features without numpy differ"
done

ck="$tmp/classifier/last.safetensors"
a=$("$GF" features --ckpt "$ck" --text "A man sleeps." --hypothesis "Nobody sleeps." --json 2>/dev/null)
b=$($CHK features "$ck" "A man sleeps." "Nobody sleeps.")
same_json "$a" "$b" && pass "classifier: features of a pair = grassflow features --hypothesis --json" || fail "classifier: pair features differ"
# a Hugging Face DistilBERT folder (tests/parity/torch_ref/distilbert.py writes a small one): read as the command reads it
$PY tests/parity/torch_ref/distilbert.py make --out "$tmp/hf" >/dev/null
a=$("$GF" features --ckpt "$tmp/hf" --text "A man is in the park." --json 2>/dev/null)
b=$($CHK features "$tmp/hf" "A man is in the park.")
same_json "$a" "$b" && pass "a DistilBERT folder: features = grassflow features --json" || fail "DistilBERT folder: features differ"
# predict: the dev pairs relabelled with Python's answers: eval's accuracy 1, its loss the mean -log p
$CHK predict "$ck" "$tmp/snli/snli_1.0_dev.tsv" >"$tmp/pred.jsonl"
"$GF" predict --ckpt "$ck" --corpus "$tmp/snli/snli_1.0_dev.tsv" --json >"$tmp/cli-pred.jsonl" 2>/dev/null
$PY - "$tmp/pred.jsonl" "$tmp/cli-pred.jsonl" <<'PYEOF' && pass "classifier: predict = grassflow predict --json on the same file (labels; probabilities to the digits it prints)" || fail "classifier: Python's predict differs from grassflow predict"
import json, sys
a = [json.loads(l) for l in open(sys.argv[1])]
b = [json.loads(l) for l in open(sys.argv[2])]
assert len(a) == len(b) > 0, (len(a), len(b))
for x, y in zip(a, b):
    assert x["label"] == y["label"], (x, y)
    probs = y["probs"] if isinstance(y["probs"], list) else [y["probs"][k] for k in ("entailment", "neutral", "contradiction")]
    assert all(abs(p - q) <= 5e-7 for p, q in zip(x["probs"], probs)), (x, y)
PYEOF
mkdir -p "$tmp/relabel"
cp "$tmp/snli/snli_1.0_train.tsv" "$tmp/snli/snli_1.0_test.tsv" "$tmp/relabel/"
$PY - "$tmp/snli/snli_1.0_dev.tsv" "$tmp/pred.jsonl" "$tmp/relabel/snli_1.0_dev.tsv" >"$tmp/want" <<'PYEOF'
import json, math, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1], encoding="utf-8") if l.strip()]
preds = [json.loads(l) for l in open(sys.argv[2])]
assert len(rows) == len(preds), (len(rows), len(preds))
with open(sys.argv[3], "w", encoding="utf-8") as f:
    for r, p in zip(rows, preds):
        f.write("\t".join([p["label"]] + r[1:]) + "\n")
print(sum(-math.log(p["probs"][p["index"]]) for p in preds) / len(preds), len({p["label"] for p in preds}))
PYEOF
read -r want_loss n_labels <"$tmp/want"
c=$("$GF" eval --ckpt "$ck" --corpus "$tmp/relabel" --split dev --json 2>/dev/null)
[ "$(field "$c" accuracy)" = 1 ] || [ "$(field "$c" accuracy)" = 1.0 ] && close "$want_loss" "$(field "$c" loss)" \
    && pass "classifier: predict's labels and probabilities = eval's (accuracy 1, loss $(field "$c" loss); $n_labels distinct labels)" \
    || fail "classifier: predict vs eval: want loss $want_loss, eval $c"

# what the package checks before an argument crosses to C, and what outlives close() (issue 47): ctypes
# masked an int to its C type's bits (hidden(stack=2**40) read stack 0), a NUL ended a C string, a token id
# outside the vocabulary was skipped, short token types were padded with 0s, a generator of a closed model
# read freed memory. Each is a ValueError naming the argument; the list ends with "end" (a crash cuts it).
echo "python: the package's checks of what crosses to C"
$CHK guards "$tmp/transformer/last.safetensors" "$tmp/classifier/last.safetensors" >"$tmp/guards" 2>"$tmp/guards.err" || true
while IFS= read -r line; do
    case "$line" in
        "ok "*) pass "${line#ok }";;
        end) ;;
        *) fail "$line";;
    esac
done <"$tmp/guards"
[ "$(tail -1 "$tmp/guards")" = end ] && [ "$(grep -c '^ok ' "$tmp/guards")" -ge 33 ] \
    || fail "python_check.py guards stopped early or ran too few cases: $(grep -c '^ok ' "$tmp/guards") ok; $(tail -c 300 "$tmp/guards.err")"

# close() in one thread while another is inside a C call on the same model (score, logits, hidden, encode,
# features, predict, a generator's next token): it freed the model under the call (a crash, or under make
# test-san a heap-use-after-free). The call now finishes first and the next one is a ValueError ("closed").
echo "python: close() while another thread is inside a call on the model"
$CHK threads "$tmp/transformer/last.safetensors" "$tmp/classifier/last.safetensors" >"$tmp/threads" 2>"$tmp/threads.err" || true
while IFS= read -r line; do
    case "$line" in
        "ok "*) pass "${line#ok }";;
        end) ;;
        *) fail "$line";;
    esac
done <"$tmp/threads"
[ "$(tail -1 "$tmp/threads")" = end ] && [ "$(grep -c '^ok ' "$tmp/threads")" = 8 ] \
    || fail "python_check.py threads stopped early (a crash?) or ran too few cases: $(grep -c '^ok ' "$tmp/threads") ok of 8; $(tail -c 300 "$tmp/threads.err")"

# The README's Python block as one script, in both import orders (grassflow, then torch as written; torch
# first), then the matmul that hung (a 64 x 128 x 143 sgemm, large enough for OpenBLAS to split across its
# threads). Loaded first, the library's OpenMP OpenBLAS took the name libopenblas.so.0, torch paired it with
# the pthreads build's libblas.so.3 and spun forever in sched_yield (issue 47). (On one CPU OpenBLAS
# splits nothing: the hang needs two.)
echo "python: the README's Python block as one script, grassflow then torch and torch then grassflow (timeout 120 s)"
$PY - README.md "$tmp" >"$tmp/readme.py" <<'PYEOF'
import re, sys
block = re.search(r"```python\n(# PYTHONPATH=python python3\n.*?)```", open(sys.argv[1]).read(), re.S).group(1)
tmp = sys.argv[2]
for a, b in (("runs/mine/best.safetensors", tmp + "/transformer/last.safetensors"),
             ("runs/snli/best.safetensors", tmp + "/classifier/last.safetensors"),
             ("runs/mine/tuned.safetensors", tmp + "/readme-tuned-ORDER.safetensors")):
    assert a in block, a
    block = block.replace(a, b)
print(block + "torch.nn.Linear(128, 143)(torch.randn(64, 128))\nprint('\\nREADME block done')")
PYEOF
for order in grassflow-first torch-first; do
    script="$tmp/readme-$order.py"
    { [ $order = grassflow-first ] || echo "import torch"; sed "s/ORDER/$order/" "$tmp/readme.py"; } >"$script"
    start=$(date +%s.%N)
    rc=0; timeout 120 $PY "$script" >"$tmp/readme.out" 2>"$tmp/readme.err" || rc=$?
    secs=$($PY -c "import sys, time; print('%.1f' % (time.time() - float(sys.argv[1])))" "$start")
    [ $rc = 0 ] && grep -q "README block done" "$tmp/readme.out" && pass "the README's Python block, $order: ran in $secs s" \
        || fail "the README's Python block, $order: exit $rc after $secs s (124: it hung): $(tail -c 300 "$tmp/readme.err")"
done

# (every check is written so that a NaN fails it: NaN > x and NaN <= x are both false)
echo "python: grassflow.torch.load against the C engine (float32 logits, max |diff| <= 1e-5)"
NAMES="$LMS classifier ablation ablation_classifier"
printf '%s' "$TEXT" >"$tmp/text"
for name in $NAMES; do # every check in one Python process, two result lines a model
    data="@$tmp/text"; [ "${name%classifier}" = "$name" ] || data="$tmp/snli/snli_1.0_dev.tsv"
    for c in torch perturbed; do echo "$c $tmp/$name/last.safetensors $data"; done
done >"$tmp/jobs"
$CHK batch "$tmp/jobs" >"$tmp/results" || fail "python_check.py batch: exit $?"
exec 3<"$tmp/results"
for name in $NAMES; do
    read -r r <&3 || r="(no result line)"
    $PY -c "import json, sys; sys.exit(not json.loads(sys.argv[1])['max_abs_diff'] <= 1e-5)" "$r" \
        && pass "$name: torch logits = C logits ($r)" || fail "$name: torch logits: $r"
    read -r r <&3 || r="(no result line)"
    $PY -c "import json, math, sys; d = json.loads(sys.argv[1])['max_abs_diff']; sys.exit(not (math.isfinite(d) and d > 1e-5))" "$r" \
        && pass "$name: ... and a changed weight is seen ($r)" || fail "$name: a changed weight went unseen: $r"
done
exec 3<&-
for w in int8 bf16; do # a quantized file: PyTorch reads the values its weights stand for, as the C engine does
    "$GF" quantize --ckpt "$tmp/grassmann/last.safetensors" --weights $w --out "$tmp/grassmann-$w.safetensors" >/dev/null
    r=$($CHK torch "$tmp/grassmann-$w.safetensors" "$TEXT")
    $PY -c "import json, sys; sys.exit(not json.loads(sys.argv[1])['max_abs_diff'] <= 1e-5)" "$r" \
        && pass "grassmann, $w weights (grassflow quantize): torch logits = C logits ($r)" || fail "$w file in torch: $r"
done
# a mixer key given once at the top level of a format-3 config reaches every layer whose mixer has it (as the
# library reads it); the PyTorch loader once accepted "offsets" there and ignored it (other offsets, other logits)
$PY - "$tmp/grassmann/last.safetensors" "$tmp/top-offsets.safetensors" <<'PYEOF'
import json, sys
from grassflow import st_io
t, meta = st_io.read(sys.argv[1])
cfg = json.loads(meta["config"])
for e in cfg["layers"]:
    e.pop("offsets")
cfg["offsets"] = [1, 3]
st_io.write(sys.argv[2], t, dict(meta, config=json.dumps(cfg)))
PYEOF
r=$($CHK torch "$tmp/top-offsets.safetensors" "$TEXT")
moved=$($PY -c "import grassflow, sys, numpy as np
a, b = (grassflow.load(p).logits(sys.argv[3]) for p in sys.argv[1:3]); print(float(np.abs(a - b).max()))" \
    "$tmp/grassmann/last.safetensors" "$tmp/top-offsets.safetensors" "$TEXT")
$PY -c "import json, sys; sys.exit(not (json.loads(sys.argv[1])['max_abs_diff'] <= 1e-5 and float(sys.argv[2]) > 1e-4))" "$r" "$moved" \
    && pass "\"offsets\" at the top level of the config: torch logits = C logits ($r; the C logits moved by $moved)" \
    || fail "\"offsets\" at the top level of the config: torch $r, C logits moved by $moved"
for name in grassmann ablation; do # ablation: pair.weight and no gate.* written back by PyTorch
    r=$($CHK finetune "$tmp/$name/last.safetensors" "$TEXT" "$tmp/tuned-$name.safetensors")
    $PY -c "import json, sys; r = json.loads(sys.argv[1]); sys.exit(not (r['changed'] > 1e-3 and r['max_abs_diff'] <= 1e-5 and r['tokenizer_kept'] and r['overwrite_refused']))" "$r" \
        && pass "$name: a fine-tuning step in PyTorch, saved, is what the C engine computes; the tokenizer kept, no overwrite ($r)" \
        || fail "$name: fine-tune round trip: $r"
done
r=$($CHK finetune-pairs "$tmp/classifier/last.safetensors" "$tmp/snli/snli_1.0_dev.tsv" "$tmp/tuned-pairs.safetensors")
$PY -c "import json, sys; r = json.loads(sys.argv[1]); sys.exit(not (r['min_changed'] > 0 and r['max_abs_diff'] <= 1e-5 and r['tensors'] == ['lin.blocks.0.mix.E', 'lin.blocks.0.mix.F']))" "$r" \
    && pass "classifier (a linformer stack): a PyTorch step on the pairs changes every tensor, saved, is what the C engine computes ($r)" \
    || fail "classifier round trip through PyTorch: $r"
r=$($CHK finetune "$tmp/performer/last.safetensors" "$TEXT" "$tmp/tuned-performer.safetensors")
$PY -c "import json, sys; r = json.loads(sys.argv[1]); sys.exit(not (r['changed'] > 1e-3 and r['max_abs_diff'] <= 1e-5))" "$r" \
    && pass "performer: a fine-tuning step in PyTorch (omega a buffer, untouched), saved, is what the C engine computes ($r)" \
    || fail "performer fine-tune round trip: $r"
$PY - "$tmp/performer/last.safetensors" "$tmp/tuned-performer.safetensors" <<'PYEOF' \
    && pass "performer: omega saved by grassflow.torch.save, unchanged" || fail "performer: omega not kept by save"
import sys
from grassflow import st_io
a, b = st_io.read(sys.argv[1])[0], st_io.read(sys.argv[2])[0]
k = "blocks.0.mix.omega"
sys.exit(not (set(a) == set(b) and a[k].shape == (16, 8) and a[k].tobytes() == b[k].tobytes()))
PYEOF
"$GF" generate --ckpt "$tmp/tuned-grassmann.safetensors" --prompt "the" --tokens 5 >/dev/null 2>&1 \
    && pass "grassflow generate reads the saved checkpoint" || fail "grassflow generate on the saved checkpoint"
r=$($CHK finetune "$tmp/window/last.safetensors" "$SHORT" "$tmp/tuned-window.safetensors")
$PY -c "import json, sys; r = json.loads(sys.argv[1]); sys.exit(not (r['changed'] > 1e-3 and r['max_abs_diff'] <= 1e-5))" "$r" \
    && pass "window attention: a fine-tuning step in PyTorch, saved, is what the C engine computes ($r)" \
    || fail "window fine-tune round trip: $r"
$CHK refuse "$tmp/grassmann/last.safetensors" >"$tmp/refuse"
while IFS= read -r line; do
    case "$line" in
        "a mixer it does not build: ValueError: "*'"layers"[0].mixer is "lstm"; it must be one of the mixers'*|\
        "a key it does not know: ValueError: "*'unknown key "rope"'*|\
        "a head it does not build: ValueError: "*'"head.kind" is "crf"; it must be one of "next_token", "classify"'*|\
        "a missing tensor: ValueError: "*'tensor "ln_f.bias" is missing'*|\
        "a misshapen tensor: ValueError: "*'tensor "ln_f.bias" should be F32 of shape (32) for this config, but the file has F32 of shape (31)'*|\
        "a missing file: GrassflowError: "*"nothing.safetensors"*|"predict on a language model: ValueError: "*"needs a classifier"*|\
        "a closed model's tokenizer: ValueError: the tokenizer's model is closed")
            pass "refused: ${line:0:150}";;
        *) fail "not refused as expected: $line";;
    esac
done <"$tmp/refuse"
[ "$(wc -l <"$tmp/refuse")" = 8 ] || fail "refusals: $(wc -l <"$tmp/refuse") lines, expected 8"

echo "python: Model.decode (gf_model_decode) against a beam search over the PyTorch reference"
for c in encdec_transformer_pre encdec_grassmann encdec_gru encdec_gru_attn_bahdanau; do
    "$GF" init --config "tests/parity/configs/$c.json" --seed 7 --out "$tmp/$c.safetensors" >/dev/null
done
if out=$(OMP_NUM_THREADS=1 $PY tests/parity/beam_check.py "$tmp"/encdec_*.safetensors 2>&1); then
    while read -r line; do pass "$line"; done <<< "$out"
else
    fail "beam search: $out"
fi

echo "python: OpenBLAS's kernel, which the package chooses as the command does (src/cli/main.c)"
fast=$(bash tests/coretype.sh)
kernel() { env -u OPENBLAS_CORETYPE "$@" $PY -W error::RuntimeWarning -c 'import grassflow, grassflow._lib as L; print(L.lib.gf_blas_kernel().decode())' 2>&1 | tail -1; }
if [ -n "$fast" ]; then
    got=$(kernel) # one word, the kernel: a warning (an error here) or Prescott fails
    [[ $got =~ ^[A-Za-z0-9]+$ && $got != Prescott ]] && pass "OPENBLAS_CORETYPE unset: OpenBLAS runs $got, not its generic Prescott kernel" \
        || fail "OPENBLAS_CORETYPE unset: the package left OpenBLAS on its generic kernel: $got"
    got=$(kernel OPENBLAS_CORETYPE=Haswell)
    [ "$got" = Haswell ] && pass "a core type the user set is kept (Haswell)" || fail "OPENBLAS_CORETYPE=Haswell: OpenBLAS runs $got"
    # OpenBLAS loaded by another module first (numpy here): too late to choose; said, where it fell back
    got=$(env -u OPENBLAS_CORETYPE $PY -c 'import numpy, warnings; warnings.simplefilter("always")
import grassflow, grassflow._lib as L; print(L.lib.gf_blas_kernel().decode())' 2>&1)
    case $got in
        *Prescott*"OPENBLAS_CORETYPE=$fast"*|*"OPENBLAS_CORETYPE=$fast"*Prescott*) pass "numpy imported first, OpenBLAS on Prescott: a warning names OPENBLAS_CORETYPE=$fast";;
        *Prescott*) fail "numpy imported first: Prescott without a warning: $got";;
        *) pass "numpy imported first: OpenBLAS runs $(echo "$got" | tail -1)";;
    esac
else
    echo "  (no AVX2 here: OpenBLAS's own choice stands)"
fi

if [ $failed -ne 0 ]; then echo "python: FAILED" >&2; exit 1; fi
echo "python: all checks passed"
