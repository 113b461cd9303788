#!/usr/bin/env bash
# Honest scores on other text (issue 26, item 5): eval of a char model on text with characters it never saw
# (skipped and counted, not a stop), the out-of-vocabulary rate of word and WordPiece models, perplexity per
# word of subword models (the word count the word tokenizer gives), all against counts made by hand on tiny
# corpora written here; and every hint that eval, generate, score and train print names a flag that the
# command it names accepts.
set -uo pipefail
BUILD=${1:-build}
GF="$BUILD/grassflow"
PY=/usr/bin/python3
tmp=$(mktemp -d /tmp/grassflow-honest-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. tests/lib.sh
export GRASSFLOW_CACHE="$tmp/cache"
TR="--steps 2 --batch 2 --seq-len 4 --eval-every 0"

# A: the text the models learn. B: the text they are scored on, with words and characters A lacks.
#   B by hand: "the dog sat" <eos> | <eos> | "on a mat" <eos> | "the end" <eos>: 12 words (9 + 3 line ends);
#   word model of A: dog, a, end are <unk>: 3 of 12 tokens; char model of A: the d and g of "dog" and the
#   d of "end" are not among A's characters: 3 of 33 characters skipped, the first at byte 4.
mkdir -p "$tmp/A" "$tmp/B"
printf 'the cat sat\non the mat\n' >"$tmp/A/train.txt"
printf 'the mat\n' >"$tmp/A/valid.txt"
cp "$tmp/A/valid.txt" "$tmp/A/test.txt"
printf 'the cat\n' >"$tmp/B/train.txt"
printf 'the dog sat\n\n  on a mat  \nthe end' >"$tmp/B/valid.txt"
printf 'a\n' >"$tmp/B/test.txt"

echo "honest: models of A"
for tk in word char byte; do
    "$GF" train --model grassmann-tiny --tokenizer $tk --corpus "$tmp/A" $TR --out "$tmp/$tk" >/dev/null 2>"$tmp/err" \
        && pass "a $tk model of A" || fail "train $tk: $(cat "$tmp/err")"
done

# json KEY FILE: the value of KEY in the one JSON object in FILE ("absent" if it has none)
json() { $PY -c 'import json,sys; d=json.load(open(sys.argv[2])); print(d.get(sys.argv[1], "absent"))' "$1" "$2"; }

echo "honest: a char model on text with characters it never saw"
want=; expect 0 "eval of the char model on B scores it (it stopped at the first unseen character)" \
    "$GF" eval --ckpt "$tmp/char/last.safetensors" --corpus "$tmp/B" --json
cp "$tmp/out" "$tmp/char.json"
[ "$(json tokens "$tmp/char.json")" = 29 ] && [ "$(json skipped_chars "$tmp/char.json")" = 3 ] \
    && [ "$(json words "$tmp/char.json")" = 12 ] && [ "$(json oov_tokens "$tmp/char.json")" = absent ] \
    && pass "... 3 of 33 characters skipped, 30 ids, 29 of them predicted, 12 words" || fail "char eval: $(cat "$tmp/char.json")"
$PY - "$tmp/char.json" <<'PYEOF' && pass "... skipped_rate 3/33 and word_ppl exp(loss x 29 / 12)" || fail "char eval rates: $(cat "$tmp/char.json")"
import json, math, sys
d = json.load(open(sys.argv[1]))
assert d["skipped_rate"] == float("%.9g" % (3 / 33)), d
assert abs(d["word_ppl"] - math.exp(d["loss"] * 29 / 12)) <= 1e-6 * d["word_ppl"], d
assert abs(d["ppl"] - math.exp(d["loss"])) <= 1e-6 * d["ppl"], d
PYEOF
want=; expect 0 "... as text" "$GF" eval --ckpt "$tmp/char/last.safetensors" --corpus "$tmp/B"
grep -q "unknown characters: 3 of 33 (9.09%) are outside the vocabulary: skipped, neither context nor scored" "$tmp/out" \
    && grep -q "per word: 12 words  word ppl" "$tmp/out" && pass "... the text report says so beside the perplexity" \
    || fail "char eval text: $(cat "$tmp/out")"
grep -q "from cache" "$tmp/err" && pass "... the second read comes from the token cache, counts and all" \
    || fail "no cache hit: $(cat "$tmp/err")"
want=; expect 0 "... --stream: the same figures" "$GF" eval --ckpt "$tmp/char/last.safetensors" --corpus "$tmp/B" --json --stream
$PY - "$tmp/out" "$tmp/char.json" <<'PYEOF' && pass "... the same counts streamed, the loss to 1e-6" || fail "stream: $(cat "$tmp/out") vs $(cat "$tmp/char.json")"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
assert all(a[k] == b[k] for k in ("tokens", "words", "skipped_chars", "skipped_rate")) and abs(a["loss"] - b["loss"]) < 1e-6
PYEOF
want=; expect 0 "eval of the char model on its own corpus" "$GF" eval --ckpt "$tmp/char/last.safetensors" --corpus "$tmp/A" --json
[ "$(json skipped_chars "$tmp/out")" = 0 ] && [ "$(json words "$tmp/out")" = 3 ] && [ "$(json tokens "$tmp/out")" = 7 ] \
    && pass "... nothing skipped, 3 words in 'the mat\\n'" || fail "char eval of A: $(cat "$tmp/out")"
want="character 'd' at byte 0 is not in the vocabulary.*"; expect 1 "generate with a prompt of an unseen character: refused" \
    "$GF" generate --ckpt "$tmp/char/last.safetensors" --prompt "dog" --tokens 2

echo "honest: the out-of-vocabulary rate of a word model"
want=; expect 0 "eval of the word model on B" "$GF" eval --ckpt "$tmp/word/last.safetensors" --corpus "$tmp/B" --json
cp "$tmp/out" "$tmp/word.json"
[ "$(json oov_tokens "$tmp/word.json")" = 3 ] && [ "$(json oov_rate "$tmp/word.json")" = 0.25 ] \
    && [ "$(json words "$tmp/word.json")" = 12 ] && [ "$(json tokens "$tmp/word.json")" = 11 ] \
    && [ "$(json word_ppl "$tmp/word.json")" = absent ] \
    && pass "... 3 of 12 tokens are <unk>: oov_rate 0.25 (its ppl is per word already)" || fail "word eval: $(cat "$tmp/word.json")"
want=; expect 0 "... as text" "$GF" eval --ckpt "$tmp/word/last.safetensors" --corpus "$tmp/B"
grep -q "out of vocabulary: 3 of 12 tokens (25.00%) are <unk> for words the vocabulary lacks" "$tmp/out" \
    && pass "... the text report names the rate" || fail "word eval text: $(cat "$tmp/out")"
want=; expect 0 "eval --split test: one word, in the vocabulary? no: 'a'" "$GF" eval --ckpt "$tmp/word/last.safetensors" --corpus "$tmp/B" --split test --json
[ "$(json oov_tokens "$tmp/out")" = 1 ] && [ "$(json oov_rate "$tmp/out")" = 0.5 ] && pass "... 1 of 2 tokens (a, <eos>)" \
    || fail "word eval test split: $(cat "$tmp/out")"

echo "honest: perplexity per word and the word count"
want=; expect 0 "eval of the byte model on B" "$GF" eval --ckpt "$tmp/byte/last.safetensors" --corpus "$tmp/B" --json
[ "$(json words "$tmp/out")" = 12 ] && [ "$(json tokens "$tmp/out")" = 32 ] && [ "$(json skipped_chars "$tmp/out")" = absent ] \
    && pass "... 33 bytes, 32 predicted, 12 words" || fail "byte eval: $(cat "$tmp/out")"
# the rule against the word tokenizer: a word model's tokens of a split are its words, for every tokenizer
printf 'a b\tc\r\n\n x\v\fy \nlast line' >"$tmp/B/test.txt"
for tk in word char byte; do
    "$GF" data stats --corpus "$tmp/B" --tokenizer $tk --json >"$tmp/stats-$tk.json" 2>"$tmp/err" || fail "stats $tk: $(cat "$tmp/err")"
done
$PY - "$tmp" <<'PYEOF' && pass "data stats: words of each split = the word tokenizer's tokens, whatever the tokenizer (test: 11 by hand)" || fail "word counts differ"
import json, sys
st = {tk: json.load(open(f"{sys.argv[1]}/stats-{tk}.json")) for tk in ("word", "char", "byte")}
for s in ("train", "valid", "test"):
    want = st["word"][s]["tokens"]
    assert all(st[tk][s]["words"] == want for tk in st), (s, st)
assert st["word"]["test"]["tokens"] == 11 and st["word"]["valid"]["tokens"] == 12, st
# B's vocabulary is 'the cat': 6 of valid's 9 words are <unk>, and every word of test's 7
assert st["word"]["valid"]["unknown"] == 6 and st["word"]["test"]["unknown"] == 7, st
PYEOF
VOCAB=data/bert-base-uncased/vocab.txt
long=$(printf 'x%.0s' $(seq 101))
printf 'hello world\nthe cat sat on the mat\n' >"$tmp/A/train.txt"
printf 'hello %s world [UNK]\n' "$long" >"$tmp/A/valid.txt"
"$GF" train --model grassmann-tiny --tokenizer "wordpiece:$VOCAB" --corpus "$tmp/A" $TR --out "$tmp/wp" >/dev/null 2>"$tmp/err" \
    || fail "train wordpiece: $(cat "$tmp/err")"
want=; expect 0 "eval of a WordPiece model" "$GF" eval --ckpt "$tmp/wp/last.safetensors" --corpus "$tmp/A" --json
[ "$(json oov_tokens "$tmp/out")" = 1 ] && [ "$(json words "$tmp/out")" = 5 ] && [ "$(json oov_rate "$tmp/out")" = 0.25 ] \
    && [ "$(json word_ppl "$tmp/out")" != absent ] \
    && pass "... a word of 101 characters is [UNK] (not the [UNK] written in the text): 1 of 4 pieces; 5 words" \
    || fail "wordpiece eval: $(cat "$tmp/out")"

echo "honest: training refuses text its fixed char vocabulary cannot read"
"$GF" train --model grassmann-tiny --tokenizer char --corpus "$tmp/A" $TR --steps 4 --stop-at 2 --out "$tmp/rc" >/dev/null 2>&1
printf 'the zoo\n' >"$tmp/A/valid.txt"
want="its valid split holds 1 character\(s\) outside the model's char vocabulary, the first at byte 4"
expect 1 "train --resume after the corpus gained a character: refused, named" "$GF" train --resume "$tmp/rc" --accept-changed-data

echo "honest: every hint names a flag the command it names accepts"
CMDS=" info init score train eval generate compare data features bench "
# hint_flags WHAT CMD ARGS...: run `grassflow CMD ARGS...`; every --flag in its HINT lines (the command it
# belongs to: the last "grassflow SUB" before it in the same clause, else CMD) must be an option of that
# command: given again to it, it is not refused as unknown.
hint_flags() {
    local what=$1 cmd=$2; shift 2
    "$GF" "$cmd" "$@" >"$tmp/out" 2>"$tmp/err"
    if ! grep -q "HINT:" "$tmp/err"; then fail "$what: no hint ($(head -c 300 "$tmp/err"))"; return; fi
    local pairs bad=
    pairs=$($PY - "$cmd" "$CMDS" "$tmp/err" <<'PYEOF'
import re, sys
cmd, cmds, text = sys.argv[1], sys.argv[2].split(), open(sys.argv[3]).read()
for hint in re.findall(r"HINT:(.*)", text):
    for clause in re.split(r";|(?<=[a-z0-9)])\. ", hint):
        owner = cmd
        for m in re.finditer(r"grassflow ([a-z]+)|(--[a-z][a-z-]*)", clause):
            if m.group(1) in cmds: owner = m.group(1)
            elif m.group(2): print(owner, m.group(2))
PYEOF
)
    [ -n "$pairs" ] || { fail "$what: a hint without a flag: $(grep HINT "$tmp/err")"; return; }
    while read -r owner flag; do
        "$GF" $owner $flag 1 >/dev/null 2>"$tmp/flag-err" </dev/null
        grep -Eq "unrecognized option|unknown option|is no option" "$tmp/flag-err" && bad="$bad $owner $flag;"
    done <<<"$pairs"
    [ -z "$bad" ] && pass "$what: $(echo $pairs | tr '\n' ' ')" || fail "$what: refused:$bad ($(grep HINT "$tmp/err"))"
}
"$GF" init --model grassmann-tiny --set task=classify --set head.n_classes=3 --vocab 30522 --set max_len=16 --out "$tmp/cls.safetensors" >/dev/null
mkdir -p "$tmp/snli"
for s in train_0.01 dev test; do xz -dc "data/snli/snli_1.0_$s.tsv.xz" | head -16 >"$tmp/snli/snli_1.0_${s%_0.01}.tsv"; done
"$GF" init --model grassmann-tiny --vocab 9 --out "$tmp/v9.safetensors" >/dev/null
"$GF" train --model grassmann-tiny --tokenizer char --corpus "$tmp/B" $TR --steps 4 --stop-at 2 --out "$tmp/half" >/dev/null 2>&1
printf 'the cat sat\n' >"$tmp/B/train.txt"  # other data, of characters the run knows
mkdir -p "$tmp/hf" && printf '{"model_type": "distilbert"}' >"$tmp/hf/config.json"
hint_flags "eval --task snli of a language model" eval --ckpt "$tmp/word/last.safetensors" --corpus "$tmp/snli" --task snli
hint_flags "eval --task lm of a classifier" eval --ckpt "$tmp/cls.safetensors" --corpus "$tmp/B" --task lm
hint_flags "eval with a flag of another task" eval --ckpt "$tmp/word/last.safetensors" --corpus "$tmp/B" --max-sent 8
hint_flags "eval of pairs longer than the classifier's max_len" eval --ckpt "$tmp/cls.safetensors" --corpus "$tmp/snli" --split dev
hint_flags "eval of a classifier on a text corpus" eval --ckpt "$tmp/cls.safetensors" --corpus "$tmp/B"
hint_flags "eval of a training state" eval --ckpt "$tmp/half/state.safetensors" --corpus "$tmp/B"
hint_flags "eval of a model for another vocabulary" eval --ckpt "$tmp/v9.safetensors" --corpus "$tmp/B" --tokenizer char
hint_flags "eval of a Hugging Face folder" eval --ckpt "$tmp/hf" --corpus "$tmp/B"
hint_flags "generate: a prompt of an unseen character" generate --ckpt "$tmp/char/last.safetensors" --prompt "dog"
hint_flags "generate --temperature 0 --seed 1" generate --ckpt "$tmp/char/last.safetensors" --temperature 0 --seed 1
hint_flags "generate of a training state" generate --ckpt "$tmp/half/state.safetensors"
hint_flags "score of a training state" score --ckpt "$tmp/half/state.safetensors" --tokens "$tmp/B/valid.txt"
hint_flags "train --model of no preset" train --model nope --corpus "$tmp/B" --out "$tmp/nope"
hint_flags "train into a run's folder" train --model grassmann-tiny --corpus "$tmp/B" $TR --out "$tmp/half"
hint_flags "train --resume on changed data" train --resume "$tmp/half"
hint_flags "train --stop-at behind the run" train --resume "$tmp/half" --stop-at 1 --accept-changed-data
printf 'the zoo cat\n' >"$tmp/B/train.txt"  # z: a character the run's vocabulary lacks
hint_flags "train --resume with unseen characters" train --resume "$tmp/half" --accept-changed-data
hint_flags "train with a flag of another task" train --model grassmann-tiny --corpus "$tmp/B" --max-sent 8 --out "$tmp/ms"
hint_flags "train --task snli with 4 classes" train --model grassmann-tiny --task snli --corpus "$tmp/snli" --set task=classify --set head.n_classes=4 --out "$tmp/c4"
GRASSFLOW_FAULT_NONFINITE=2 hint_flags "train whose loss is NaN" train --model grassmann-tiny --tokenizer char --corpus "$tmp/A" $TR --out "$tmp/nan"

echo "$fails failed"
[ "$fails" = 0 ]
