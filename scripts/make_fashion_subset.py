"""data/fashion-mnist/'s sample of Fashion-MNIST, cut from Debian's dataset-fashion-mnist (issue 53's image data;
data/README.md documents it):

    python3 scripts/make_fashion_subset.py            write data/fashion-mnist/*-ubyte.gz
    python3 scripts/make_fashion_subset.py --check    regenerate them in memory and compare with the shipped files

The inputs are /usr/share/datasets/fashion-mnist/{train,t10k}-{images-idx3,labels-idx1}-ubyte.gz of
dataset-fashion-mnist 0.0~git20200523.55506a9-1 (scripts/install-deps.sh installs it), checked by their sha256.
The sample keeps the first 2,000 training images and the first 500 test images, with their labels, unchanged,
in IDX files of the same names whose headers give the new counts, gzip-compressed with mtime 0 (so the bytes
depend only on the data and the zlib level, 9)."""
import argparse
import gzip
import hashlib
import os
import struct
import sys

SRC = "/usr/share/datasets/fashion-mnist"
SHA256 = {
    "train-images-idx3-ubyte.gz": "b0564c3eedabfbf835052cff8503ea422014ce006caf5b757f851416ee8300c7",
    "train-labels-idx1-ubyte.gz": "0ae29f65d86684f32d1b9c85147786c547b9c6aebcaf235f0400a0cce308b056",
    "t10k-images-idx3-ubyte.gz": "cc1d090a38ace84dfa1aa66e3ada7c336ef481a96936906477e6dd344da56eaa",
    "t10k-labels-idx1-ubyte.gz": "8d3605d196f4be44669e46906da9733c8131fef761fdbfec72c424d5222f1a05",
}
KEEP = {"train": 2000, "t10k": 500}
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "fashion-mnist")


def cut(name, n):
    path = os.path.join(SRC, name)
    raw = open(path, "rb").read()
    if hashlib.sha256(raw).hexdigest() != SHA256[name]:
        sys.exit("%s: not the file of dataset-fashion-mnist 0.0~git20200523.55506a9-1 (sha256 differs)" % path)
    data = gzip.decompress(raw)
    ndims = data[3]
    dims = list(struct.unpack(">%dI" % ndims, data[4:4 + 4 * ndims]))
    per = 1
    for d in dims[1:]:
        per *= d
    body = data[4 + 4 * ndims:4 + 4 * ndims + n * per]
    dims[0] = n
    out = data[:4] + struct.pack(">%dI" % ndims, *dims) + body
    return gzip.compress(out, compresslevel=9, mtime=0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    bad = 0
    for name in SHA256:
        b = cut(name, KEEP[name.split("-")[0]])
        dst = os.path.join(OUT, name)
        if a.check:
            same = os.path.exists(dst) and open(dst, "rb").read() == b
            print("%s %s" % ("ok  " if same else "DIFF", dst))
            bad += not same
        else:
            os.makedirs(OUT, exist_ok=True)
            open(dst, "wb").write(b)
            print("wrote %s (%d bytes)" % (dst, len(b)))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
