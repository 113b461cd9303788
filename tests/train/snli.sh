#!/usr/bin/env bash
# SNLI data: the shipped splits have the published counts; the official file forms (jsonl, the
# 14-column txt, each plain or .xz) read to the same pairs; bad files get errors naming file and line
# (NULs, invalid UTF-8, an .xz bomb past GRASSFLOW_MAX_TEXT; FIFOs, directories, link loops, a missing
# split; byte order marks, blank lines and Unicode whitespace read as they should);
# a synthetic full-size training file (550,152 pairs, jsonl with parse trees) streams in bounded memory.
#   bash tests/train/snli.sh [BUILD]
set -uo pipefail
BUILD=${1:-build}
cd "$(dirname "$0")/../.."
GF="$BUILD/grassflow"
# AddressSanitizer build? (grep reads all of ldd's output: grep -q would end the pipe early, and with
# pipefail the SIGPIPE of ldd would read as "no")
asan=0; if ldd "$GF" | grep libasan >/dev/null; then asan=1; fi
PY=/usr/bin/python3
tmp=$(mktemp -d /tmp/grassflow-snli-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. tests/lib.sh

echo "snli: the shipped splits"
"$GF" data stats --corpus snli --json >"$tmp/stats.json" 2>"$tmp/err" || fail "data stats --corpus snli: $(cat "$tmp/err")"
$PY - "$tmp/stats.json" <<'PYEOF' && pass "dev 9,842 and test 9,824 labelled pairs, label by label as published; train sample 5,498" || fail "counts differ: $(cat "$tmp/stats.json")"
import json, sys
s = json.load(open(sys.argv[1]))
want = {"dev": (10000, 9842, 3329, 3235, 3278, 158), "test": (10000, 9824, 3368, 3219, 3237, 176),
        "train": (5502, 5498, 1806, 1786, 1906, 4)}
for k, w in want.items():
    g = s[k]
    got = (g["rows"], g["pairs"], g["entailment"], g["neutral"], g["contradiction"], g["no_consensus"])
    if got != w:
        print(k, got, "!=", w); sys.exit(1)
PYEOF

echo "snli: the official forms read to the same pairs"
mkdir -p "$tmp/official"
$PY - data/snli "$tmp/official" <<'PYEOF'
import json, lzma, sys
src, dst = sys.argv[1], sys.argv[2]
head = ["gold_label", "sentence1_binary_parse", "sentence2_binary_parse", "sentence1_parse", "sentence2_parse",
        "sentence1", "sentence2", "captionID", "pairID", "label1", "label2", "label3", "label4", "label5"]
for split, form in (("dev", "jsonl.xz"), ("test", "txt"), ("train_0.01", "jsonl")):
    rows = [l.rstrip("\n").split("\t") for l in lzma.open(f"{src}/snli_1.0_{split}.tsv.xz", "rt", encoding="utf-8")]
    out = f"{dst}/snli_1.0_{split}.{form}"
    f = lzma.open(out, "wt", encoding="utf-8") if out.endswith(".xz") else open(out, "w", encoding="utf-8")
    if form == "txt":
        f.write("\t".join(head) + "\n")
    for i, (lab, s1, s2) in enumerate(rows):
        if form == "txt":
            f.write("\t".join([lab, "( x )", "( y )", "(ROOT x)", "(ROOT y)", s1, s2, f"{i}.jpg#0", f"{i}r", lab, lab, "", "", ""]) + "\n")
        else:
            f.write(json.dumps({"annotator_labels": [lab], "captionID": f"{i}.jpg#0", "gold_label": lab, "pairID": f"{i}r",
                                "sentence1": s1, "sentence1_binary_parse": "( x )", "sentence1_parse": "(ROOT x)",
                                "sentence2": s2, "sentence2_binary_parse": "( y )", "sentence2_parse": "(ROOT y)"}) + "\n")
    f.close()
PYEOF
"$GF" data stats --corpus "$tmp/official" --json >"$tmp/official.json" 2>"$tmp/err" || fail "official forms: $(cat "$tmp/err")"
$PY - "$tmp/stats.json" "$tmp/official.json" <<'PYEOF' && pass "dev as .jsonl.xz, test as the 14-column .txt, train as .jsonl: the same counts" || fail "official forms differ"
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
keys = ("rows", "pairs", "entailment", "neutral", "contradiction", "no_consensus", "empty")
assert [b["dev"]["format"], b["test"]["format"], b["train"]["format"]] == ["jsonl", "txt", "jsonl"], b
sys.exit(any(a[s][k] != b[s][k] for s in ("train", "dev", "test") for k in keys))
PYEOF

echo "snli: bad files"
mkdir -p "$tmp/bad"
cp data/snli/snli_1.0_test.tsv.xz data/snli/snli_1.0_train_0.01.tsv.xz "$tmp/bad/"
printf '{"gold_label": "neutral", "sentence1": "a", "sentence2": "b"}\n{"gold_label": "neutral", "sent\n' >"$tmp/bad/snli_1.0_dev.jsonl"
want="snli_1.0_dev.jsonl:2: not a JSON object"; expect 1 "a malformed jsonl line: named by file and line" "$GF" data stats --corpus "$tmp/bad"
printf 'neutral\ta\tb\nunsure\ta\tb\n' >"$tmp/bad/snli_1.0_dev.jsonl"
mv "$tmp/bad/snli_1.0_dev.jsonl" "$tmp/bad/snli_1.0_dev.tsv"
want='snli_1.0_dev.tsv:2: unknown gold label "unsure"'; expect 1 "an unknown label" "$GF" data stats --corpus "$tmp/bad"
printf 'neutral\t\tb\nentailment\ta\tb\n' >"$tmp/bad/snli_1.0_dev.tsv"
"$GF" data stats --corpus "$tmp/bad" --json >"$tmp/out" 2>"$tmp/err"
grep -q '"dev":{[^}]*"pairs":1,[^}]*"empty":1' "$tmp/out" && pass "an empty premise: the pair is dropped and counted" \
    || fail "empty premise: $(cat "$tmp/out" "$tmp/err")"
want="--tokenizer: .* holds sentence pairs"; expect 2 "--tokenizer with an NLI corpus" "$GF" data stats --corpus snli --tokenizer word
printf 'neutral\ta\tb\nneutral\tA man\0 sleeps.\tHe sleeps.\n' >"$tmp/bad/snli_1.0_dev.tsv"
want="snli_1.0_dev.tsv:2: a NUL byte at byte 14 of the line"; expect 1 "a NUL byte in a TSV premise: refused by file and line" "$GF" data stats --corpus "$tmp/bad"
rm "$tmp/bad/snli_1.0_dev.tsv"
printf '{"gold_label": "neutral", "sentence1": "A man\\u0000 sleeps.", "sentence2": "b"}\n' >"$tmp/bad/snli_1.0_dev.jsonl"
want='snli_1.0_dev.jsonl:1: a NUL character \(\\u0000\)'; expect 1 "a \\u0000 in a jsonl sentence: refused by file and line" "$GF" data stats --corpus "$tmp/bad"
printf '{"gold_label": "neutral", "sentence1": "a", "sentence2": "b"}\n{"gold_label": "neutral", "sentence1": "caf\xe9", "sentence2": "b"}\n' >"$tmp/bad/snli_1.0_dev.jsonl"
want="snli_1.0_dev.jsonl:2: invalid UTF-8 in the premise at byte 4 \(0xE9\)"; expect 1 "invalid UTF-8: by file and line" "$GF" data stats --corpus "$tmp/bad"
printf '\xef\xbb\xbf\n{"gold_label": "neutral", "sentence1": "a", "sentence2": "b"}\n' >"$tmp/bad/snli_1.0_dev.jsonl"
"$GF" data stats --corpus "$tmp/bad" --json >"$tmp/out" 2>"$tmp/err"
grep -q '"dev":{[^}]*"format":"jsonl","rows":1,"pairs":1' "$tmp/out" && pass "a byte order mark and a blank first line: the jsonl is read" \
    || fail "BOM and blank line: $(cat "$tmp/out" "$tmp/err")"
rm "$tmp/bad/snli_1.0_dev.jsonl"
printf '\xef\xbb\xbfneutral\ta\tb\nneutral\t\xe3\x80\x80\tb\nneutral\ta\t\xc2\xa0\n' >"$tmp/bad/snli_1.0_dev.tsv"
"$GF" data stats --corpus "$tmp/bad" --json >"$tmp/out" 2>"$tmp/err"
grep -q '"dev":{[^}]*"format":"tsv","rows":3,"pairs":1,[^}]*"empty":2' "$tmp/out" \
    && pass "a byte order mark in a TSV is skipped; a sentence of U+3000 or U+00A0 alone is empty, dropped and counted" \
    || fail "BOM TSV, Unicode whitespace: $(cat "$tmp/out" "$tmp/err")"
printf 'neutral\xc2\xa0\ta\tb\n' >"$tmp/bad/snli_1.0_dev.tsv"
want='unknown gold label "neutral\\xC2\\xA0"'; expect 1 "an unknown label shows its invisible bytes" "$GF" data stats --corpus "$tmp/bad"
rm "$tmp/bad/snli_1.0_dev.tsv"
want="no dev split: no snli_1.0_dev.jsonl, .jsonl.xz, .txt, .txt.xz, .tsv or .tsv.xz"; expect 1 "a folder without dev: the SNLI split is missing (not the LM reader)" "$GF" data stats --corpus "$tmp/bad"
mkfifo "$tmp/bad/snli_1.0_dev.jsonl"
want="snli_1.0_dev.jsonl is a FIFO"; expect 1 "a FIFO where a split should be: said, without waiting" timeout 20 "$GF" data stats --corpus "$tmp/bad"
rm "$tmp/bad/snli_1.0_dev.jsonl"; mkdir "$tmp/bad/snli_1.0_dev.jsonl"
want="snli_1.0_dev.jsonl is a directory"; expect 1 "a directory where a split should be" "$GF" data stats --corpus "$tmp/bad"
rmdir "$tmp/bad/snli_1.0_dev.jsonl"; ln -s snli_1.0_dev.jsonl "$tmp/bad/snli_1.0_dev.jsonl"
want="snli_1.0_dev.jsonl is a symbolic link loop"; expect 1 "a symlink loop where a split should be" "$GF" data stats --corpus "$tmp/bad"
rm "$tmp/bad/snli_1.0_dev.jsonl"
printf 'neutral\ta\tb\n' >"$tmp/bad/snli_1.0_dev.tsv"
printf '{"gold_label": "neutral", "sentence1": "c", "sentence2": "d"}\n' >"$tmp/bad/snli_1.0_dev.jsonl"
want="snli_1.0_dev.jsonl and .*snli_1.0_dev.tsv are both there; expected one file for the dev split: which to read is not clear"
expect 1 "a folder with snli_1.0_dev.jsonl and snli_1.0_dev.tsv: refused, naming both" "$GF" data stats --corpus "$tmp/bad"
xz -k "$tmp/bad/snli_1.0_dev.tsv" && rm "$tmp/bad/snli_1.0_dev.jsonl"
want="snli_1.0_dev.tsv and .*snli_1.0_dev.tsv.xz are both there"; expect 1 "... and snli_1.0_dev.tsv with snli_1.0_dev.tsv.xz" "$GF" data stats --corpus "$tmp/bad"
rm "$tmp/bad/snli_1.0_dev.tsv" "$tmp/bad/snli_1.0_dev.tsv.xz"
# an .xz of ~180 KB holding 1,400 pairs with a 900 KB premise each (1.2 GB): refused at its first line,
# whatever the memory limit; pairs of 40 KB sentences (56 MB): GRASSFLOW_MAX_TEXT bounds what is kept
bomb() { # FILE SENTENCE-BYTES
    $PY - "$1" "$2" <<'PYEOF'
import lzma, sys
row = ("neutral\t" + "a " * (int(sys.argv[2]) // 2) + "\tb\n").encode()
with lzma.open(sys.argv[1], "wb", preset=9) as f:
    for _ in range(1400): f.write(row)
PYEOF
}
bomb "$tmp/bad/snli_1.0_dev.tsv.xz" 900000
want="snli_1.0_dev.tsv.xz:1: the premise is 900000 bytes long; a sentence of a pair may be at most 65536 bytes"
expect 1 "an SNLI .xz of $(stat -c %s "$tmp/bad/snli_1.0_dev.tsv.xz") bytes with 900 KB sentences (1.2 GB): refused at its first line" "$GF" data stats --corpus "$tmp/bad"
bomb "$tmp/bad/snli_1.0_dev.tsv.xz" 40000
want="snli_1.0_dev.tsv.xz:250: the pairs kept so far \(250, .*pass the 10000000 bytes one file's pairs may take"
expect 1 "GRASSFLOW_MAX_TEXT bounds an SNLI file (56 MB of pairs stop at 10 MB)" env GRASSFLOW_MAX_TEXT=10000000 "$GF" data stats --corpus "$tmp/bad"
rm "$tmp/bad/snli_1.0_dev.tsv.xz"
printf -- '-\ta\tb\n-\tc\td\n' >"$tmp/bad/snli_1.0_dev.tsv"
want="the snli dev split \(.*snli_1.0_dev.tsv\) has no pair to use \(rows 2: labelled - for no consensus 2"
expect 1 "a split whose rows are all -: named, file and split" "$GF" train --task snli --model grassmann-tiny --corpus "$tmp/bad" --steps 1 --out "$tmp/dash"

echo "snli: a synthetic full training file streams"
if [ "$asan" = 1 ]; then
    echo "  skip  (a 550,152-pair file under AddressSanitizer takes minutes)"
else
    mkdir -p "$tmp/full"
    cp data/snli/snli_1.0_dev.tsv.xz data/snli/snli_1.0_test.tsv.xz "$tmp/full/"
    $PY - data/snli/snli_1.0_train_0.01.tsv.xz "$tmp/full/snli_1.0_train.jsonl" <<'PYEOF'
import json, lzma, random, sys
rows = [l.rstrip("\n").split("\t") for l in lzma.open(sys.argv[1], "rt", encoding="utf-8")]
r = random.Random(1)
with open(sys.argv[2], "w", encoding="utf-8") as f:
    for i in range(550152):
        lab, s1, s2 = rows[r.randrange(len(rows))]
        p1, p2 = "( " + " ( ".join(s1.split()) + " )", "( " + " ( ".join(s2.split()) + " )"
        f.write(json.dumps({"annotator_labels": [lab], "captionID": f"{i}.jpg#0", "gold_label": lab, "pairID": f"{i}r",
                            "sentence1": s1, "sentence1_binary_parse": p1, "sentence1_parse": "(ROOT " + p1 + ")",
                            "sentence2": s2, "sentence2_binary_parse": p2, "sentence2_parse": "(ROOT " + p2 + ")"}) + "\n")
PYEOF
    mb=$(( $(stat -c %s "$tmp/full/snli_1.0_train.jsonl") / 1048576 ))
    /usr/bin/time -f "%e %M" -o "$tmp/time" "$GF" data stats --corpus "$tmp/full" --json >"$tmp/out" 2>"$tmp/err"
    rc=$?
    read -r secs kb <"$tmp/time"
    if [ $rc = 0 ] && grep -q '"train":{[^}]*"rows":550152' "$tmp/out" && [ "$kb" -lt 262144 ]; then
        pass "550,152 pairs from a $mb MiB jsonl in $secs s, peak memory $((kb / 1024)) MiB (under 256)"
    else
        fail "full-size train: exit $rc, $secs s, $((kb / 1024)) MiB: $(head -c 300 "$tmp/err")"
    fi
fi

echo "snli: train and eval"
# a small bidirectional Grassmann classifier from token embeddings (no backbone), 2 epochs of the 1% sample;
# under the sanitizers (10x slower) a few steps, which test the same plumbing but not what it learns
if [ "$asan" = 1 ]; then recipe=(--steps 24 --eval-every 12); stop=18; else recipe=(--epochs 2 --eval-every 100); stop=150; fi
"$GF" train --task snli --model grassmann-tiny --corpus snli "${recipe[@]}" --batch 32 --lr 1e-3 \
    --out "$tmp/run" >"$tmp/out" 2>"$tmp/err"
rc=$?
acc=$(sed -n 's/.*dev accuracy \([0-9.]*\).*/\1/p' "$tmp/out")
if [ "$asan" = 1 ] && [ $rc = 0 ] && [ -n "$acc" ]; then
    pass "grassmann-tiny, 24 steps: trained, dev accuracy $acc"
elif [ $rc = 0 ] && [ -n "$acc" ] && $PY -c "import sys; sys.exit(not float('$acc') > 0.38)"; then
    pass "grassmann-tiny, 2 epochs of the 1% sample: dev accuracy $acc, above the majority class (3,329 / 9,842 = 0.338)"
else
    fail "snli training: exit $rc, dev accuracy '$acc': $(tail -c 300 "$tmp/err")"
fi
grep -q "the model is set to vocab_size=30522 head.kind=classify head.n_classes=3 direction=bidirectional segments=2" "$tmp/err" \
    && pass "an LM preset becomes a bidirectional 3-way pair classifier, and says so" || fail "no note of the config change"
"$GF" eval --ckpt "$tmp/run/best.safetensors" --corpus snli --split dev --json >"$tmp/eval.json" 2>"$tmp/err"
$PY - "$tmp/eval.json" "$acc" <<'PYEOF' && pass "eval --json: the training run's dev accuracy, a confusion matrix that sums to 9,842 pairs" || fail "eval: $(cat "$tmp/eval.json" "$tmp/err")"
import json, sys
e = json.load(open(sys.argv[1]))
conf = e["confusion"]
assert sum(map(sum, conf)) == e["pairs"] == 9842, e
assert abs(sum(conf[i][i] for i in range(3)) / 9842 - e["accuracy"]) < 1e-12
assert abs(e["accuracy"] - float(sys.argv[2])) < 5e-5, (e["accuracy"], sys.argv[2])
assert set(e["per_class"]) == {"entailment", "neutral", "contradiction"}
PYEOF
"$GF" train --task snli --model grassmann-tiny --corpus snli "${recipe[@]}" --batch 32 --lr 1e-3 \
    --out "$tmp/cut" --stop-at $stop >/dev/null 2>&1 || fail "snli: the run to stop at step $stop failed"
stopped_at "$tmp/cut" "$stop"
"$GF" train --resume "$tmp/cut" >/dev/null 2>"$tmp/err"
$PY - "$tmp/run" "$tmp/cut" <<'PYEOF' && pass "stopped at step $stop and resumed: the same last and best weights, bit for bit" || fail "snli resume differs"
import json, struct, sys
def t(p):
    b = open(p, "rb").read(); n = struct.unpack("<Q", b[:8])[0]; h = json.loads(b[8:8 + n]); h.pop("__metadata__")
    return {k: b[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]] for k, v in h.items()}
sys.exit(any(t(f"{sys.argv[1]}/{f}.safetensors") != t(f"{sys.argv[2]}/{f}.safetensors") for f in ("last", "best")))
PYEOF
"$GF" features --ckpt "$tmp/run/best.safetensors" --text "A man sleeps." --hypothesis "Yes." --json >"$tmp/f.json" 2>"$tmp/err"
"$GF" features --ckpt "$tmp/run/best.safetensors" --text "A man sleeps." --json >"$tmp/f1.json" 2>>"$tmp/err"
$PY - "$tmp/f.json" "$tmp/f1.json" <<'PYEOF' && pass "features: a pair's ids as BERT reads it, one finite row of 32 per token; one text is [CLS] text [SEP]" || fail "features: $(cat "$tmp/err")"
import json, math, sys
f, f1 = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert f["ids"] == [101, 1037, 2158, 25126, 1012, 102, 2748, 1012, 102], f["ids"]  # a man sleeps . / yes .
assert len(f["hidden"]) == 9 and all(len(r) == 32 and all(math.isfinite(x) for x in r) for r in f["hidden"])
assert f1["ids"] == [101, 1037, 2158, 25126, 1012, 102] and len(f1["hidden"]) == 6
assert f1["hidden"][0] != f["hidden"][0]  # bidirectional: the hypothesis changes the [CLS] state
PYEOF
mkdir -p "$tmp/testonly"
cp data/snli/snli_1.0_test.tsv.xz "$tmp/testonly/"
printf 'not an snli row\n' >"$tmp/testonly/snli_1.0_train.tsv"
mkdir "$tmp/testonly/snli_1.0_dev.tsv"
"$GF" eval --ckpt "$tmp/run/best.safetensors" --corpus "$tmp/testonly" --split test --json >"$tmp/out" 2>"$tmp/err" \
    && grep -q '"pairs":9824' "$tmp/out" && pass "eval --split test reads the test file alone (a bad train file, a directory for dev)" \
    || fail "eval --split test: $(cat "$tmp/out" "$tmp/err")"
"$GF" init --model grassmann-tiny --set task=classify --set head.n_classes=4096 --set vocab_size=30522 --out "$tmp/c4096.safetensors" >/dev/null
want="needs the classify head with n_classes 3"; expect 1 "eval of a 4096-class model: refused before any C x C matrix" "$GF" eval --ckpt "$tmp/c4096.safetensors" --task snli --corpus snli --split dev
want='"head.n_classes" is 1048576; expected an integer in \[2, 4096\]'; expect 2 "n_classes 2^20: refused by the config" "$GF" init --model grassmann-tiny --set task=classify --set head.n_classes=1048576 --out "$tmp/x.safetensors"
want="--ckpt FILE and --text TEXT are required"; expect 2 "features without --text" "$GF" features --ckpt "$tmp/run/best.safetensors"
"$GF" init --model grassmann-tiny --out "$tmp/lm.safetensors" >/dev/null
want="is a language model; it predicts tokens, not labels"; expect 1 "eval --task snli of a language model" "$GF" eval --ckpt "$tmp/lm.safetensors" --corpus snli --task snli
want="--tokenizer char: sentence pairs are read as BERT reads them"; expect 1 "train --task snli with a char tokenizer" "$GF" train --task snli --model grassmann-tiny --corpus snli --tokenizer char --steps 1 --out "$tmp/x"
want="--task nli is not a task; the tasks are lm"; expect 2 "an unknown --task" "$GF" train --task nli --model grassmann-tiny --corpus snli --out "$tmp/x"
want="classify head has n_classes 2; SNLI has 3 labels"; expect 1 "a classifier of 2 classes on 3 labels" "$GF" train --task snli --model grassmann-tiny --set task=classify --set head.n_classes=2 --corpus snli --steps 1 --out "$tmp/x"

echo "snli: a head on a pretrained backbone"
# a WordPiece language model (a few steps: only the plumbing is tested here) as the backbone of a small head;
# trained with label smoothing, which its classifiers must not inherit (a loss setting, not architecture)
"$GF" train --model grassmann-tiny --corpus tinyshakespeare --tokenizer wordpiece:data/bert-base-uncased/vocab.txt \
    --steps 3 --batch 4 --seq-len 32 --set max_len=128 --set label_smoothing=0.1 --eval-every 0 --out "$tmp/lm" >/dev/null 2>&1 || fail "backbone LM"
printf '{"name": "head", "d_model": 16, "d_ff": 32, "n_layer": 1, "direction": "bidirectional", "layers": [{"mixer": "grassmann", "rank": 4, "offsets": [1, 2], "window": 8}]}' >"$tmp/head.json"
mkdir -p "$tmp/snli64" # the first 64 pairs of each split: 16 steps of 8 go through the training pairs twice
for s in train_0.01 dev test; do xz -dc "data/snli/snli_1.0_$s.tsv.xz" | head -64 >"$tmp/snli64/snli_1.0_${s%_0.01}.tsv"; done
bb() { "$GF" train --task snli --backbone "$tmp/lm/best.safetensors" --head "$tmp/head.json" --corpus "$tmp/snli64" \
    --steps 16 --batch 8 --eval-every 8 "$@"; }
bb --freeze-backbone --out "$tmp/bb" >"$tmp/out" 2>"$tmp/err" || fail "head on a frozen backbone: $(tail -c 300 "$tmp/err")"
bb --freeze-backbone --out "$tmp/bbcut" --stop-at 11 >/dev/null 2>&1 || fail "frozen backbone: the run to stop at step 11 failed"
stopped_at "$tmp/bbcut" 11
"$GF" train --resume "$tmp/bbcut" >/dev/null 2>"$tmp/err2" || fail "resume on a frozen backbone: $(tail -c 300 "$tmp/err2")"
$PY - "$tmp/lm/best.safetensors" "$tmp/bb" "$tmp/bbcut" <<'PYEOF' && pass "frozen backbone: its blocks and embeddings unchanged, the head trained; stopped and resumed: the same weights" || fail "frozen backbone run"
import json, struct, sys
def t(p):
    b = open(p, "rb").read(); n = struct.unpack("<Q", b[:8])[0]; h = json.loads(b[8:8 + n]); h.pop("__metadata__")
    return {k: b[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]] for k, v in h.items()}
lm, run, cut = t(sys.argv[1]), t(sys.argv[2] + "/last.safetensors"), t(sys.argv[3] + "/last.safetensors")
body = [k for k in lm if k.startswith(("tok_emb.", "pos_emb.", "blocks."))]
assert body and all(run[k] == lm[k] for k in body), "the backbone moved"
init = t(sys.argv[2] + "/best.safetensors")
assert any(k.startswith("head.") for k in run) and "cls_head.weight" in run
assert run == cut, [k for k in run if run[k] != cut.get(k)][:3]
PYEOF
$PY - "$tmp/lm/best.safetensors" "$tmp/bb/last.safetensors" <<'PYEOF' && pass "the backbone's label_smoothing stays with it: the classifier's config has none" || fail "a classifier inherited its backbone's label smoothing"
import json, struct, sys
def cfg(p):
    b = open(p, "rb").read(); n = struct.unpack("<Q", b[:8])[0]
    return json.loads(json.loads(b[8:8 + n])["__metadata__"]["config"])
assert cfg(sys.argv[1]).get("label_smoothing") == 0.1 and "label_smoothing" not in cfg(sys.argv[2])
PYEOF
grep -q "tensors from the backbone .*, frozen" "$tmp/err" && pass "the run says what it took from the backbone" || fail "no backbone note: $(head -c 300 "$tmp/err")"
grep "the frozen backbone's output, computed once per example and kept: train [0-9.]* MiB, dev [0-9.]* MiB; run at every step: none" \
    "$tmp/err" >/dev/null && pass "a frozen backbone runs once per example (its output kept), and says so" \
    || fail "no feature cache: $(head -c 800 "$tmp/err")"
bb --freeze-backbone --no-feature-cache --out "$tmp/bbnc" >"$tmp/outnc" 2>"$tmp/errnc" || fail "--no-feature-cache: $(tail -c 300 "$tmp/errnc")"
grep "computed once per example" "$tmp/errnc" >/dev/null && fail "--no-feature-cache kept the features"
$PY - "$tmp/bb/last.safetensors" "$tmp/bbnc/last.safetensors" <<'PYEOF' && pass "kept or run every step: the same weights after 16 steps (within 1e-6)" || fail "the feature cache changes training"
import json, struct, sys
import numpy as np
def t(p):
    b = open(p, "rb").read(); n = struct.unpack("<Q", b[:8])[0]; h = json.loads(b[8:8 + n]); h.pop("__metadata__")
    return {k: np.frombuffer(b[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]], np.float32) for k, v in h.items()}
a, b = t(sys.argv[1]), t(sys.argv[2])
assert a.keys() == b.keys() and max(float(np.abs(a[k] - b[k]).max()) for k in a) < 1e-6
PYEOF
acc=$(sed -n 's/.*dev accuracy \([0-9.]*\).*/\1/p' "$tmp/out")
"$GF" eval --ckpt "$tmp/bb/best.safetensors" --corpus "$tmp/snli64" --split dev --batch 8 --json >"$tmp/eval.json" 2>"$tmp/err"
$PY -c "import json, sys; sys.exit(not abs(json.load(open('$tmp/eval.json'))['accuracy'] - float('$acc')) < 5e-5)" \
    && pass "eval of the best checkpoint: the dev accuracy training measured with the kept features ($acc)" \
    || fail "eval $(cat "$tmp/eval.json") against training's $acc"
want="--no-feature-cache goes with --freeze-backbone"; expect 2 "--no-feature-cache without a frozen backbone" bb --no-feature-cache --out "$tmp/x"
bb --freeze-backbone --steps 4 --eval-every 2 --out "$tmp/bbshort" >/dev/null 2>"$tmp/err" || fail "a short frozen run: $(tail -c 300 "$tmp/err")"
grep "kept: dev [0-9.]* MiB; run at every step: train (a split seen fewer than twice" "$tmp/err" >/dev/null \
    && pass "a run that sees its training pairs once does not keep them" || fail "short run: $(head -c 800 "$tmp/err")"
want="--backbone CKPT and --head FILE go together"; expect 2 "--backbone without --head" "$GF" train --task snli --backbone "$tmp/lm/best.safetensors" --corpus snli --out "$tmp/x"
want="drop --model"; expect 2 "--backbone with --model" bb --model grassmann-tiny --out "$tmp/x"
printf '[1, 2]' >"$tmp/badhead.json"
want="badhead.json: not a JSON object; expected one stack"; expect 1 "a head file that is not a stack" "$GF" train --task snli --backbone "$tmp/lm/best.safetensors" --head "$tmp/badhead.json" --corpus snli --out "$tmp/x"
# a head stack named like the model's own tensors would be frozen (and copied into) with the backbone
for name in tok_emb pos_emb seg_emb emb_ln in_proj blocks ln_f cls_head; do
    sed "s/\"name\": \"head\"/\"name\": \"$name\"/" "$tmp/head.json" >"$tmp/head-$name.json"
    want="\"stacks\"\[0\] is named \"$name\", (a name the model's own tensors use|as the classify head's tensor cls_head.weight begins)"
    expect 1 "a head stack named $name is refused" bb --head "$tmp/head-$name.json" --freeze-backbone --out "$tmp/x"
done

want="badhead.json: not a JSON object"; expect 1 "compare --backbone checks every head before training any" "$GF" compare --task snli --backbone "$tmp/lm/best.safetensors" --models "$tmp/head.json,$tmp/badhead.json" --corpus snli --out "$tmp/cmp"
[ ! -e "$tmp/cmp" ] && pass "... and creates nothing" || fail "compare left $tmp/cmp behind"

[ "$fails" -eq 0 ] && echo "snli: all passed" || { echo "snli: $fails FAILED"; exit 1; }
