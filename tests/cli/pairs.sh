#!/usr/bin/env bash
# Scoring your own sentence pairs: eval and predict on a file of pairs (jsonl, TSV or CSV, plain or .xz), predict's
# accuracy equal to eval's, the same predictions from every form of the same pairs, a folder holding only the
# split asked for, bad files refused by file and line, and features --pieces. A classifier trained here in
# well under a second (64 pairs a split).
set -uo pipefail
BUILD=${1:-build}
GF="$BUILD/grassflow"
PY=/usr/bin/python3
tmp=$(mktemp -d /tmp/grassflow-pairs-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. tests/lib.sh

echo "pairs: a classifier on 64 pairs a split"
mkdir -p "$tmp/s64" "$tmp/devonly"
for s in train_0.01 dev test; do xz -dc "data/snli/snli_1.0_$s.tsv.xz" | head -64 >"$tmp/s64/snli_1.0_${s%_0.01}.tsv"; done
cp "$tmp/s64/snli_1.0_dev.tsv" "$tmp/devonly/"
want=; expect 0 "train --task snli (4 steps, --max-sent 8: most pairs cut)" "$GF" train --task snli --model grassmann-tiny \
    --set rank=8 --corpus "$tmp/s64" --steps 4 --batch 8 --eval-every 0 --max-sent 8 --out "$tmp/run"
C="$tmp/run/best.safetensors"

echo "pairs: one file of pairs in every form"
$PY - "$tmp" <<'PYEOF'
import json, sys
d = sys.argv[1]
rows = [l.rstrip("\n").split("\t") for l in open(d + "/s64/snli_1.0_dev.tsv")]
rows.append(["-", "A dog sleeps in the sun.", "An animal rests."])  # no gold label: predicted, not counted
num = {"entailment": 0, "neutral": 1, "contradiction": 2, "-": -1}
with open(d + "/pairs.tsv", "w") as f:
    f.writelines(f"{l}\t{p}\t{h}\n" for l, p, h in rows)
with open(d + "/snli.jsonl", "w") as f:
    f.writelines(json.dumps({"gold_label": l, "sentence1": p, "sentence2": h, "pairID": str(i)}) + "\n" for i, (l, p, h) in enumerate(rows))
with open(d + "/hf.jsonl", "w") as f:
    f.writelines(json.dumps({"premise": p, "hypothesis": h, "label": num[l]}) + "\n" for l, p, h in rows)
with open(d + "/header.tsv", "w") as f:
    f.write("premise\thypothesis\tlabel\n")
    f.writelines(f"{p}\t{h}\t{l}\n" for l, p, h in rows)
with open(d + "/unlabelled.tsv", "w") as f:
    f.writelines(f"{p}\t{h}\n" for l, p, h in rows)
with open(d + "/unlabelled.txt", "w") as f:  # the same, under a name that does not say its form
    f.writelines(f"{p}\t{h}\n" for l, p, h in rows)
# the TSV twin as CSV, as Python's csv module writes it (RFC 4180): the columns in another order, CRLF, a
# quoted comma in some sentences, a doubled quote in one; and the same under .txt, known by its header row
rows_q = [(l, p.replace(" ", ", ", 1) if i % 3 == 0 else p, h + ' "yes"' if i == 5 else h) for i, (l, p, h) in enumerate(rows)]
with open(d + "/commas.tsv", "w") as f:
    f.write("premise\thypothesis\tlabel\n")
    f.writelines(f"{p}\t{h}\t{l}\n" for l, p, h in rows_q)
import csv
for name in ("commas.csv", "commas_csv.txt"):
    with open(d + "/" + name, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["label", "hypothesis", "premise"])
        w.writerows([l, h, p] for l, p, h in rows_q)
PYEOF
xz -k "$tmp/snli.jsonl"
want="note: 1 of the 65 pairs of .*pairs.tsv have no gold label: not counted"
expect 0 "eval --corpus pairs.tsv (a file, scored whole)" "$GF" eval --ckpt "$C" --corpus "$tmp/pairs.tsv" --json
acc=$($PY -c "import json; e = json.load(open('$tmp/out')); assert e['split'] is None and e['pairs'] == 64, e; print(e['accuracy'])")
[ -n "$acc" ] && pass "... counts the 64 labelled pairs: accuracy $acc" || fail "eval of a file: $(head -c 300 "$tmp/out")"
"$GF" eval --ckpt "$C" --corpus "$tmp/s64" --split dev --json 2>/dev/null >"$tmp/dir.json"
$PY -c "import json; assert json.load(open('$tmp/dir.json'))['pairs'] == 64" && pass "... the folder's dev split holds the same 64" || fail "eval of the folder: $(cat "$tmp/dir.json")"
for f in pairs.tsv snli.jsonl snli.jsonl.xz hf.jsonl header.tsv unlabelled.tsv; do
    want=; expect 0 "predict --corpus $f" "$GF" predict --ckpt "$C" --corpus "$tmp/$f"
    cp "$tmp/out" "$tmp/pred.$f"
done
cut -f1-5 "$tmp/pred.pairs.tsv" | cmp -s - <(cut -f1-5 "$tmp/pred.unlabelled.tsv") && [ "$(cut -f6 "$tmp/pred.unlabelled.tsv" | sort -u | tr '\n' ' ')" = "- gold " ] \
    && pass "... unlabelled.tsv: the same labels and probabilities as pairs.tsv, no gold" || fail "predict unlabelled.tsv: $(head -3 "$tmp/pred.unlabelled.tsv")"
[ "$(wc -l <"$tmp/pred.pairs.tsv")" = 66 ] && pass "predict: a header row and a line per pair (65, the unlabelled one too)" || fail "predict lines: $(wc -l <"$tmp/pred.pairs.tsv")"
for f in snli.jsonl snli.jsonl.xz hf.jsonl header.tsv; do
    cmp -s "$tmp/pred.pairs.tsv" "$tmp/pred.$f" && pass "... $f: the same lines (labels, probabilities, gold) as pairs.tsv" || fail "predict $f differs from pairs.tsv: $(diff "$tmp/pred.pairs.tsv" "$tmp/pred.$f" | head -3)"
done
grep -qE '"[^",]+, ' "$tmp/commas.csv" && grep -q '""yes""' "$tmp/commas.csv" && pass "commas.csv holds quoted commas and a doubled quote" || fail "commas.csv: $(head -3 "$tmp/commas.csv")"
for f in commas.tsv commas.csv commas_csv.txt unlabelled.txt; do
    want=; expect 0 "predict --corpus $f" "$GF" predict --ckpt "$C" --corpus "$tmp/$f"
    cp "$tmp/out" "$tmp/pred.$f"
done
for f in commas.csv commas_csv.txt; do
    cmp -s "$tmp/pred.commas.tsv" "$tmp/pred.$f" && pass "... $f: the same lines as its TSV twin" || fail "predict $f differs from commas.tsv: $(diff "$tmp/pred.commas.tsv" "$tmp/pred.$f" | head -3)"
done
cmp -s "$tmp/pred.unlabelled.tsv" "$tmp/pred.unlabelled.txt" && pass "... unlabelled.txt (premise<TAB>hypothesis, no header): the lines of unlabelled.tsv" || fail "predict unlabelled.txt differs from unlabelled.tsv"
want=; expect 0 "eval --corpus commas.csv" "$GF" eval --ckpt "$C" --corpus "$tmp/commas.csv" --json
untimed() { /usr/bin/python3 -c 'import json, sys # eval --json without its timing (seconds, pairs_per_s), which varies
d = json.load(sys.stdin); [d.pop(k) for k in ("seconds", "pairs_per_s")]; print(json.dumps(d, sort_keys=True))'; }
"$GF" eval --ckpt "$C" --corpus "$tmp/commas.tsv" --json 2>/dev/null | untimed | cmp -s - <(untimed <"$tmp/out") \
    && pass "... the accuracy of its TSV twin" || fail "eval commas.csv: $(head -c 300 "$tmp/out")"
want=; expect 0 "data stats --corpus commas.csv" "$GF" data stats --corpus "$tmp/commas.csv"
grep -q "pairs *65 pairs .*\[csv-header\]" "$tmp/out" && pass "... 65 pairs, csv-header" || fail "data stats commas.csv: $(head -c 300 "$tmp/out")"
want=; expect 0 "data stats --task snli --corpus unlabelled.txt" "$GF" data stats --task snli --corpus "$tmp/unlabelled.txt"
grep -q "pairs *65 pairs .*\[tsv\]" "$tmp/out" && pass "... 65 pairs, tsv" || fail "data stats --task snli unlabelled.txt: $(head -c 300 "$tmp/out")"
"$GF" predict --ckpt "$C" --corpus "$tmp/pairs.tsv" 2>/dev/null >"$tmp/pred.txt"
$PY - "$tmp/pred.txt" "$acc" <<'PYEOF' && pass "predict: the lines whose label is their gold give eval's accuracy; each line's probabilities sum to 1" || fail "predict against eval"
import sys
lines = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
assert lines[0] == ["index", "label", "entailment", "neutral", "contradiction", "gold"], lines[0]
rows = lines[1:]
assert [int(r[0]) for r in rows] == list(range(65))
for r in rows:
    p = [float(x) for x in r[2:5]]
    assert abs(sum(p) - 1) < 2e-6, r
    assert r[1] == ["entailment", "neutral", "contradiction"][p.index(max(p))], r
gold = [r for r in rows if r[5] != "-"]
assert len(gold) == 64 and rows[64][5] == "-"
right = sum(r[1] == r[5] for r in gold)
assert right / 64 == float(sys.argv[2]), (right, sys.argv[2])
PYEOF
want=; expect 0 "predict --json --limit 3" "$GF" predict --ckpt "$C" --corpus "$tmp/snli.jsonl.xz" --json --limit 3
$PY - "$tmp/out" <<'PYEOF' && pass "... 3 JSON lines with label, probabilities, gold and the pieces read (cut to --max-sent 8)" || fail "predict --json: $(head -c 400 "$tmp/out")"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert len(rows) == 3 and [r["index"] for r in rows] == [0, 1, 2]
for r in rows:
    assert set(r["probs"]) == {"entailment", "neutral", "contradiction"} and abs(sum(r["probs"].values()) - 1) < 1e-9
    assert r["label"] == max(r["probs"], key=r["probs"].get) and r["gold"] in r["probs"]
    assert 1 <= len(r["premise_pieces"]) <= 8 and 1 <= len(r["hypothesis_pieces"]) <= 8
# "Two women are embracing while holding to go packages." cut to 8 pieces
assert rows[0]["premise_pieces"] == ["two", "women", "are", "embracing", "while", "holding", "to", "go"], rows[0]
PYEOF
"$GF" predict --ckpt "$C" --corpus "$tmp/unlabelled.tsv" --json 2>/dev/null | tail -1 | $PY -c "import json, sys; r = json.load(sys.stdin); assert r['gold'] is None and r['index'] == 64 and r['hypothesis_pieces'] == ['an', 'animal', 'rests', '.']" \
    && pass "predict --json of an unlabelled pair: gold null" || fail "predict --json unlabelled"

echo "pairs: a folder needs only the split asked for"
want=; expect 0 "eval --split dev of a folder holding only snli_1.0_dev.tsv" "$GF" eval --ckpt "$C" --corpus "$tmp/devonly" --split dev
want=; expect 0 "predict --split dev of that folder" "$GF" predict --ckpt "$C" --corpus "$tmp/devonly" --split dev
head -65 "$tmp/out" | cmp -s - <(head -65 "$tmp/pred.pairs.tsv") && pass "... the same predictions as the file" || fail "predict of the folder's dev split differs from the file's"
want="devonly: no test split: no snli_1.0_test.jsonl, .jsonl.xz, .txt, .txt.xz, .tsv or .tsv.xz"
expect 1 "eval --split test of it: the file names looked for" "$GF" eval --ckpt "$C" --corpus "$tmp/devonly" --split test

echo "pairs: what is refused"
want="--split: .*pairs.tsv is one file of examples, scored whole"
expect 2 "eval --split with a file" "$GF" eval --ckpt "$C" --corpus "$tmp/pairs.tsv" --split test
grep -q "^HINT: drop --split" "$tmp/err" && pass "... HINT: drop --split" || fail "eval --split with a file: no hint"
want="--split: .*pairs.tsv is one file of examples"; expect 2 "predict --split with a file" "$GF" predict --ckpt "$C" --corpus "$tmp/pairs.tsv" --split dev
want="unlabelled.tsv: none of its 65 pairs has a gold label"
expect 1 "eval of a file without labels" "$GF" eval --ckpt "$C" --corpus "$tmp/unlabelled.tsv"
grep -q "^HINT: grassflow predict --corpus" "$tmp/err" && pass "... HINT: grassflow predict" || fail "eval of a file without labels: no hint"
want="pairs.tsv is a file of sentence pairs: it can be scored \(grassflow eval, predict\), not trained on"
expect 1 "train on a file of pairs" "$GF" train --task snli --model grassmann-tiny --corpus "$tmp/pairs.tsv" --out "$tmp/x"
[ ! -e "$tmp/x" ] && pass "... and leaves no folder" || fail "train on a file left $tmp/x"
printf 'neutral\tA man.\tA person.\ncontradiction\tA man.\n' >"$tmp/col.tsv"
want="col.tsv:2: 2 tab-separated column\(s\); expected 3 \(label, premise, hypothesis\)"; expect 1 "a missing column" "$GF" predict --ckpt "$C" --corpus "$tmp/col.tsv"
printf 'neutral\tA man.\tA person.\nsure\tA man.\tA boy.\n' >"$tmp/lab.tsv"
want='lab.tsv:2: unknown gold label "sure"'; expect 1 "a bad label" "$GF" predict --ckpt "$C" --corpus "$tmp/lab.tsv"
printf 'A man.\tA person.\tneutral\n' >"$tmp/order.tsv"
want='order.tsv:1: unknown gold label "A man." in the first column'
expect 1 "premise, hypothesis, label without a header" "$GF" predict --ckpt "$C" --corpus "$tmp/order.tsv"
grep -q "^HINT: name the columns in a first row: premise<TAB>hypothesis<TAB>label" "$tmp/err" && pass "... the header row to add" || fail "order.tsv: no hint"
: >"$tmp/empty.jsonl"
want="empty.jsonl: the file is empty"; expect 1 "an empty file" "$GF" eval --ckpt "$C" --corpus "$tmp/empty.jsonl"
printf '{"premise": "A man.", "hypothesis": "A person.", "label": 1}\n{"premise": "A man.", "hypothesis": \n' >"$tmp/bad.jsonl"
want="bad.jsonl:2: not a JSON object"; expect 1 "wrong JSON" "$GF" predict --ckpt "$C" --corpus "$tmp/bad.jsonl"
printf '{"premise": "A man.", "label": 1}\n' >"$tmp/nohyp.jsonl"
want='nohyp.jsonl:1: no string "sentence2" \(or "hypothesis"\)'; expect 1 "a record without its hypothesis" "$GF" predict --ckpt "$C" --corpus "$tmp/nohyp.jsonl"
printf '{"gold_label": "neutral", "label": 2, "sentence1": "A man.", "sentence2": "A person."}\n' >"$tmp/both.jsonl"
want='both.jsonl:1: the record has both "gold_label" and "label"'; expect 1 "a record with both gold_label and label" "$GF" predict --ckpt "$C" --corpus "$tmp/both.jsonl"
printf 'premise\thypothesis\tsentence1\tlabel\nA man.\tA person.\tA dog.\tneutral\n' >"$tmp/two.tsv"
want='two.tsv:1: the header row names columns 1 \("premise"\) and 3 \("sentence1"\) for one field'
expect 1 "a header with two premise columns" "$GF" predict --ckpt "$C" --corpus "$tmp/two.tsv"
printf '[1,2,3]\n' >"$tmp/arr.jsonl"
want='arr.jsonl:1: an array \(the line begins "\[1,2,3\]"\), not a JSON object'; expect 1 "a .jsonl whose line is a JSON array" "$GF" predict --ckpt "$C" --corpus "$tmp/arr.jsonl"
printf 'A man sleeps, and a dog.\n' >"$tmp/prose.txt"
want="prose.txt:1: not sentence pairs in a form grassflow reads: .*expected JSON lines .*tab-separated columns .*comma-separated ones"
expect 1 "predict of a .txt in no known form: the forms there are" "$GF" predict --ckpt "$C" --corpus "$tmp/prose.txt"
grep -q "^HINT: name the file for its form" "$tmp/err" && pass "... HINT: name the file for its form" || fail "prose.txt: no hint"
printf 'premise,hypothesis\nA man.,"A person\n' >"$tmp/open.csv"
want="open.csv:2: a quoted field opens on this line and never closes"; expect 1 "a CSV quote that never closes" "$GF" predict --ckpt "$C" --corpus "$tmp/open.csv"
printf 'premise,hypothesis,sentence1\nA man.,A person.,A dog.\n' >"$tmp/two.csv"
want='two.csv:1: the header row names columns 1 \("premise"\) and 3 \("sentence1"\) for one field'
expect 1 "a CSV header with two premise columns" "$GF" predict --ckpt "$C" --corpus "$tmp/two.csv"
want="--task nope is not a task"; expect 2 "data stats --task nope" "$GF" data stats --task nope --corpus "$tmp/two.csv"
want="missing.jsonl"; expect 1 "a file that is not there" "$GF" predict --ckpt "$C" --corpus "$tmp/missing.jsonl"
# 12 KB of xz holding 79 MB of pairs (2.2 million): the line reader takes at most 1000 times an .xz's size (at least 64 MiB)
yes $'neutral\tA man sleeps.\tNobody sleeps.' | head -n 2200000 | xz -1 -T1 >"$tmp/bomb.tsv.xz"
want="bomb.tsv.xz: [0-9]+ bytes of xz decompress to more than 67108864 bytes, the most taken from them"
expect 1 "a $(stat -c %s "$tmp/bomb.tsv.xz")-byte .xz of 79 MB of pairs: refused at 64 MiB" "$GF" data stats --corpus "$tmp/bomb.tsv.xz"
want="bomb.tsv.xz: [0-9]+ bytes of xz decompress to more than"; expect 1 "... and by eval" "$GF" eval --ckpt "$C" --corpus "$tmp/bomb.tsv.xz"
# predict --limit reads what it prints: 2 pairs of the 2.2 million, even where the file's pairs may take 1 MB
want=; GRASSFLOW_MAX_TEXT=1000000 expect 0 "predict --limit 2 of it: reads the first 2 pairs alone" "$GF" predict --ckpt "$C" --corpus "$tmp/bomb.tsv.xz" --limit 2
[ "$(cut -f1,6 "$tmp/out" | tr '\t\n' ' |')" = "index gold|0 neutral|1 neutral|" ] && pass "... a header and 2 lines" || fail "predict --limit 2 of the bomb: $(head -c 300 "$tmp/out")"
want=; GRASSFLOW_MAX_TEXT=1000000 expect 0 "predict --limit 3 of a folder's dev split: its first 3 pairs" "$GF" predict --ckpt "$C" --corpus "$tmp/s64" --split dev --limit 3
cmp -s "$tmp/out" <(head -4 "$tmp/pred.pairs.tsv") && pass "... the lines of the file's first 3" || fail "predict --limit 3 of the folder: $(cat "$tmp/out")"
want="--limit expects an integer"; expect 2 "predict --limit 0" "$GF" predict --ckpt "$C" --corpus "$tmp/pairs.tsv" --limit 0
"$GF" init --model grassmann-tiny --out "$tmp/lm.safetensors" >/dev/null
want="predict: .*lm.safetensors is a language model"; expect 1 "predict with a language model" "$GF" predict --ckpt "$tmp/lm.safetensors" --corpus tinyshakespeare --tokenizer char

want=; expect 0 "predict --help" "$GF" predict --help
"$GF" predict --ckpt "$C" --corpus "$tmp/pairs.tsv" >/dev/full 2>"$tmp/err"
[ $? = 1 ] && grep -q "writing standard output: No space left on device" "$tmp/err" && pass "predict > /dev/full: exit 1, saying why" || fail "predict > /dev/full: $(head -c 300 "$tmp/err")"

echo "pairs: features --pieces"
want=; expect 0 "features --pieces" "$GF" features --ckpt "$C" --text "Kids playing" --hypothesis "children" --pieces
[ "$(awk 'NR > 1 {print $1, $2}' "$tmp/out" | tr '\n' ' ')" = '101 "[CLS]" 4268 "kids" 2652 "playing" 102 "[SEP]" 2336 "children" 102 "[SEP]" ' ] \
    && pass "... each id beside its piece" || fail "features --pieces: $(head -c 300 "$tmp/out")"
"$GF" features --ckpt "$C" --text "Kids playing" --pieces --json | $PY -c "import json, sys; o = json.load(sys.stdin); assert o['pieces'] == ['[CLS]', 'kids', 'playing', '[SEP]'] and len(o['ids']) == 4" \
    && pass "features --pieces --json: a pieces list beside ids" || fail "features --pieces --json"

if [ $fails -ne 0 ]; then echo "pairs: $fails FAILED"; exit 1; fi
echo "pairs: all passed"
