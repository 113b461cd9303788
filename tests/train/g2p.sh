#!/usr/bin/env bash
# Task g2p (grapheme-to-phoneme on an encoder-decoder; docs/model.md, "Encoder-decoders"): a tiny
# Transformer encoder-decoder, a Grassmann one and a GRU one with Bahdanau's attention (gru-attn) train on
# the shipped CMUdict sample and learn (the
# validation perplexity per phoneme falls well below the phoneme count), resume, and are scored by eval;
# what the task refuses says why: a model that is not an encoder-decoder, a --tokenizer, a lexicon
# that is not one, a checkpoint scored on a lexicon with a phoneme it does not know.
#   bash tests/train/g2p.sh [BUILD]
set -uo pipefail
BUILD=${1:-build}
cd "$(dirname "$0")/../.."
GF="$BUILD/grassflow"
tmp=$(mktemp -d /tmp/grassflow-g2p-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. tests/lib.sh
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}

tiny() { # tiny ENCODER_ENTRY [DECODER_ENTRY]: an encoder-decoder of 2 + 2 blocks, width 32
    cat <<JSON
{"format": 3, "head": {"kind": "next_token"}, "vocab_size": 60, "source_vocab": 256, "cross_heads": 2,
 "d_model": 32, "n_layer": 2, "d_ff": 64, "max_len": 40, "norm": "pre", "direction": "bidirectional",
 "layers": [$1], "stacks": [{"name": "decoder", "d_model": 32, "d_ff": 64, "n_layer": 2, "direction": "causal",
 "layers": [${2:-$1}]}]}
JSON
}
tiny '{"mixer": "attention", "n_head": 2}' >"$tmp/att.json"
tiny '{"mixer": "grassmann", "rank": 8, "offsets": [1, 2, 4]}' >"$tmp/grass.json"
tiny '{"mixer": "gru"}' '{"mixer": "gru-attn", "attention": "bahdanau"}' >"$tmp/rnn.json"

echo "g2p: tiny encoder-decoders learn on the shipped sample"
for m in att grass rnn; do
    "$GF" train --task g2p --config "$tmp/$m.json" --corpus cmudict --steps 150 --batch 32 --lr 3e-3 --warmup 20 \
        --eval-every 150 --out "$tmp/$m" >"$tmp/$m.out" 2>"$tmp/$m.err" || { fail "$m: train: $(tail -3 "$tmp/$m.err")"; continue; }
    ppl=$(grep -o 'val ppl [0-9.]*' "$tmp/$m.err" | tail -1 | cut -d' ' -f3)
    # 55 phonemes (+ <eos>, <unk>): uniform is ppl 57; after 150 steps both are far below it
    awk -v p="$ppl" 'BEGIN { exit !(p > 1 && p < 30) }' && pass "$m: validation ppl per phoneme $ppl (< 30; uniform 57)" \
        || fail "$m: validation ppl '$ppl' after 150 steps (expected < 30)"
done
grep -q "18925 train words (valid 1011, test 1019), 55 phonemes" "$tmp/att.err" && pass "the sample's split: 18,925 / 1,011 / 1,019 words, 55 phonemes" \
    || fail "the split line: $(grep -m1 'train words' "$tmp/att.err")"

echo "g2p: resume and eval"
expect 0 "train --resume extends a g2p run" "$GF" train --resume "$tmp/att" --steps 160
expect 0 "eval scores its checkpoint on the test split" "$GF" eval --ckpt "$tmp/att/best.safetensors" --corpus cmudict --split test
grep -Eq 'cmudict test: tokens [0-9]+ +loss [0-9.]+ +ppl [0-9.]+' "$tmp/out" && pass "... with a loss and a perplexity" || fail "eval printed: $(cat "$tmp/out")"
grep -Eq "decoded greedily: 1019 examples, [0-9]+ wrong \([0-9.]+%: g2p's word error rate\), [0-9]+ edits of [0-9]+ target tokens" "$tmp/out" \
    && pass "... and the word and phoneme error rates of its 1,019 test words decoded" || fail "eval printed: $(cat "$tmp/out")"
expect 0 "eval --json" "$GF" eval --ckpt "$tmp/att/best.safetensors" --corpus cmudict --json
/usr/bin/python3 -c 'import json, sys; o = json.load(open(sys.argv[1])); assert o["examples"] == 1011 and 0 <= o["per"] <= 2 and 0 <= o["wer"] <= 1, o' \
    "$tmp/out" && pass "... with \"wer\" and \"per\" over the 1,011 valid words" || fail "eval --json: $(cat "$tmp/out")"
expect 0 "eval --beam 4 --length-penalty 0.6 --json" "$GF" eval --ckpt "$tmp/att/best.safetensors" --corpus cmudict --json \
    --beam 4 --length-penalty 0.6
/usr/bin/python3 -c 'import json, sys; o = json.load(open(sys.argv[1])); assert o["decoded"] == "beam" and o["beam"] == 4 \
    and o["length_penalty"] == 0.6 and o["examples"] == 1011 and 0 <= o["wer"] <= 1, o' "$tmp/out" \
    && pass "... decodes the 1,011 valid words by beam search and says so" || fail "eval --beam --json: $(cat "$tmp/out")"
want='--beam' expect 2 "eval --beam 0 is refused, naming the flag" "$GF" eval --ckpt "$tmp/att/best.safetensors" --corpus cmudict --beam 0

echo "g2p: predict decodes words"
printf 'hello\nWorld\n  cat  \n' >"$tmp/words.txt"
expect 0 "predict decodes each line (greedy)" "$GF" predict --ckpt "$tmp/att/best.safetensors" --corpus "$tmp/words.txt"
awk -F'\t' 'NF == 3 && $2 ~ /^[a-z0-9 ]+$/ && $3 < 0 {n++} END {exit n != 3}' "$tmp/out" && pass "... three lines: the word, its phonemes, a negative score" \
    || fail "predict printed: $(cat "$tmp/out")"
awk -F'\t' 'NR == 3 { exit $1 != "cat" }' "$tmp/out" && pass "... the word as read, without the blanks around it" \
    || fail "predict echoed: $(sed -n 3p "$tmp/out" | od -c | head -2)"
cp "$tmp/out" "$tmp/greedy.tsv"
expect 0 "predict --beam 1 --json" "$GF" predict --ckpt "$tmp/att/best.safetensors" --corpus "$tmp/words.txt" --beam 1 --json
/usr/bin/python3 - "$tmp/out" "$tmp/greedy.tsv" <<'PYEOF' && pass "... the same phonemes and scores as JSON lines" || fail "predict --json differs from the TSV"
import json, sys
js = [json.loads(l) for l in open(sys.argv[1])]
tsv = [l.rstrip("\n").split("\t") for l in open(sys.argv[2])]
assert [j["output"] for j in js] == [t[1] for t in tsv] and [j["index"] for j in js] == [0, 1, 2]
assert all(abs(j["score"] - float(t[2])) < 1e-5 for j, t in zip(js, tsv))
PYEOF
expect 0 "predict --beam 4 --length-penalty 0.6 --limit 2" "$GF" predict --ckpt "$tmp/att/best.safetensors" --corpus "$tmp/words.txt" \
    --beam 4 --length-penalty 0.6 --limit 2
[ "$(wc -l <"$tmp/out")" -eq 2 ] && pass "... two lines" || fail "--limit 2 printed $(wc -l <"$tmp/out") lines"
# --alternates all: a word's pronunciations are its references. A CMUdict file whose test words each have a
# first pronunciation the model never gives (zh zh zh zh) and then the one it does give (predict's greedy
# output): scored against the first only, every word is wrong; against all, none is, with no phoneme error.
/usr/bin/python3 - "$tmp" <<'PYEOF' || fail "could not write the test words"
import sys
sys.path.insert(0, "scripts")
from make_cmudict_subset import lexicon_hash
tmp = sys.argv[1]
letters = lambda i: "".join(chr(97 + (i // 26 ** k) % 26) for k in range(3))  # aaa, baa, ...: letters only
words = [w for w in ("ta" + letters(i) for i in range(4000)) if lexicon_hash(w.encode(), 0) % 100 >= 95][:12]
others = [w for w in ("ob" + letters(i) for i in range(400)) if lexicon_hash(w.encode(), 0) % 100 < 95][:60]
open(tmp + "/alt-words.txt", "w").write("".join(w + "\n" for w in words))
open(tmp + "/alt-others.dict", "w").write("".join("%s  AH0\n" % w.upper() for w in others))
PYEOF
expect 0 "predict the test words of a lexicon of alternates" "$GF" predict --ckpt "$tmp/att/best.safetensors" \
    --corpus "$tmp/alt-words.txt"
awk -F'\t' '{ w = toupper($1); p = toupper($2); print w "  ZH ZH ZH ZH"; print w "(2)  " p }' "$tmp/out" >"$tmp/alt.dict"
cat "$tmp/alt-others.dict" >>"$tmp/alt.dict"
expect 0 "eval against each word's first pronunciation (the default)" "$GF" eval --ckpt "$tmp/att/best.safetensors" \
    --corpus "$tmp/alt.dict" --split test --json
/usr/bin/python3 -c 'import json, sys; o = json.load(open(sys.argv[1])); assert o["examples"] == 12 and o["wer"] == 1, o' \
    "$tmp/out" && pass "... every one of the 12 words wrong" || fail "eval --alternates first: $(cat "$tmp/out")"
expect 0 "eval --alternates all" "$GF" eval --ckpt "$tmp/att/best.safetensors" --corpus "$tmp/alt.dict" --split test \
    --alternates all --json
/usr/bin/python3 -c 'import json, sys; o = json.load(open(sys.argv[1])); assert o["examples"] == 12 and o["wer"] == 0 \
    and o["per"] == 0, o' "$tmp/out" && pass "... 12 words (not 24 pronunciations), each right by its second" \
    || fail "eval --alternates all: $(cat "$tmp/out")"
printf 'ok\nna\xc3\xafve\n' >"$tmp/bad_word.txt"
want='bad_word.txt:2: character .* \(byte 0xc3\)' expect 1 "a character the model never read is named with its line" \
    "$GF" predict --ckpt "$tmp/att/best.safetensors" --corpus "$tmp/bad_word.txt"
printf 'ok\n\nthe\n' >"$tmp/blank.txt"
want='blank.txt:2: an empty line' expect 1 "an empty line is named" "$GF" predict --ckpt "$tmp/att/best.safetensors" --corpus "$tmp/blank.txt"
want='--beam expects .*256' expect 2 "--beam 257 is a usage error (the widest: 256)" "$GF" predict \
    --ckpt "$tmp/att/best.safetensors" --corpus "$tmp/words.txt" --beam 257
want='--beam expects' expect 2 "--beam 0 is a usage error" "$GF" predict --ckpt "$tmp/att/best.safetensors" --corpus "$tmp/words.txt" --beam 0
want='max_len 41 is above the model.s max_len 40' expect 1 "--max-len past the model's is refused" \
    "$GF" predict --ckpt "$tmp/att/best.safetensors" --corpus "$tmp/words.txt" --max-len 41
want='--length-penalty 0.6 without --beam: greedy decoding' expect 2 "--length-penalty without --beam is refused" \
    "$GF" predict --ckpt "$tmp/att/best.safetensors" --corpus "$tmp/words.txt" --length-penalty 0.6
want='--length-penalty 0.6 without --beam' expect 2 "... by eval too" "$GF" eval --ckpt "$tmp/att/best.safetensors" \
    --corpus cmudict --length-penalty 0.6 --beam 1
want='--split: .* is an encoder-decoder: predict decodes every line' expect 2 "predict --split on an encoder-decoder is refused" \
    "$GF" predict --ckpt "$tmp/att/best.safetensors" --corpus "$tmp/words.txt" --split test
want='--batch: .* is an encoder-decoder' expect 2 "... and --batch" "$GF" predict --ckpt "$tmp/att/best.safetensors" \
    --corpus "$tmp/words.txt" --batch 3
: >"$tmp/empty.txt"
want='empty.txt: an empty file; expected words' expect 1 "an empty file of words is an error" \
    "$GF" predict --ckpt "$tmp/att/best.safetensors" --corpus "$tmp/empty.txt"
want='--corpus .*no-such-words.txt holds no data of task g2p .*as a path: No such file or directory; .* is an encoder-decoder' expect 1 \
    "a missing --corpus is named as missing" "$GF" eval --ckpt "$tmp/att/best.safetensors" --corpus "$tmp/no-such-words.txt"
# (line 300 cannot be read: a predict that went on past the failed output would stop there instead)
{ for i in $(seq 299); do echo hello; done; printf 'na\xc3\xafve\n'; } >"$tmp/many.txt"
"$GF" predict --ckpt "$tmp/att/best.safetensors" --corpus "$tmp/many.txt" >/dev/full 2>"$tmp/full.err"
rc=$?
[ "$rc" = 1 ] && grep -q 'No space left on device' "$tmp/full.err" && ! grep -q 'character' "$tmp/full.err" &&
    pass "predict to a full disk stops within 256 words, with the reason" || fail "predict >/dev/full: exit $rc, $(cat "$tmp/full.err")"
echo "1 2 3" >"$tmp/ids.txt"
want='is an encoder-decoder .*score takes a language model.s token ids' expect 1 "score refuses an encoder-decoder, pointing to eval" \
    "$GF" score --ckpt "$tmp/att/best.safetensors" --tokens "$tmp/ids.txt"
want='is an encoder-decoder .*features reads one text' expect 1 "features refuses it, pointing to inspect" \
    "$GF" features --ckpt "$tmp/att/best.safetensors" --text hello
want='stream needs a language model; this model is an encoder-decoder' expect 1 "generate refuses it" \
    "$GF" generate --ckpt "$tmp/att/best.safetensors" --prompt hello

echo "g2p: predict --align-dir draws each word's cross-attention"
expect 0 "predict --align-dir" "$GF" predict --ckpt "$tmp/att/best.safetensors" --corpus "$tmp/words.txt" --limit 2 --align-dir "$tmp/align"
/usr/bin/python3 - "$tmp/align" <<'PYEOF' && pass "... align-0000.svg and align-0001.svg, a panel per decoder layer, weights in [0, 1]" || fail "the alignment SVGs"
import os, re, sys, xml.dom.minidom
d = sys.argv[1]
assert sorted(os.listdir(d)) == ["align-0000.svg", "align-0001.svg"], os.listdir(d)
for f in os.listdir(d):
    text = open(os.path.join(d, f)).read()
    xml.dom.minidom.parseString(text)  # well-formed
    assert text.count("decoder layer ") == 2, f
    w = [float(v) for v in re.findall(r"attention weight ([0-9.e+-]+)</title>", text)]
    assert w and all(0 <= v <= 1.0001 for v in w), f
PYEOF
expect 0 "predict --align-dir of a gru-attn decoder (Bahdanau's attention)" "$GF" predict --ckpt "$tmp/rnn/best.safetensors" \
    --corpus "$tmp/words.txt" --limit 1 --align-dir "$tmp/align-rnn"
[ "$(grep -c 'decoder layer ' "$tmp/align-rnn/align-0000.svg")" = 2 ] && pass "... a panel for each of its two layers" \
    || fail "the gru-attn alignment: $(ls "$tmp/align-rnn")"
printf 'not an svg\n' >"$tmp/align/align-0000.svg"
want='align-0000.svg exists and is not replaced' expect 1 "a file there that is not an SVG is kept (--force replaces it)" \
    "$GF" predict --ckpt "$tmp/att/best.safetensors" --corpus "$tmp/words.txt" --limit 1 --align-dir "$tmp/align"
grep -q 'not an svg' "$tmp/align/align-0000.svg" && pass "... and left as it was" || fail "the file was replaced"
expect 0 "... and replaced with --force" "$GF" predict --ckpt "$tmp/att/best.safetensors" --corpus "$tmp/words.txt" --limit 1 \
    --align-dir "$tmp/align" --force

printf 'hello\n' >"$tmp/hello.txt"
expect 0 "predict --align-dir of a word stopped at --max-len" "$GF" predict --ckpt "$tmp/att/best.safetensors" \
    --corpus "$tmp/hello.txt" --max-len 2 --align-dir "$tmp/align-max"
n=$(awk -F'\t' '{ print split($2, a, " ") }' "$tmp/out")
[ "$n" = 2 ] && ! grep -q '&lt;eos&gt;' "$tmp/align-max/align-0000.svg" && pass "... its rows the 2 tokens, no end it never emitted" \
    || fail "$n tokens; <eos> rows: $(grep -c '&lt;eos&gt;' "$tmp/align-max/align-0000.svg")"
: >"$tmp/a-file"
want='a-file exists and is not a directory' expect 1 "--align-dir naming a file is refused before any word" \
    "$GF" predict --ckpt "$tmp/att/best.safetensors" --corpus "$tmp/words.txt" --align-dir "$tmp/a-file"
[ ! -s "$tmp/out" ] && pass "... nothing printed" || fail "printed: $(cat "$tmp/out")"

echo "g2p: an ensemble decodes as one model (eval and predict --ensemble)"
A="$tmp/att/best.safetensors"
expect 0 "predict --beam 4 by one model" "$GF" predict --ckpt "$A" --corpus "$tmp/words.txt" --beam 4
cp "$tmp/out" "$tmp/one.tsv"
expect 0 "predict --beam 4 --ensemble of the same model twice more" "$GF" predict --ckpt "$A" --ensemble "$A,$A" \
    --corpus "$tmp/words.txt" --beam 4
cmp -s "$tmp/out" "$tmp/one.tsv" && pass "... the same words, phonemes and scores (a mixture of one model is that model)" \
    || fail "one model: $(cat "$tmp/one.tsv"); its ensemble: $(cat "$tmp/out")"
expect 0 "predict --beam 4 --ensemble of another family" "$GF" predict --ckpt "$A" --ensemble "$tmp/rnn/best.safetensors" \
    --corpus "$tmp/words.txt" --beam 4
! cmp -s "$tmp/out" "$tmp/one.tsv" && [ "$(wc -l <"$tmp/out")" = 3 ] && pass "... decodes otherwise than the first model alone (the second is heard)" \
    || fail "the ensemble's output is the first model's: $(cat "$tmp/out")"
expect 0 "eval --ensemble of three families" "$GF" eval --ckpt "$A" --ensemble "$tmp/grass/best.safetensors,$tmp/rnn/best.safetensors" \
    --corpus cmudict --split test --beam 2 --json
/usr/bin/python3 -c 'import json, sys; o = json.load(open(sys.argv[1])); assert o["ensemble_models"] == 3 and o["examples"] == 1019 \
    and o["beam"] == 2 and 0 <= o["wer"] <= 1, o' "$tmp/out" && pass "... scores the 1,019 test words and says it was an ensemble of 3" \
    || fail "eval --ensemble --json: $(cat "$tmp/out")"
expect 0 "eval --ensemble in text" "$GF" eval --ckpt "$A" --ensemble "$tmp/rnn/best.safetensors" --corpus cmudict
grep -q "decoded greedily: by an ensemble of 2 models (--ckpt and --ensemble; the loss above is --ckpt's alone)" "$tmp/out" \
    && pass "... names the ensemble and whose loss is shown" || fail "eval printed: $(cat "$tmp/out")"
"$GF" train --task g2p --config "$tmp/att.json" --corpus cmudict --stress strip --steps 2 --batch 4 --eval-every 2 \
    --out "$tmp/ens-strip" >"$tmp/ens-strip.out" 2>&1 || fail "train --stress strip: $(tail -3 "$tmp/ens-strip.out")"
want='--ensemble .*ens-strip/best.safetensors: its target vocabulary is not .*att/best.safetensors.s \([0-9]+ tokens against [0-9]+\)' \
    expect 1 "a member of another phoneme set is refused, named" "$GF" eval --ckpt "$A" --ensemble "$tmp/ens-strip/best.safetensors" \
    --corpus cmudict
want='--ensemble: cannot open .*no-such.safetensors' expect 1 "a missing member is named" "$GF" predict --ckpt "$A" \
    --ensemble "$tmp/no-such.safetensors" --corpus "$tmp/words.txt"
want='--ensemble with --align-dir' expect 2 "--ensemble with --align-dir is refused (an alignment is one model's)" "$GF" predict \
    --ckpt "$A" --ensemble "$A" --corpus "$tmp/words.txt" --align-dir "$tmp/align-en"
[ ! -e "$tmp/align-en" ] && pass "... before any folder is made" || fail "$tmp/align-en was made"
want='--ensemble .,. names no checkpoint' expect 2 "an empty list is a usage error" "$GF" predict --ckpt "$A" --ensemble , \
    --corpus "$tmp/words.txt"

echo "g2p: inspect reads an encoder-decoder"
expect 0 "inspect a Grassmann encoder-decoder on a word (its greedy decoding)" "$GF" inspect --ckpt "$tmp/grass/best.safetensors" \
    --text phoneme --svg-dir "$tmp/insp" --out-json "$tmp/insp.json"
grep -q '^encoder layer 0 grassmann (rank 8, 6 offsets)' "$tmp/out" && grep -q '^decoder layer 3 grassmann (rank 8, 3 offsets)' "$tmp/out" \
    && grep -Eq '^ +-4 ' "$tmp/out" && grep -q '^layer 3 attention over the source' "$tmp/out" \
    && pass "... the encoder's offsets both ways (-D: t + D), the decoder's, each decoder layer's attention over the source" \
    || fail "inspect printed: $(head -c 600 "$tmp/out")"
/usr/bin/python3 - "$tmp/insp.json" "$tmp/insp" <<'PYEOF' && pass "... its JSON (source, stacks, cross weights) and figures" || fail "inspect's JSON or figures"
import json, os, sys
o = json.load(open(sys.argv[1]))
assert o["source_pieces"] == list("phoneme"), o["source_pieces"]
L = o["layers"]
assert [l["stack"] for l in L] == ["encoder"] * 2 + ["decoder"] * 2, [l["stack"] for l in L]
assert L[0]["positions"] == 7 and len(L[0]["contribution"]) == 7 and len(L[0]["contribution"][0]) == 6
assert L[0]["cross_heads"] == 0 and L[2]["cross_heads"] == 2 and len(L[2]["cross"][1]) == o["tokens"]
assert all(abs(sum(r) - 1) < 1e-4 for h in L[3]["cross"] for r in h)
files = sorted(os.listdir(sys.argv[2]))
assert "layer0-offsets.svg" in files and "layer2-cross.svg" in files and "layer3-cross.svg" in files, files
PYEOF
expect 0 "inspect --target: the given phonemes" "$GF" inspect --ckpt "$tmp/att/best.safetensors" --text cat --target "k ae1 t" --json
/usr/bin/python3 -c 'import json, sys; o = json.load(open(sys.argv[1])); assert o["tokens"] == 5 and o["source"] == [99, 97, 116], o' \
    "$tmp/out" && pass "... 5 decoder positions (<eos>, k ae1 t, the end) over the source c a t" || fail "inspect --target --json"
expect 0 "inspect --drop-offset on an encoder-decoder scores the target under it" "$GF" inspect --ckpt "$tmp/grass/best.safetensors" \
    --text cat --target "k ae1 t" --drop-offset 2 --layer 0
grep -Eq '^target: 4 tokens predicted: loss [0-9.]+ with offset 2 dropped in layer 0' "$tmp/out" && pass "... with and without it" \
    || fail "inspect --drop-offset printed: $(cat "$tmp/out")"
want="--target: 'zz9' is not one of the checkpoint's target pieces" expect 1 "an unknown target piece is named" \
    "$GF" inspect --ckpt "$tmp/att/best.safetensors" --text cat --target "k zz9 t"
want="character '3'" expect 1 "a source character the model does not read is named" \
    "$GF" inspect --ckpt "$tmp/att/best.safetensors" --text c3t

echo "g2p: --schwa ah (Festival's ax read as CMUdict's ah)"
expect 0 "train --stress strip --schwa ah" "$GF" train --task g2p --config "$tmp/att.json" --corpus cmudict --stress strip \
    --schwa ah --steps 2 --batch 8 --eval-every 2 --out "$tmp/ah"
grep -q "18925 train words (valid 1011, test 1019), 39 phonemes" "$tmp/err" && pass "... reads CMUdict's 39 phonemes (40 with ax)" \
    || fail "the split line: $(grep -m1 'train words' "$tmp/err")"
expect 0 "eval reads the lexicon as the run did (its recipe's schwa)" "$GF" eval --ckpt "$tmp/ah/best.safetensors" --corpus cmudict
want='phoneme "ax" is not one the model knows' expect 1 "eval --schwa ax on it names ax" \
    "$GF" eval --ckpt "$tmp/ah/best.safetensors" --corpus cmudict --schwa ax
grep -q -- '--schwa' "$tmp/err" && pass "... and points to --schwa" || fail "the hint: $(tail -1 "$tmp/err")"
want="--schwa" expect 2 "--schwa schwa is refused, naming the flag" "$GF" train --task g2p --config "$tmp/att.json" \
    --corpus cmudict --schwa schwa --steps 1 --out "$tmp/no"

echo "g2p: scripts/g2p_rescore.py reads the test split and scores as eval does"
"$GF" train --task g2p --config "$tmp/att.json" --corpus cmudict --stress strip --steps 150 --batch 32 --lr 3e-3 \
    --warmup 20 --eval-every 150 --out "$tmp/strip" >/dev/null 2>&1 || fail "train --stress strip"
python3 scripts/g2p_rescore.py words data/cmudict/cmudict-0.4-sample20.out.xz >"$tmp/words.txt" &&
"$GF" predict --ckpt "$tmp/strip/best.safetensors" --corpus "$tmp/words.txt" --beam 2 >"$tmp/pred.tsv" 2>/dev/null &&
python3 scripts/g2p_rescore.py score data/cmudict/cmudict-0.4-sample20.out.xz "$tmp/pred.tsv" --json >"$tmp/rescore.json" &&
"$GF" eval --ckpt "$tmp/strip/best.safetensors" --corpus cmudict --split test --beam 2 --json >"$tmp/eval.json" 2>/dev/null \
    || fail "words, predict, score, eval: $(tail -2 "$tmp/err" 2>/dev/null)"
python3 - "$tmp/rescore.json" "$tmp/eval.json" <<'PY' && pass "... its as-read WER and PER equal eval's, and ax as ah is no worse" || fail "rescore: $(cat "$tmp/rescore.json")"
import json, sys
r, e = json.load(open(sys.argv[1])), json.loads(open(sys.argv[2]).read().strip().splitlines()[-1])
a, m = r["as_read"], r["ax_as_ah"]
sys.exit(not (a["words"] == e["examples"] == 1019 and abs(a["wer"] - e["wer"]) < 1e-6 and abs(a["per"] - e["per"]) < 1e-6
              and m["wer"] <= a["wer"] and m["per"] <= a["per"]))
PY

echo "g2p: refusals"
want='HINT: --model transformer-g2p, grassmann-g2p or gru-g2p' expect 1 "a language-model preset is refused, with the presets to use" \
    "$GF" train --task g2p --model grassmann-tiny --corpus cmudict --steps 1 --out "$tmp/no"
want='takes no tokenizer' expect 1 "--tokenizer is refused" \
    "$GF" train --task g2p --config "$tmp/att.json" --corpus cmudict --tokenizer char --steps 1 --out "$tmp/no"
printf 'not a lexicon\n' >"$tmp/bad.txt"
want='bad.txt.*not a pronunciation lexicon' expect 1 "a file that is no lexicon is named" \
    "$GF" train --task g2p --config "$tmp/att.json" --corpus "$tmp/bad.txt" --steps 1 --out "$tmp/no"
printf 'HELLO  HH AH0 L OW1\nWORLD  W ER1 L D\nUHOH  AH1 Q OW0\n' >"$tmp/plain.dict"
want='phoneme "q" is not one the model knows' expect 1 "a phoneme the checkpoint does not know is named" \
    "$GF" eval --ckpt "$tmp/att/best.safetensors" --corpus "$tmp/plain.dict"
/usr/bin/python3 - "$tmp" <<'PYEOF' || fail "could not write the lexicon of long words"
import sys
sys.path.insert(0, "scripts")
from make_cmudict_subset import lexicon_hash
letters = lambda i, n: "".join(chr(97 + (i // 26 ** k) % 26) for k in range(n))
words = [letters(i, 3) for i in range(2000)]
split = lambda w: lexicon_hash(w.encode(), 0) % 100
lines = ["%s  AH0" % w.upper() for w in words[:200]]
lines += ["%s  AH0" % (w * 20).upper() for w in words if split(w * 20) >= 90][:2]  # 60 letters: valid or test
open(sys.argv[1] + "/long.dict", "w").write("\n".join(lines) + "\n")
PYEOF
want='g2p test: the longest source is 60 ids' expect 1 "eval of words longer than the model reads is refused by name" \
    "$GF" eval --ckpt "$tmp/att/best.safetensors" --corpus "$tmp/long.dict" --split test
printf 'HELLO  HH AH0 L OW1\n' >"$tmp/one.dict"
want='valid split of .*one.dict has no word.*hash of the word' expect 1 "an empty split is named, with how words are split" \
    "$GF" eval --ckpt "$tmp/att/best.safetensors" --corpus "$tmp/one.dict"
[ "$fails" -eq 0 ] || { echo "g2p: $fails FAILED"; exit 1; }
echo "g2p: all passed"
