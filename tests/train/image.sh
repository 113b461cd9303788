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
expect 0 "--patch 7: 16 patches of 49" "$GF" train --task image --model transformer-tiny --corpus fashion-mnist-sample \
    --patch 7 --steps 2 --eval-every 0 --out "$tmp/p7"
grep -q 'each 16 patches of 7 x 7' "$tmp/err" && pass "... read as 16 patches" || fail "--patch 7: $(grep -m1 'train images' "$tmp/err")"

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
want='patch 5 must divide both sides' expect 1 "a patch that does not divide 28" \
    "$GF" train --task image --model transformer-tiny --corpus fashion-mnist-sample --patch 5 --steps 1 --out "$tmp/x"
want='takes no tokenizer' expect 1 "--tokenizer is refused" \
    "$GF" train --task image --model transformer-tiny --corpus fashion-mnist-sample --tokenizer char --steps 1 --out "$tmp/x"
[ ! -e "$tmp/x" ] || [ -z "$(ls -A "$tmp/x")" ] && pass "no refused run left files behind" || fail "refused runs left: $(ls "$tmp/x")"
[ "$fails" -eq 0 ] || { echo "image: $fails FAILED"; exit 1; }
echo "image: all passed"
