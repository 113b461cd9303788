"""data/cmudict/'s sample of the CMU Pronouncing Dictionary, cut from Debian's festlex-cmu (issue 52's
grapheme-to-phoneme data; data/README.md documents it):

    python3 scripts/make_cmudict_subset.py            write data/cmudict/cmudict-0.4-sample20.out.xz
    python3 scripts/make_cmudict_subset.py --check    regenerate it in memory and compare it with the shipped file

The input is /usr/share/festival/dicts/cmu/cmudict-0.4.out of festlex-cmu 2.4-2 (CMUdict 0.4 in Festival's
lexicon format; scripts/install-deps.sh installs it), checked by its sha256 (--input FILE --any-input reads
another copy). The sample keeps the first line (MNCL), then three comment lines that mark the file as modified
(the licence asks for it: data/cmudict/LICENSE), then every entry line whose word, lower-cased, has
fmix64(FNV-1a-64(word) from the offset basis XOR 1) % 100 < 20, unchanged and in the file's order: every
pronunciation of a sampled word, about a fifth of the words. The hash is the C library's gf_lexicon_hash(word,
n, 1) (src/tasks/g2p/lexicon.c); the split of a word is the same hash with seed 0 (% 100: < 90 train, < 95
valid, else test), so the sample's test words are test words of the full file. xz output can differ between xz
versions: what is checked is the decompressed file's sha256 (data/README.md)."""
import argparse
import hashlib
import lzma
import os
import re
import sys

SOURCE = "/usr/share/festival/dicts/cmu/cmudict-0.4.out"
SOURCE_SHA256 = "3b211f3371e4b57ff14525f284623ff8e84add2656690e24c885d05b62426fb6"
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "cmudict", "cmudict-0.4-sample20.out.xz")
PERCENT, SEED = 20, 1
M64 = (1 << 64) - 1


def lexicon_hash(word, seed):
    """gf_lexicon_hash: MurmurHash3's fmix64 of the 64-bit FNV-1a hash of the bytes, from the offset basis XOR seed."""
    h = 0xCBF29CE484222325 ^ seed
    for b in word:
        h = ((h ^ b) * 0x100000001B3) & M64
    h ^= h >> 33
    h = (h * 0xFF51AFD7ED558CCD) & M64
    h ^= h >> 33
    h = (h * 0xC4CEB9FE1A85EC53) & M64
    return h ^ (h >> 33)


def sample(text):
    """The sample of cmudict-0.4.out's text (bytes), and its counts."""
    lines = text.split(b"\n")
    if lines[0] != b"MNCL" or lines[-1] != b"":
        sys.exit("make_cmudict_subset: the input does not begin with MNCL or does not end with a newline: not cmudict-0.4.out?")
    out = [lines[0],
           b"; A sample of cmudict-0.4.out (Debian festlex-cmu 2.4-2), modified for grassflow by scripts/make_cmudict_subset.py:",
           b"; only the entries whose word w (lower-cased) has fmix64(FNV-1a-64(w) from the offset basis XOR 1) %% 100 < %d are kept," % PERCENT,
           b"; unchanged and in order. Copyright (c) 1996,1997 Centre for Speech Technology Research, University of Edinburgh: see LICENSE."]
    words, entries, split = set(), 0, [0, 0, 0]
    for line in lines[1:-1]:
        m = re.match(rb'\("([^"\\]*)" ', line)
        if not m:
            sys.exit("make_cmudict_subset: an entry line that is not (\"word\" ...: %r" % line[:60])
        w = m.group(1).lower()
        if lexicon_hash(w, SEED) % 100 >= PERCENT:
            continue
        out.append(line)
        entries += 1
        if w not in words:
            words.add(w)
            b = lexicon_hash(w, 0) % 100
            split[0 if b < 90 else 1 if b < 95 else 2] += 1
    return b"\n".join(out) + b"\n", entries, len(words), split


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--input", default=SOURCE)
    ap.add_argument("--any-input", action="store_true", help="read --input whatever its sha256")
    ap.add_argument("--out", default=OUT)
    ap.add_argument("--check", action="store_true", help="compare with the shipped --out instead of writing it")
    a = ap.parse_args()
    if not os.path.exists(a.input):
        sys.exit("make_cmudict_subset: %s is not there\nHINT: apt-get install festlex-cmu (scripts/install-deps.sh)" % a.input)
    text = open(a.input, "rb").read()
    digest = hashlib.sha256(text).hexdigest()
    if digest != SOURCE_SHA256 and not a.any_input:
        sys.exit("make_cmudict_subset: %s has sha256 %s; expected %s (festlex-cmu 2.4-2)\nHINT: --any-input to cut "
                 "the sample from it anyway" % (a.input, digest, SOURCE_SHA256))
    data, entries, words, split = sample(text)
    print("%s: %d entries, %d words (train %d, valid %d, test %d), %d bytes, sha256 %s" % (
        os.path.basename(a.out), entries, words, split[0], split[1], split[2], len(data), hashlib.sha256(data).hexdigest()))
    if a.check:
        shipped = lzma.decompress(open(a.out, "rb").read())
        if shipped != data:
            sys.exit("make_cmudict_subset: %s differs from the sample regenerated from %s" % (a.out, a.input))
        print("make_cmudict_subset: %s is the sample, byte for byte (decompressed)" % a.out)
        return
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out + ".tmp", "wb") as f:
        f.write(lzma.compress(data, preset=9 | lzma.PRESET_EXTREME))
    os.replace(a.out + ".tmp", a.out)
    print("make_cmudict_subset: wrote %s (%d bytes)" % (a.out, os.path.getsize(a.out)))


if __name__ == "__main__":
    main()
