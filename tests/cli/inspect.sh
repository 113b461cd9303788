#!/usr/bin/env bash
# grassflow inspect on a small trained model (hybrid-tiny: Grassmann, attention, Grassmann; its layer 2 lists offset
# 3 twice): the JSON's shapes, layer by layer and token by token; the two equalities it promises, each against an
# independent computation (grassflow score and eval on a checkpoint edited by hand here):
#   - an offset dropped at evaluation time = the same weights under a config whose offsets lack it;
#   - a gate forced to 1 (m = h) = the gate saturated at 1 by its weights (gate.weight 0, gate.bias 100), and the
#     model without that layer's Grassmann update (its Pluecker path scrambled changes nothing); forced to 0 = the
#     gate saturated at 0;
# the SVG heat maps (XML, token labels escaped, the tokens capped); bad input, wrong flags and the output rule.
set -uo pipefail
BUILD=${1:-build}
GF="$BUILD/grassflow"
PY=/usr/bin/python3
tmp=$(mktemp -d /tmp/grassflow-inspect-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. tests/lib.sh
export GRASSFLOW_CACHE="$tmp/cache"

# ckpt_edit IN OUT SCRIPT: a copy of checkpoint IN with its config (cfg, a dict) and tensors (t(name): a list of
# floats, set(name, values)) changed by the Python statements SCRIPT; the rest of the file as it was.
ckpt_edit() {
    "$PY" - "$1" "$2" "$3" <<'EOF'
import json, struct, sys
src, dst, script = sys.argv[1:]
b = open(src, "rb").read()
n = struct.unpack("<Q", b[:8])[0]
head, data = json.loads(b[8:8 + n]), bytearray(b[8 + n:])
cfg = json.loads(head["__metadata__"]["config"])
def t(name):
    s, e = head[name]["data_offsets"]
    return list(struct.unpack("<%df" % ((e - s) // 4), data[s:e]))
def set(name, values):
    s, e = head[name]["data_offsets"]
    data[s:e] = struct.pack("<%df" % len(values), *values)
exec(script)
head["__metadata__"]["config"] = json.dumps(cfg)
h = json.dumps(head).encode()
h += b" " * (-len(h) % 8)
open(dst, "wb").write(struct.pack("<Q", len(h)) + h + bytes(data))
EOF
}
# jget FILE EXPR: EXPR of the JSON object in FILE, as x
jget() { "$PY" -c 'import json, sys; x = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"; }
# close A B TOL WHAT: |A - B| <= TOL
close() {
    "$PY" -c 'import sys; a, b, t = map(float, sys.argv[1:4]); sys.exit(0 if abs(a - b) <= t else 1)' "$1" "$2" "$3" \
        && pass "$4: $1 vs $2 (difference $("$PY" -c "print('%.1e' % abs($1 - $2))"))" || fail "$4: $1 vs $2"
}

echo "inspect: a small model"
"$GF" train --model hybrid-tiny --set layers.2.offsets=[1,3,3,8] --corpus tinyshakespeare --tokenizer byte \
    --seq-len 32 --steps 300 --lr 3e-3 --eval-every 0 --out "$tmp/run" >"$tmp/train.log" 2>&1 \
    || { cat "$tmp/train.log"; fail "training the model"; exit 1; }
CK="$tmp/run/last.safetensors"
TEXT="\"<&>\" ROMEO's
the sun"
printf '%s' "$TEXT" >"$tmp/text.txt"

echo "inspect: the JSON's shapes (layers x tokens x channels / offsets)"
want=; expect 0 "inspect --text --json" "$GF" inspect --ckpt "$CK" --text "$TEXT" --json
cp "$tmp/out" "$tmp/a.json"
shapes=$("$PY" - "$tmp/a.json" "$TEXT" <<'EOF'
import json, sys
x, text = json.load(open(sys.argv[1])), sys.argv[2]
T, bad = x["tokens"], []
def shape(v):
    return [len(v)] + shape(v[0]) if isinstance(v, list) and v else []
def check(what, got, want):
    if got != want: bad.append("%s: %s, expected %s" % (what, got, want))
check("ids, pieces, token_loss", [len(x["ids"]), len(x["pieces"]), len(x["token_loss"])], [T] * 3)
check("the pieces spell the text", "".join(x["pieces"]), text)
check("predicted", x["predicted"], T - 1)
check("kinds", [l["kind"] for l in x["layers"]], ["grassmann", "attention", "grassmann"])
for l in (x["layers"][0], x["layers"][2]):
    K, d, i = len(l["offsets"]), l["d_model"], l["layer"]
    check("layer %d gate" % i, shape(l["gate"]), [T, d])
    for k in ("contribution", "share", "drop_token_delta"): check("layer %d %s" % (i, k), shape(l[k]), [T, K])
    for k in ("gate_mean", "n_valid"): check("layer %d %s" % (i, k), shape(l[k]), [T])
    for k in ("drop_loss", "drop_delta"): check("layer %d %s" % (i, k), shape(l[k]), [K])
    check("layer %d plucker_top" % i, [len(l["plucker_top"])] + sorted(set(len(p) for p in l["plucker_top"])), [T, 5])
    check("layer %d coordinates i < j < rank" % i, all(0 <= c["i"] < c["j"] < l["rank"] for p in l["plucker_top"] for c in p), True)
    check("layer %d n_valid" % i, l["n_valid"], [sum(1 for D in l["offsets"] if t - D >= 0) for t in range(T)])
    check("layer %d shares sum to 1" % i, all(abs(sum(s) - 1) < 1e-5 for s, n in zip(l["share"], l["n_valid"]) if n), True)
    check("layer %d: the last token's loss changes are null" % i, set(l["drop_token_delta"][-1]), {None})
a = x["layers"][1]
check("attention", shape(a["attention"]), [a["n_head"], T, T])
check("attention rows sum to 1", all(abs(sum(r) - 1) < 1e-5 for h in a["attention"] for r in h), True)
check("attention is causal", all(h[t][s] == 0 for h in a["attention"] for t in range(T) for s in range(t + 1, T)), True)
check("layer 2's offsets, as its config lists them", x["layers"][2]["offsets"], [1, 3, 3, 8])
check("an offset listed twice, dropped once", x["layers"][2]["drop_loss"][1], x["layers"][2]["drop_loss"][2])
print("; ".join(bad) if bad else "ok %d tokens, 3 layers" % T)
EOF
)
case $shapes in ok*) pass "the JSON's shapes: ${shapes#ok }" ;; *) fail "the JSON's shapes: $shapes" ;; esac
want=; expect 0 "--out-json FILE --top-k 3 (and the summary on stdout)" "$GF" inspect --ckpt "$CK" --text-file "$tmp/text.txt" --out-json "$tmp/b.json" --top-k 3
grep -q "^layer 0 grassmann" "$tmp/out" && grep -q "^layer 1 attention (4 heads)" "$tmp/out" && pass "... the summary names each layer" || fail "the summary: $(head -c 300 "$tmp/out")"
[ "$(jget "$tmp/b.json" 'len(x["layers"][0]["plucker_top"][5])')" = 3 ] && pass "... --top-k 3 lists 3 coordinates a token" || fail "--top-k 3"
[ "$(jget "$tmp/b.json" 'x["layers"][2]["drop_loss"]')" = "$(jget "$tmp/a.json" 'x["layers"][2]["drop_loss"]')" ] \
    && pass "... --text-file reads the same text: the same numbers" || fail "--text-file and --text differ"

echo "inspect: a dropped offset = the same weights under a config without it"
ids=$(jget "$tmp/a.json" '" ".join(map(str, x["ids"]))')
echo "$ids" >"$tmp/ids.txt"
ckpt_edit "$CK" "$tmp/no4.safetensors" 'cfg["layers"][0]["offsets"] = [1, 2, 8, 12, 16]'
ckpt_edit "$CK" "$tmp/no3.safetensors" 'cfg["layers"][2]["offsets"] = [1, 8]'
want=; expect 0 "score on the checkpoint whose layer 0 lacks offset 4" "$GF" score --ckpt "$tmp/no4.safetensors" --tokens "$tmp/ids.txt" --json
close "$(jget "$tmp/a.json" 'x["layers"][0]["drop_loss"][2]')" "$(jget "$tmp/out" 'x["loss"]')" 1e-6 "the text, layer 0 without offset 4: inspect's drop_loss vs score on the edited checkpoint"
want=; expect 0 "score on the checkpoint whose layer 2 lacks offset 3 (both entries)" "$GF" score --ckpt "$tmp/no3.safetensors" --tokens "$tmp/ids.txt" --json
close "$(jget "$tmp/a.json" 'x["layers"][2]["drop_loss"][1]')" "$(jget "$tmp/out" 'x["loss"]')" 1e-6 "the text, layer 2 without offset 3"
want=; expect 0 "inspect --drop-offset 4 --layer 0 --text" "$GF" inspect --ckpt "$CK" --text "$TEXT" --drop-offset 4 --layer 0 --json
close "$(jget "$tmp/out" 'x["loss"]')" "$(jget "$tmp/a.json" 'x["layers"][0]["drop_loss"][2]')" 5e-8 "... its loss is the analysis's drop_loss (printed to 9 digits)"
close "$(jget "$tmp/out" 'x["base_loss"]')" "$(jget "$tmp/a.json" 'x["loss"]')" 5e-8 "... its base_loss the analysis's loss"
want=; expect 0 "eval of the model as trained" "$GF" eval --ckpt "$CK" --corpus tinyshakespeare --seq-len 32 --json
base=$(jget "$tmp/out" 'x["loss"]')
# differs LOSS WHAT: LOSS (the valid split's, under an override) is far from the model's own, so that the equality
# next to it could not hold for an override that did nothing
differs() {
    "$PY" -c 'import sys; sys.exit(0 if abs(float(sys.argv[1]) - float(sys.argv[2])) > 1e-4 else 1)' "$1" "$base" \
        && pass "... and differs from the model as trained by more than 1e-4 ($1 vs $base)" \
        || fail "$2 changed the loss by 1e-4 or less ($1 vs $base): the test would not see an override that did nothing"
}
for split in valid test; do
    want=; expect 0 "inspect --drop-offset 4 --layer 0 --corpus --split $split" "$GF" inspect --ckpt "$CK" --drop-offset 4 --layer 0 --corpus tinyshakespeare --split $split --seq-len 32 --json
    cp "$tmp/out" "$tmp/drop.json"
    want=; expect 0 "eval on the edited checkpoint, $split" "$GF" eval --ckpt "$tmp/no4.safetensors" --corpus tinyshakespeare --split $split --seq-len 32 --json
    close "$(jget "$tmp/drop.json" 'x["loss"]')" "$(jget "$tmp/out" 'x["loss"]')" 1e-6 "the $split split, layer 0 without offset 4: inspect vs eval"
    [ $split = valid ] && differs "$(jget "$tmp/drop.json" 'x["loss"]')" "dropping offset 4"
done
[ "$(jget "$tmp/drop.json" 'x["override"]')" = "{'layer': 0, 'drop_offset': 4, 'force_gate': None}" ] \
    && pass "... its JSON names the override" || fail "the override in eval's JSON: $(cat "$tmp/drop.json")"
ckpt_edit "$CK" "$tmp/no8.safetensors" 'cfg["layers"][0]["offsets"] = [1, 2, 4, 12, 16]; cfg["layers"][2]["offsets"] = [1, 3, 3]'
want=; expect 0 "inspect --drop-offset 8 (every Grassmann layer) --corpus" "$GF" inspect --ckpt "$CK" --drop-offset 8 --corpus tinyshakespeare --seq-len 32 --json
cp "$tmp/out" "$tmp/drop8.json"
want=; expect 0 "eval on the checkpoint whose layers both lack 8" "$GF" eval --ckpt "$tmp/no8.safetensors" --corpus tinyshakespeare --seq-len 32 --json
close "$(jget "$tmp/drop8.json" 'x["loss"]')" "$(jget "$tmp/out" 'x["loss"]')" 1e-6 "the valid split, offset 8 dropped from every layer: inspect vs eval"
want="with offset 4 dropped in layer 0 \(grassflow inspect --drop-offset 4 --layer 0\)"
"$GF" inspect --ckpt "$CK" --drop-offset 4 --layer 0 --corpus tinyshakespeare --seq-len 32 2>&1 | grep -Eq "$want" \
    && pass "... the text output says what was dropped" || fail "the text output of --drop-offset on a corpus"

echo "inspect: a forced gate = the gate saturated by the weights; a = 1 = the layer without its Grassmann update"
ckpt_edit "$CK" "$tmp/a1.safetensors" 'set("blocks.2.mix.gate.weight", [0.0] * len(t("blocks.2.mix.gate.weight"))); set("blocks.2.mix.gate.bias", [100.0] * 32)'
ckpt_edit "$CK" "$tmp/a0.safetensors" 'set("blocks.2.mix.gate.weight", [0.0] * len(t("blocks.2.mix.gate.weight"))); set("blocks.2.mix.gate.bias", [-100.0] * 32)'
ckpt_edit "$CK" "$tmp/scrambled.safetensors" 'set("blocks.2.mix.plucker.weight", [0.3 * ((i * 7919) % 13 - 6) for i in range(len(t("blocks.2.mix.plucker.weight")))]); set("blocks.2.mix.red.weight", [0.1] * len(t("blocks.2.mix.red.weight")))'
for a in 1 0; do
    want=; expect 0 "inspect --force-gate $a --layer 2 --corpus" "$GF" inspect --ckpt "$CK" --force-gate $a --layer 2 --corpus tinyshakespeare --seq-len 32 --json
    cp "$tmp/out" "$tmp/g$a.json"
    want=; expect 0 "eval with layer 2's gate saturated at $a by its weights" "$GF" eval --ckpt "$tmp/a$a.safetensors" --corpus tinyshakespeare --seq-len 32 --json
    close "$(jget "$tmp/g$a.json" 'x["loss"]')" "$(jget "$tmp/out" 'x["loss"]')" 1e-6 "the valid split, layer 2's gate a = $a: inspect vs eval"
    differs "$(jget "$tmp/g$a.json" 'x["loss"]')" "forcing the gate to $a"
done
want=; expect 0 "inspect --force-gate 1 --layer 2 on the checkpoint with layer 2's Pluecker path scrambled" "$GF" inspect --ckpt "$tmp/scrambled.safetensors" --force-gate 1 --layer 2 --corpus tinyshakespeare --seq-len 32 --json
close "$(jget "$tmp/out" 'x["loss"]')" "$(jget "$tmp/g1.json" 'x["loss"]')" 0 "... a = 1: the same loss whatever layer 2's red and plucker weights (m = h)"
want=; expect 0 "eval on that checkpoint, its gate learned" "$GF" eval --ckpt "$tmp/scrambled.safetensors" --corpus tinyshakespeare --seq-len 32 --json
[ "$(jget "$tmp/out" 'x["loss"]')" != "$(jget "$tmp/g1.json" 'x["loss"]')" ] && pass "... which the learned gate does see" || fail "the scrambled weights change nothing even with the learned gate"
want=; expect 0 "inspect --force-gate 1 --layer 2 --text" "$GF" inspect --ckpt "$CK" --text "$TEXT" --force-gate 1 --layer 2 --json
close "$(jget "$tmp/out" 'x["loss"]')" "$(jget "$tmp/a.json" 'x["layers"][2]["gate1_loss"]')" 5e-8 "... on the text: the analysis's gate1_loss"

echo "inspect: the SVG heat maps"
want=; expect 0 "--svg-dir --svg-tokens 8" "$GF" inspect --ckpt "$CK" --text "$TEXT" --svg-dir "$tmp/svg" --svg-tokens 8
files=$(cd "$tmp/svg" && ls | tr '\n' ' ')
[ "$files" = "layer0-gates.svg layer0-offsets.svg layer0-plucker.svg layer1-attention.svg layer2-gates.svg layer2-offsets.svg layer2-plucker.svg " ] \
    && pass "the figures of each layer: $files" || fail "the figures: $files"
svg=$("$PY" - "$tmp/svg" <<'EOF'
import os, sys, xml.etree.ElementTree as ET
d, bad = sys.argv[1], []
ns = "{http://www.w3.org/2000/svg}"
for f in sorted(os.listdir(d)):
    try: root = ET.parse(os.path.join(d, f)).getroot()
    except ET.ParseError as e: bad.append("%s: %s" % (f, e)); continue
    texts = ["".join(t.itertext()) for t in root.iter(ns + "text")]
    if not any("tokens 1-8 of" in t for t in texts): bad.append(f + ": no 'tokens 1-8 of' in its subtitle")
    if f != "layer0-plucker.svg" and not any(t == "\u2423" for t in texts): bad.append(f + ": no visible space label")
    if f.endswith("attention.svg"):
        cells = sum(1 for r in root.iter(ns + "rect") if r.find(ns + "title") is not None)
        if cells != 4 * 36: bad.append("%s: %d cells, expected 4 heads x 36 (8 tokens, causal)" % (f, cells))
    if f.endswith("offsets.svg") and not {"&", "\""} <= set(texts): bad.append(f + ": no '&' or '\"' label (escaped)")
    if f.endswith("gates.svg") and not any(t == "<" for t in texts): bad.append(f + ": no '<' label (escaped)")
print("; ".join(bad) if bad else "ok")
EOF
)
[ "$svg" = ok ] && pass "every SVG is XML, its labels escaped (&, quotes, a space shown), 8 tokens drawn of $(jget "$tmp/a.json" 'x["tokens"]')" || fail "the SVGs: $svg"
if command -v rsvg-convert >/dev/null; then
    rsvg-convert "$tmp/svg/layer1-attention.svg" -o "$tmp/att.png" && [ -s "$tmp/att.png" ] && pass "rsvg-convert renders them" || fail "rsvg-convert"
fi

echo "inspect: bad input"
long=$(printf 'ROMEO %.0s' $(seq 1 8))
want="the text gives 48 tokens; this model reads at most max_len = 32 \(learned positions\)"; expect 1 "a text longer than max_len" "$GF" inspect --ckpt "$CK" --text "$long"
want="the text gives 48 tokens; this model reads at most max_len = 32"; expect 1 "... also under an override" "$GF" inspect --ckpt "$CK" --text "$long" --drop-offset 1
want="--text: the text gives 0 tokens; inspect needs 2 or more"; expect 1 "an empty text" "$GF" inspect --ckpt "$CK" --text ""
: >"$tmp/empty.txt"
want="empty.txt: the text gives 0 tokens"; expect 1 "an empty --text-file" "$GF" inspect --ckpt "$CK" --text-file "$tmp/empty.txt"
want="--text-file: .*missing.txt"; expect 1 "a missing --text-file" "$GF" inspect --ckpt "$CK" --text-file "$tmp/missing.txt"

"$GF" train --model transformer-tiny --corpus tinyshakespeare --tokenizer char --seq-len 32 --steps 4 --eval-every 0 --out "$tmp/tr" >/dev/null 2>&1
want="has no Grassmann layer: inspect shows its attention weights alone"; expect 0 "a transformer: its attention weights alone, said so" "$GF" inspect --ckpt "$tmp/tr/last.safetensors" --text "ROMEO: But soft" --json
[ "$(jget "$tmp/out" '[l["kind"] for l in x["layers"]]')" = "['attention', 'attention']" ] && pass "... its JSON: two attention layers" || fail "a transformer's JSON"
want="--drop-offset 1: this model has no Grassmann layer"; expect 1 "a transformer with --drop-offset" "$GF" inspect --ckpt "$tmp/tr/last.safetensors" --text "ROMEO: But soft" --drop-offset 1
want="--force-gate 0 --layer 1: layer 1's mixer is attention.*Grassmann layers: none"; expect 1 "... with --force-gate --layer" "$GF" inspect --ckpt "$tmp/tr/last.safetensors" --text "ROMEO: But soft" --force-gate 0 --layer 1
want="is not in the vocabulary"; expect 1 "a character its char tokenizer never saw" "$GF" inspect --ckpt "$tmp/tr/last.safetensors" --text 'ROMEO "<"' 
"$GF" init --model grassmann-tiny --out "$tmp/init.safetensors" >/dev/null
want="carries no tokenizer"; expect 1 "a checkpoint without a tokenizer" "$GF" inspect --ckpt "$tmp/init.safetensors" --text "$TEXT"

echo "inspect: wrong flags"
want="--force-gate expects 0 .* or 1 .*, got '2'"; expect 2 "--force-gate 2" "$GF" inspect --ckpt "$CK" --text "$TEXT" --force-gate 2
want="--layer K picks the layer of --drop-offset or --force-gate"; expect 2 "--layer alone" "$GF" inspect --ckpt "$CK" --text "$TEXT" --layer 0
want="--drop-offset 3 --layer 0: layer 0's offsets are 1, 2, 4, 8, 12, 16; 3 is not among them"; expect 1 "an offset the layer lacks" "$GF" inspect --ckpt "$CK" --text "$TEXT" --drop-offset 3 --layer 0
want="--drop-offset 1 --layer 1: layer 1's mixer is attention"; expect 1 "--layer of an attention layer" "$GF" inspect --ckpt "$CK" --text "$TEXT" --drop-offset 1 --layer 1
want="--force-gate 1 --layer 7: layer 7; this model has layers 0 to 2"; expect 1 "--layer past the last" "$GF" inspect --ckpt "$CK" --text "$TEXT" --force-gate 1 --layer 7
want="--drop-offset expects an integer"; expect 2 "--drop-offset 0" "$GF" inspect --ckpt "$CK" --text "$TEXT" --drop-offset 0
want="--top-k expects an integer in \[1, 64\]"; expect 2 "--top-k 0" "$GF" inspect --ckpt "$CK" --text "$TEXT" --top-k 0
want="give one of --text TEXT and --text-file FILE"; expect 2 "--text and --text-file" "$GF" inspect --ckpt "$CK" --text "$TEXT" --text-file "$tmp/text.txt"
want="give one of --text TEXT and --text-file FILE"; expect 2 "neither" "$GF" inspect --ckpt "$CK"
want="--ckpt FILE is required"; expect 2 "no --ckpt" "$GF" inspect --text "$TEXT"
want="--corpus: a split is scored under --drop-offset D or --force-gate"; expect 2 "--corpus without an override" "$GF" inspect --ckpt "$CK" --corpus tinyshakespeare
want="--split applies to --corpus"; expect 2 "--split with a text" "$GF" inspect --ckpt "$CK" --text "$TEXT" --split test
want="--seq-len applies to --corpus"; expect 2 "a task option with a text" "$GF" inspect --ckpt "$CK" --text "$TEXT" --seq-len 8
want="--svg-dir belongs to the analysis"; expect 2 "--svg-dir with --drop-offset" "$GF" inspect --ckpt "$CK" --text "$TEXT" --drop-offset 1 --svg-dir "$tmp/x"
want="--force replaces a file at --out-json or in --svg-dir"; expect 2 "--force alone" "$GF" inspect --ckpt "$CK" --text "$TEXT" --force
want="unrecognized option '--bogus'"; expect 2 "an unknown flag" "$GF" inspect --ckpt "$CK" --text "$TEXT" --bogus

echo "inspect: the output rule"
echo "not inspect's" >"$tmp/mine.json"
want="--out-json .*mine.json exists and is not replaced"; expect 1 "--out-json onto another file" "$GF" inspect --ckpt "$CK" --text "$TEXT" --out-json "$tmp/mine.json"
[ "$(cat "$tmp/mine.json")" = "not inspect's" ] && pass "... which stays as it was" || fail "--out-json replaced another file"
want=; expect 0 "... replaced with --force" "$GF" inspect --ckpt "$CK" --text "$TEXT" --out-json "$tmp/mine.json" --force
want=; expect 0 "--out-json onto its own earlier JSON: replaced" "$GF" inspect --ckpt "$CK" --text "$TEXT" --out-json "$tmp/b.json"
want="--out-json .* is an input"; expect 1 "--out-json onto the checkpoint" "$GF" inspect --ckpt "$CK" --text "$TEXT" --out-json "$CK" --force
echo "a note" >"$tmp/svg/layer0-gates.svg"
want="--svg-dir .*layer0-gates.svg exists and is not replaced"; expect 1 "--svg-dir over a file that is not an SVG" "$GF" inspect --ckpt "$CK" --text "$TEXT" --svg-dir "$tmp/svg"
[ "$(cat "$tmp/svg/layer0-gates.svg")" = "a note" ] && pass "... which stays, and nothing else was written" || fail "--svg-dir replaced a file that is not an SVG"
want=; expect 0 "... replaced with --force" "$GF" inspect --ckpt "$CK" --text "$TEXT" --svg-dir "$tmp/svg" --force
want="--svg-dir .*text.txt is not a folder"; expect 1 "--svg-dir that is a file" "$GF" inspect --ckpt "$CK" --text "$TEXT" --svg-dir "$tmp/text.txt"

[ "$fails" -eq 0 ] && echo "inspect: all passed" || { echo "inspect: $fails FAILED"; exit 1; }
