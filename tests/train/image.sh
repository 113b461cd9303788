#!/usr/bin/env bash
# The image task (issue 53, src/tasks/image/image_task.c) end to end on the sample grassflow ships
# (data/fashion-mnist): a tiny model learns (validation accuracy well above chance's 10%), eval scores and
# explains it (per class, a confusion matrix), and the data a user may give is refused with a message naming
# the file and what is wrong: a missing folder or file, a truncated or damaged IDX file, images and labels that
# disagree, a patch that does not divide the image, a tokenizer.
#   bash tests/train/image.sh [BUILD]
set -uo pipefail
cd "$(dirname "$0")/../.."
B=${1:-build}
GF=$(realpath "$B/grassflow")
tmp=$(mktemp -d /tmp/grassflow-image-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. tests/lib.sh
export OMP_NUM_THREADS=1

echo "image: a tiny model learns on the shipped sample"
expect 0 "train --task image on fashion-mnist-sample" "$GF" train --task image --model transformer-tiny \
    --corpus fashion-mnist-sample --steps 300 --batch 32 --lr 3e-3 --eval-every 300 --out "$tmp/t"
grep -q '1800 train images (valid 200, test 500) of 28 x 28, each 49 patches of 4 x 4, 10 classes' "$tmp/err" \
    && pass "... the split: every tenth training image is valid; 49 patches of 4 x 4" || fail "the data line: $(grep -m1 'train images' "$tmp/err")"
acc=$(grep -o 'val acc [0-9.]*' "$tmp/err" | tail -1 | cut -d' ' -f3)
awk -v a="$acc" 'BEGIN { exit !(a > 0.4) }' && pass "validation accuracy $acc (> 0.4; chance 0.1)" || fail "validation accuracy $acc"
expect 0 "eval on the test split" "$GF" eval --ckpt "$tmp/t/best.safetensors" --corpus fashion-mnist-sample --split test
grep -q 'fashion-mnist-sample test: images 500  accuracy' "$tmp/out" && grep -q '^  ankle-boot ' "$tmp/out" \
    && pass "... 500 images, the classes by name" || fail "eval printed: $(head -c 400 "$tmp/out")"
"$GF" eval --ckpt "$tmp/t/best.safetensors" --corpus fashion-mnist-sample --split test --batch 256 --json \
    | /usr/bin/python3 -c 'import json, sys; d = json.load(sys.stdin)
assert d["images"] == 500 and d["seconds"] > 0 and abs(d["images_per_s"] * d["seconds"] - 500) < 1e-6 * 500, d' \
    && pass "... --json times the forward passes: images_per_s" || fail "eval --json's timing"
expect 0 "--patch 7: 16 patches of 49" "$GF" train --task image --model transformer-tiny --corpus fashion-mnist-sample \
    --patch 7 --steps 2 --eval-every 0 --out "$tmp/p7"
grep -q 'each 16 patches of 7 x 7' "$tmp/err" && pass "... read as 16 patches" || fail "--patch 7: $(grep -m1 'train images' "$tmp/err")"
expect 0 "--cls: a [CLS] position after the 49 patches" "$GF" train --task image --model transformer-tiny \
    --corpus fashion-mnist-sample --cls true --steps 2 --eval-every 0 --out "$tmp/cls"
"$GF" info --ckpt "$tmp/cls/last.safetensors" --json | /usr/bin/python3 -c 'import json, sys; d = json.load(sys.stdin)
assert d["config"]["max_len"] == 50 and d["config"]["head"]["pool"] == "last" and d["recipe"]["cls"], d["config"]' \
    && pass "... 50 learned positions, pooled last, recorded" || fail "--cls: the checkpoint's config"
expect 0 "... eval rebuilds it" "$GF" eval --ckpt "$tmp/cls/last.safetensors" --corpus fashion-mnist-sample --split test

echo "image: augmentation, resumed bit for bit"
AUG=(train --task image --model grassmann-tiny --corpus fashion-mnist-sample --crop 2 --flip true --steps 16 --batch 16
     --eval-every 8 --seed 5)
"$GF" "${AUG[@]}" --out "$tmp/aa" >/dev/null 2>&1 || fail "the uninterrupted augmented run"
expect 0 "an augmented run stopped at step 7" "$GF" "${AUG[@]}" --out "$tmp/ab" --stop-at 7
stopped_at "$tmp/ab" 7
expect 0 "... resumed to the end" "$GF" train --resume "$tmp/ab"
"$GF" train --task image --model grassmann-tiny --corpus fashion-mnist-sample --steps 16 --batch 16 --eval-every 8 --seed 5 \
    --out "$tmp/an" >/dev/null 2>&1 || fail "the run without augmentation"
/usr/bin/python3 - "$tmp" <<'PYEOF' && pass "... the same bytes as the uninterrupted run; another run without augmentation differs" \
    || fail "augmented resume"
import sys
sys.path.insert(0, "tests/parity/torch_ref")
import st_io
t = sys.argv[1]
a, _ = st_io.read(t + "/aa/last.safetensors"); b, _ = st_io.read(t + "/ab/last.safetensors"); n, _ = st_io.read(t + "/an/last.safetensors")
assert all(a[k].tobytes() == b[k].tobytes() for k in a), "resumed differs"
assert any(a[k].tobytes() != n[k].tobytes() for k in a), "augmentation changed nothing"
PYEOF

echo "image: predict on a user's own images (PGM, PNG, a list of them)"
O=$tmp/own
mkdir -p "$O"
/usr/bin/python3 - "$O" <<'PYEOF' || fail "writing the test images"
import gzip, struct, sys, zlib
o = sys.argv[1]
raw = gzip.open("data/fashion-mnist/t10k-images-idx3-ubyte.gz").read()
img = [raw[16 + i * 784:16 + (i + 1) * 784] for i in range(3)]
open(o + "/a.pgm", "wb").write(b"P5\n# test image 0\n28 28\n255\n" + img[0])
open(o + "/b.pgm", "wb").write(b"P2\n28 28\n255\n" + " ".join(str(v) for v in img[1]).encode() + b"\n")
def png(path, w, h, rows, ct):
    chunk = lambda t, d: struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xffffffff)
    body = zlib.compress(b"".join(b"\0" + r for r in rows))
    open(path, "wb").write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, ct, 0, 0, 0))
                           + chunk(b"IDAT", body) + chunk(b"IEND", b""))
png(o + "/c.png", 56, 56, [bytes(img[2][(i // 2) * 28 + j // 2] for j in range(56)) for i in range(56)], 0)  # 2x
png(o + "/colour.png", 4, 4, [bytes([10, 20, 30] * 4)] * 4, 2)
open(o + "/short.pgm", "wb").write(b"P5 28 28 255\n" + img[0][:100])
open(o + "/list.txt", "w").write("a.pgm\nb.pgm\n\nc.png\n")
open(o + "/bad.txt", "w").write("a.pgm\n\ncolour.png\n")
PYEOF
# the test split's first three images: ankle-boot, pullover, trouser; the model of the first section is weak, so
# the check is that each image is read as the test split's own (the same probabilities as eval's first rows)
expect 0 "predict on a list of a P5 PGM, a P2 PGM and a 56 x 56 PNG (resized to 28)" "$GF" predict --ckpt "$tmp/t/best.safetensors" \
    --corpus "$O/list.txt" --json
cp "$tmp/out" "$tmp/own.jsonl"
expect 0 "... and the test split's first three" "$GF" predict --ckpt "$tmp/t/best.safetensors" --corpus fashion-mnist-sample \
    --split test --limit 3 --json
/usr/bin/python3 - "$tmp/own.jsonl" "$tmp/out" <<'PYEOF' && pass "... the same probabilities, image by image (the PNG's 2 x 2 blocks averaged back)" \
    || fail "predict on own images: $(cat "$tmp/own.jsonl")"
import json, sys
a = [json.loads(l) for l in open(sys.argv[1])]
b = [json.loads(l) for l in open(sys.argv[2])]
assert len(a) == 3 and len(b) == 3, (a, b)
for x, y in zip(a, b):
    assert x["gold"] is None and y["gold"] is not None, (x, y)
    assert all(abs(x["probs"][k] - y["probs"][k]) < 1e-6 for k in x["probs"]), (x, y)
PYEOF
want='colour.png: a colour PNG; the model reads greyscale images' expect 1 "a colour PNG is refused" \
    "$GF" predict --ckpt "$tmp/t/best.safetensors" --corpus "$O/colour.png"
want='short.pgm: truncated: its PGM header says 28 x 28 pixels of 1 byte, the file holds 100 bytes' \
    expect 1 "a truncated PGM is named" "$GF" predict --ckpt "$tmp/t/best.safetensors" --corpus "$O/short.pgm"
want='bad.txt:3: .*colour.png: a colour PNG' expect 1 "a list names the line of an image it refuses" \
    "$GF" predict --ckpt "$tmp/t/best.safetensors" --corpus "$O/bad.txt"
printf 'not a png' >"$O/fake.png"
want='fake.png: neither a PNG nor a greyscale PGM' expect 1 "a file that is no image" \
    "$GF" predict --ckpt "$tmp/t/best.safetensors" --corpus "$O/fake.png"

echo "image: which grid offsets a classifier uses (scripts/offset_study.sh)"
expect 0 "a grid Grassmann classifier" "$GF" train --task image --model grassmann-tiny --set grid=7 --set offsets=1,7,8 \
    --corpus fashion-mnist-sample --steps 30 --eval-every 0 --out "$tmp/grid"
GRASSFLOW=$GF bash scripts/offset_study.sh --ckpt "$tmp/grid/best.safetensors" --corpus fashion-mnist-sample --split test \
    --out "$tmp/os" --per-layer >"$tmp/os.out" 2>&1 || fail "offset_study.sh on a classifier: $(tail -3 "$tmp/os.out")"
grep -q '^| evaluation | examples | loss | accuracy |' "$tmp/os/table.md" && [ "$(grep -c '^| layer . drop ' "$tmp/os/table.md")" = 6 ] \
    && pass "... the table: loss and accuracy, every offset of both layers" || fail "table.md: $(head -3 "$tmp/os/table.md")"
grep -q '^D = 7 (1,+0)	every layer' "$tmp/os/offsets.tsv" && grep -q '^D = 8 (1,+1)	' "$tmp/os/offsets.tsv" \
    && pass "... offsets named by their 2-D steps" || fail "offsets.tsv: $(cat "$tmp/os/offsets.tsv")"
/usr/bin/python3 - "$tmp/os" <<'PYEOF' && pass "... neighbours.svg: each offset at its step and its mirror" || fail "neighbours.svg"
import csv, sys, xml.etree.ElementTree as ET
o = sys.argv[1]
rows = {r["name"]: r for r in csv.DictReader(open(o + "/results.tsv"), delimiter="\t")}
base = float(rows["base"]["loss"])
texts = [t.text for t in ET.parse(o + "/neighbours.svg").getroot().iter("{http://www.w3.org/2000/svg}text")]
for d in (1, 7, 8):  # each value twice (a step and its mirror)
    v = "%+.4f" % (float(rows["drop %d" % d]["loss"]) - base)
    assert texts.count(v) >= 2, (d, v, texts)
assert "patch" in texts
PYEOF

echo "image: bad data is named"
D=$tmp/mine
mkdir -p "$D"
cp data/fashion-mnist/*.gz "$D/"
want="no train-images-idx3-ubyte or train-images-idx3-ubyte.gz in $tmp/none" expect 1 "a folder without the files" \
    "$GF" train --task image --model transformer-tiny --corpus "$tmp/none" --steps 1 --out "$tmp/x"
zcat data/fashion-mnist/train-images-idx3-ubyte.gz | head -c 100000 >"$D/train-images-idx3-ubyte"
rm "$D/train-images-idx3-ubyte.gz"
want='train-images-idx3-ubyte: truncated: its IDX header says 1568000 bytes of data, the file holds 99984' \
    expect 1 "a truncated images file (plain)" "$GF" train --task image --model transformer-tiny --corpus "$D" --steps 1 --out "$tmp/x"
printf 'not an idx file at all' | gzip >"$D/train-images-idx3-ubyte.gz"
want='not an IDX file' expect 1 "a file that is no IDX (the .gz is read first)" \
    "$GF" train --task image --model transformer-tiny --corpus "$D" --steps 1 --out "$tmp/x"
cp data/fashion-mnist/train-images-idx3-ubyte.gz "$D/"
cp data/fashion-mnist/t10k-labels-idx1-ubyte.gz "$D/train-labels-idx1-ubyte.gz"
want='holds 2000 images and .*train-labels-idx1-ubyte.gz 500 labels; expected one label per image' \
    expect 1 "images and labels that disagree" "$GF" train --task image --model transformer-tiny --corpus "$D" --steps 1 --out "$tmp/x"
want='--patch 5 must divide --size 28' expect 1 "a patch that does not divide 28" \
    "$GF" train --task image --model transformer-tiny --corpus fashion-mnist-sample --patch 5 --steps 1 --out "$tmp/x"
want='takes no tokenizer' expect 1 "--tokenizer is refused" \
    "$GF" train --task image --model transformer-tiny --corpus fashion-mnist-sample --tokenizer char --steps 1 --out "$tmp/x"
[ ! -e "$tmp/x" ] || [ -z "$(ls -A "$tmp/x")" ] && pass "no refused run left files behind" || fail "refused runs left: $(ls "$tmp/x")"
[ "$fails" -eq 0 ] || { echo "image: $fails FAILED"; exit 1; }
echo "image: all passed"
