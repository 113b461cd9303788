#!/usr/bin/env bash
# A Hugging Face DistilBERT folder as a backbone (src/import/distilbert.c), held to PyTorch. No weights can
# be downloaded here, so tests/parity/torch_ref/distilbert.py builds a small DistilBERT-shaped folder under Hugging
# Face's names and a DistilBERT forward written out in PyTorch; then:
#   - hidden states of a padded batch (tests/parity/import_check.c), with and without the "distilbert." prefix, and
#     `grassflow features` on a pair, against that forward;
#   - the imported model's logits, loss, gradients and an AdamW trajectory against the reference model (python/grassflow/torch_model.py);
#   - a frozen DistilBERT under a head: its tensors stay, the head trains;
#   - damaged folders: a missing, misnamed or misshapen tensor, a layer too many, a NaN or infinite weight
#     (or a float64 one beyond float32), a cased vocabulary, no vocab.txt, a config.json without a key, a
#     pickle instead of safetensors, a config.json of a model far larger than its file (refused before
#     allocating): errors naming them;
#   - config.json and tokenizer_config.json keys out of range or of the wrong JSON type, a vocab.txt without
#     [CLS]: errors in the file's own names, with the value found and what is expected;
#   - DIR/model.safetensors given to features, train --backbone, eval or score: "pass the folder DIR".
#   bash tests/parity/distilbert.sh [BUILD]
set -uo pipefail
BUILD=${1:-build}
cd "$(dirname "$0")/../.."
GF="$BUILD/grassflow"
PY=/usr/bin/python3
if ! $PY -c 'import torch, numpy' 2>/dev/null; then
    echo "distilbert: PyTorch is missing for $PY; install it with: apt-get install python3-torch python3-numpy" >&2
    exit 1
fi
make --no-print-directory BUILD="$BUILD" "$BUILD/tests/import_check" "$BUILD/tests/parity_check" >/dev/null || exit 1
tmp=$(mktemp -d /tmp/grassflow-distilbert-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. tests/lib.sh
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}

echo "distilbert: a Hugging Face folder held to PyTorch"
$PY tests/parity/torch_ref/distilbert.py make --out "$tmp/hf" || fail "making the folder"
$PY tests/parity/torch_ref/distilbert.py make --out "$tmp/bare" --bare || fail "making the bare folder"
for f in hf bare; do
    if "$BUILD/tests/import_check" "$tmp/$f" "$tmp/$f.ref.safetensors" "$tmp/$f.imported.safetensors" >"$tmp/out" 2>&1; then
        pass "$(cat "$tmp/out")"
    else fail "hidden states of $f: $(cat "$tmp/out")"; fi
done
"$GF" features --ckpt "$tmp/hf" --text "A man is in the park." --hypothesis "The dogs are playing with a ball." --json \
    >"$tmp/f.json" 2>"$tmp/err" || fail "features: $(cat "$tmp/err")"
$PY tests/parity/torch_ref/distilbert.py check --dir "$tmp/hf" --features "$tmp/f.json" >"$tmp/out" 2>&1 \
    && pass "features on a pair: $(cat "$tmp/out")" || fail "features: $(cat "$tmp/out")"
OMP_NUM_THREADS=1 $PY tests/parity/torch_ref/make_fixture.py --init "$tmp/hf.imported.safetensors" --out "$tmp/ref.safetensors" \
    --batch 4 --seq-len 17 --seed 11 --ignore-tail 0 --pad >/dev/null || fail "the PyTorch reference of the imported model"
"$BUILD/tests/parity_check" "$tmp/hf.imported.safetensors" "$tmp/ref.safetensors" >"$tmp/out" 2>&1 \
    && pass "the imported model's logits, loss, gradients and AdamW steps match PyTorch (padded batch)" \
    || fail "parity of the imported model: $(cat "$tmp/out")"

echo "distilbert: a frozen DistilBERT under a head"
# a small SNLI folder (the first pairs of the shipped splits, as jsonl) keeps the run short
mkdir -p "$tmp/snli"
for s in train_0.01 dev test; do
    xz -dc "data/snli/snli_1.0_$s.tsv.xz" | head -64 | $PY -c '
import json, sys
for line in sys.stdin:
    l, p, h = line.rstrip("\n").split("\t")[:3]
    print(json.dumps({"gold_label": l, "sentence1": p, "sentence2": h}))' >"$tmp/snli/snli_1.0_${s%_0.01}.jsonl"
done
printf '{"name": "head", "d_model": 16, "d_ff": 32, "n_layer": 1, "direction": "bidirectional", "layers": [{"mixer": "grassmann", "rank": 4, "offsets": [1, 2], "window": 8}]}' >"$tmp/head.json"
"$GF" train --task snli --backbone "$tmp/hf" --head "$tmp/head.json" --corpus "$tmp/snli" --max-sent 16 --steps 4 \
    --batch 8 --eval-every 2 --freeze-backbone --out "$tmp/run" >"$tmp/out" 2>"$tmp/err" \
    || fail "a head on a frozen DistilBERT: $(tail -c 400 "$tmp/err")"
$PY - "$tmp/hf.imported.safetensors" "$tmp/run/last.safetensors" <<'PYEOF' && pass "frozen: DistilBERT's tensors unchanged, the head trained" || fail "frozen DistilBERT run"
import json, struct, sys
def t(p):
    b = open(p, "rb").read(); n = struct.unpack("<Q", b[:8])[0]; h = json.loads(b[8:8 + n]); h.pop("__metadata__")
    return {k: b[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]] for k, v in h.items()}
imp, run = t(sys.argv[1]), t(sys.argv[2])
body = [k for k in imp if k.startswith(("tok_emb.", "pos_emb.", "emb_ln.", "blocks."))]
assert len(body) == 4 + 2 * 12, body
assert all(run[k] == imp[k] for k in body), "the backbone moved"
assert any(k.startswith("head.") for k in run) and "cls_head.weight" in run
PYEOF
$PY - "$tmp/hf.imported.safetensors" "$(tail -1 "$tmp/out")" <<'PYEOF' && pass "the summary counts the trainable parameters apart: all but DistilBERT's" || fail "trainable count: $(tail -1 "$tmp/out")"
import json, re, struct, sys
b = open(sys.argv[1], "rb").read(); n = struct.unpack("<Q", b[:8])[0]; h = json.loads(b[8:8 + n]); h.pop("__metadata__")
body = sum(eval("*".join(map(str, v["shape"]))) for k, v in h.items() if k.startswith(("tok_emb.", "pos_emb.", "emb_ln.", "blocks.")))
m = re.search(r"params (\d+)  trainable (\d+)", sys.argv[2])
assert m and int(m.group(1)) - int(m.group(2)) == body, (m and m.groups(), body)
PYEOF
want="needs examples of 99 positions; the backbone .* has 40"
expect 1 "--max-sent too long for DistilBERT's position table" "$GF" train --task snli --backbone "$tmp/hf" --head "$tmp/head.json" --corpus "$tmp/snli" --steps 1 --out "$tmp/x"

echo "distilbert: damaged folders"
$PY tests/parity/torch_ref/distilbert.py break --dir "$tmp/hf" --out "$tmp" \
    --how missing misnamed shape extra cased badtok novocab badconfig nan inf f64big || fail "breaking the folder"
q1="distilbert\.transformer\.layer\.1\.attention\.q_lin\.weight"
want="missing/model.safetensors: no tensor $q1, which a DistilBERT of this config.json has"
expect 1 "a missing tensor is named" "$GF" features --ckpt "$tmp/missing" --text "a man"
want="no tensor $q1.*no DistilBERT tensor of this shape: ${q1%weight}weigth"
expect 1 "a misnamed tensor: the expected name and the file's" "$GF" features --ckpt "$tmp/misnamed" --text "a man"
want="word_embeddings\.weight has shape \[30, 32\]; config\.json .* says \[30, 48\]"
expect 1 "a tensor of the wrong shape: both shapes" "$GF" features --ckpt "$tmp/shape" --text "a man"
want="n_layers 1\) has no place for: distilbert\.transformer\.layer\.1\."
expect 1 "a layer more than config.json says" "$GF" features --ckpt "$tmp/extra" --text "a man"
want="tokenizer_config\.json: \"do_lower_case\" is false"
expect 1 "a cased vocabulary" "$GF" features --ckpt "$tmp/cased" --text "a man"
want="badtok/tokenizer_config\.json: not a JSON object"
expect 1 "a tokenizer_config.json that is not JSON" "$GF" features --ckpt "$tmp/badtok" --text "a man"
cp -r "$tmp/badtok" "$tmp/duptok" && printf '{"do_lower_case": true, "do_lower_case": false}' >"$tmp/duptok/tokenizer_config.json"
want='duptok/tokenizer_config\.json: the key "do_lower_case" appears twice'
expect 1 "a tokenizer_config.json with a key twice (cJSON would read the first)" "$GF" features --ckpt "$tmp/duptok" --text "a man"
want="novocab/vocab\.txt"
expect 1 "no vocab.txt" "$GF" features --ckpt "$tmp/novocab" --text "a man"
want="badconfig/config\.json: \"n_heads\" is missing"
expect 1 "config.json without n_heads" "$GF" features --ckpt "$tmp/badconfig" --text "a man"
want="nan/model\.safetensors: tensor \"$q1\" holds NaN at index 101; a DistilBERT's weights are finite"
expect 1 "a NaN weight: the file and the tensor under its Hugging Face name" "$GF" features --ckpt "$tmp/nan" --text "a man"
want="inf/model\.safetensors: tensor \"distilbert\.embeddings\.LayerNorm\.bias\" holds an infinite value at index 7"
expect 1 "an infinite weight" "$GF" features --ckpt "$tmp/inf" --text "a man"
want="f64big/model\.safetensors: tensor \"distilbert\.transformer\.layer\.0\.ffn\.lin1\.weight\" holds 1e\+300 at index 2, beyond float32's range"
expect 1 "a float64 weight beyond float32's range" "$GF" features --ckpt "$tmp/f64big" --text "a man"
want="nan/model\.safetensors: tensor \"$q1\" holds NaN"
expect 1 "... and as a --backbone, before any step" "$GF" train --task snli --backbone "$tmp/nan" --head "$tmp/head.json" --corpus "$tmp/snli" --max-sent 16 --steps 1 --out "$tmp/xnan"
[ ! -e "$tmp/xnan/last.safetensors" ] && pass "... no checkpoint written" || fail "a NaN backbone wrote $tmp/xnan/last.safetensors"
want="wrongshape/model\.safetensors: tensor .* has shape"
cp -r "$tmp/shape" "$tmp/wrongshape"
expect 1 "... and as a --backbone" "$GF" train --task snli --backbone "$tmp/wrongshape" --head "$tmp/head.json" --corpus "$tmp/snli" --max-sent 16 --steps 1 --out "$tmp/x"
cp -r "$tmp/hf" "$tmp/pickle" && mv "$tmp/pickle/model.safetensors" "$tmp/pickle/pytorch_model.bin"
want="pickle has pytorch_model.bin but no model.safetensors"
expect 1 "pytorch_model.bin only: said so, with where to get the safetensors file" "$GF" features --ckpt "$tmp/pickle" --text "a man"
cp -r "$tmp/hf" "$tmp/huge"
$PY -c 'import json, sys; p = sys.argv[1] + "/config.json"; c = json.load(open(p)); c.update(dim=4096, hidden_dim=16384, n_layers=2); json.dump(c, open(p, "w"))' "$tmp/huge"
want="word_embeddings\.weight has shape \[30, 32\]; config\.json \(vocab_size, dim\) says \[30, 4096\]"
expect 1 "a config.json of a 1.6 GB model over an 87 KB file" /usr/bin/time -f "%M" -o "$tmp/rss" "$GF" features --ckpt "$tmp/huge" --text "a man"
[ "$(cat "$tmp/rss" | tail -1)" -lt 100000 ] && pass "... refused before allocating it ($(tail -1 "$tmp/rss") KB peak)" || fail "the huge config cost $(cat "$tmp/rss") KB"
# edited NAME FILE PY: a copy of the good folder as NAME whose FILE (a JSON file) is changed by PY (on c)
edited() {
    cp -r "$tmp/hf" "$tmp/$1"
    $PY -c 'import json, sys; p = sys.argv[1]; c = json.load(open(p)); exec(sys.argv[2]); json.dump(c, open(p, "w"))' \
        "$tmp/$1/$2" "$3" || fail "editing $1"
}
# config.json: errors in the file's own key names, with the value found and what is expected
n=0
while IFS='|' read -r py msg; do
    n=$((n + 1))
    edited "cfg$n" config.json "$py"
    want="cfg$n/config\.json: $msg"
    expect 1 "config.json with $py" "$GF" features --ckpt "$tmp/cfg$n" --text "a man"
done <<'CASES'
c["n_layers"] = 100|"n_layers" is 100; expected an integer from 1 to 64 \(the largest grassflow builds\)
c["n_layers"] = 2e9|"n_layers" is 2000000000; expected an integer from 1 to 64
c["vocab_size"] = 3e9|"vocab_size" is 3000000000; expected an integer from 1 to 2147483647
c["dim"] = 100000|"dim" is 100000; expected an integer from 1 to 65536
c["hidden_dim"] = 2000000|"hidden_dim" is 2000000; expected an integer from 1 to 1048576
c["max_position_embeddings"] = 20000000|"max_position_embeddings" is 20000000; expected an integer from 1 to 16777216
c["n_layers"] = "2"|"n_layers" is "2" \(a string\); expected an integer from 1 to 64
c["n_heads"] = 2.5|"n_heads" is 2.5; expected an integer
c["hidden_dim"] = -64|"hidden_dim" is -64; expected an integer
c["dim"] = True|"dim" is true; expected an integer
c["n_heads"] = 5|"dim" 32 is not divisible by "n_heads" 5
c["activation"] = ["gelu"]|"activation" is \["gelu"\] \(an array\); grassflow reads DistilBERTs with "gelu"
c["dropout"] = "0.1"|"dropout" is "0.1" \(a string\); expected a probability in \[0, 1\)
c["dropout"] = None|"dropout" is null; expected a probability
c["sinusoidal_pos_embds"] = "false"|"sinusoidal_pos_embds" is "false" \(a string\); expected true or false
CASES
# tokenizer_config.json: BERT's uncased tokenizer, asked for in the expected types
while IFS='|' read -r py msg; do
    n=$((n + 1))
    edited "tok$n" tokenizer_config.json "$py"
    want="tok$n/tokenizer_config\.json: $msg"
    expect 1 "tokenizer_config.json with $py" "$GF" features --ckpt "$tmp/tok$n" --text "a man"
done <<'CASES'
c["do_lower_case"] = "false"|"do_lower_case" is "false" \(a string\); .*expected true
c["do_lower_case"] = None|"do_lower_case" is null
c["strip_accents"] = False|"strip_accents" is false; .*expected true or null
c["tokenize_chinese_chars"] = 0|"tokenize_chinese_chars" is 0
c["cls_token"] = "<s>"|"cls_token" is "<s>" \(a string\); .*expected "\[CLS\]"
c["unk_token"] = {"content": "<unk>"}|"unk_token" is \{"content":"<unk>"\} \(an object\)
CASES
edited tokok tokenizer_config.json 'c.update(strip_accents=None, cls_token={"content": "[CLS]", "lstrip": False}, tokenize_chinese_chars=True)'
expect 0 "tokenizer_config.json with Hugging Face's defaults spelt out (null, AddedToken objects) reads" "$GF" features --ckpt "$tmp/tokok" --text "a man"
cp -r "$tmp/hf" "$tmp/nocls" && sed -i 's/^\[CLS\]$/[cls]/' "$tmp/nocls/vocab.txt"
want="nocls/vocab\.txt has no \[CLS\] line; a DistilBERT reads a text as \[CLS\] text \[SEP\]"
expect 1 "a vocab.txt without [CLS] (features would not wrap the text)" "$GF" features --ckpt "$tmp/nocls" --text "a man"
# the folder's weights given where the folder (or a grassflow checkpoint) is expected: name the folder
want="hf/model\.safetensors: not a grassflow checkpoint .*this looks like a Hugging Face DistilBERT folder's weights; pass the folder $tmp/hf"
expect 1 "features --ckpt DIR/model.safetensors: pass the folder" "$GF" features --ckpt "$tmp/hf/model.safetensors" --text "a man"
want="this looks like a Hugging Face DistilBERT folder's weights; pass the folder $tmp/hf"
expect 1 "train --backbone DIR/model.safetensors: pass the folder" "$GF" train --task snli --backbone "$tmp/hf/model.safetensors" --head "$tmp/head.json" --corpus "$tmp/snli" --max-sent 16 --steps 1 --out "$tmp/x"
want="this looks like a Hugging Face DistilBERT folder's weights; pass the folder $tmp/hf"
expect 1 "eval --ckpt DIR/model.safetensors: said so" "$GF" eval --task snli --ckpt "$tmp/hf/model.safetensors" --corpus "$tmp/snli"
want="this looks like a Hugging Face DistilBERT folder's weights; pass the folder $tmp/hf"
expect 1 "score --ckpt DIR/model.safetensors: said so" "$GF" score --ckpt "$tmp/hf/model.safetensors" --tokens "$tmp/hf/vocab.txt"
want="hf is a Hugging Face DistilBERT folder, not a grassflow checkpoint file"
expect 1 "eval --ckpt DIR: the folder is named for what it is" "$GF" eval --task snli --ckpt "$tmp/hf" --corpus "$tmp/snli"
mkdir -p "$tmp/plain"
want="plain is a folder, but none that grassflow reads; expected a grassflow checkpoint .* or hf-distilbert"
expect 1 "a folder of nothing known" "$GF" features --ckpt "$tmp/plain" --text "a man"

[ "$fails" -eq 0 ] && echo "distilbert: all passed" || { echo "distilbert: $fails FAILED"; exit 1; }
