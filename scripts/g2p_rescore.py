"""Score a G2P model's test predictions with Festival's ax (CMUdict's AH0) counted as ah, beside the scores as
grassflow's eval gives them (issue 52: how much of the error rate is the ax/ah distinction that the published
CMUdict results, stress stripped, do not make):

    python3 scripts/g2p_rescore.py words LEXICON > words.txt          the test split's words, one a line
    build/grassflow predict --ckpt RUN/best.safetensors --corpus words.txt --beam 5 > pred.tsv
    python3 scripts/g2p_rescore.py score LEXICON pred.tsv [--json]     WER and PER both ways

LEXICON is Festival's cmudict-0.4.out (or the shipped sample); the split is grassflow's (lexicon_hash with seed 0,
% 100 >= 95: test), each word's reference its first pronunciation in the file, stress stripped, as
`--stress strip` reads it. The first pair of figures must equal `eval --split test --beam 5` of a run trained with
`--stress strip` (a check that this reads the split as grassflow does); the second merges ax into ah on both
sides, as `--schwa ah` reads the lexicon."""
import argparse
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_cmudict_subset import lexicon_hash  # noqa: E402

SYLLABLE = re.compile(r"\(\(([a-z0-9_ ]+)\) [0-2]\)")


def read_lines(path):
    if path.endswith(".xz"):
        import lzma
        return lzma.open(path, "rt", encoding="utf-8").read().split("\n")
    return open(path, encoding="utf-8").read().split("\n")


def test_references(path):
    """{word: [phonemes]} of the test split: each word's first pronunciation, stress stripped."""
    refs = {}
    for n, line in enumerate(read_lines(path), 1):
        m = re.match(r'\s*\(\s*"((?:[^"\\]|\\.)*)"', line)
        if not m:
            continue
        word = m.group(1).replace('\\"', '"').replace("\\\\", "\\").lower()
        if word in refs or lexicon_hash(word.encode(), 0) % 100 < 95:
            continue
        phonemes = [p for syl in SYLLABLE.findall(line) for p in syl.split()]
        if not phonemes:
            sys.exit("g2p_rescore: %s:%d: an entry without syllables ((phonemes) stress)" % (path, n))
        refs[word] = phonemes
    if not refs:
        sys.exit("g2p_rescore: %s: no test words: not a lexicon in Festival's format?" % path)
    return refs


def edits(a, b):
    """Levenshtein distance between two phoneme lists."""
    row = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, y in enumerate(b, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (x != y))
    return row[len(b)]


def score(refs, preds, merge):
    fix = (lambda ps: ["ah" if p == "ax" else p for p in ps]) if merge else (lambda ps: ps)
    wrong = total = n_edits = 0
    for word, ref in refs.items():
        hyp, ref = fix(preds[word]), fix(ref)
        wrong += hyp != ref
        n_edits += edits(ref, hyp)
        total += len(ref)
    return {"words": len(refs), "wer": wrong / len(refs), "per": n_edits / total}


def read_predictions(path, refs):
    preds = {}
    for n, line in enumerate(read_lines(path), 1):
        if not line:
            continue
        cols = line.split("\t")
        if len(cols) < 2:
            sys.exit("g2p_rescore: %s:%d: expected predict's word<TAB>phonemes<TAB>score" % (path, n))
        preds[cols[0]] = cols[1].split()
    missing = [w for w in refs if w not in preds]
    if missing:
        sys.exit("g2p_rescore: %s: %d test words have no prediction (the first: %s); predict the words that "
                 "`g2p_rescore.py words` lists" % (path, len(missing), missing[0]))
    return preds


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=["words", "score"])
    ap.add_argument("lexicon")
    ap.add_argument("predictions", nargs="?")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    refs = test_references(a.lexicon)
    if a.what == "words":
        sys.stdout.write("".join(w + "\n" for w in refs))
        return
    if not a.predictions:
        sys.exit("g2p_rescore: score needs the predictions file (predict's output on the words)")
    preds = read_predictions(a.predictions, refs)
    out = {"as_read": score(refs, preds, False), "ax_as_ah": score(refs, preds, True)}
    if a.json:
        print(json.dumps(out))
        return
    for k, s in out.items():
        print("%-9s %d words  WER %.2f%%  PER %.2f%%" % (k, s["words"], 100 * s["wer"], 100 * s["per"]))


if __name__ == "__main__":
    main()
