"""PyTorch reference of `grassflow eval`: token-weighted mean next-token loss of a checkpoint on a split.

The corpus is read and tokenized here independently of the C code, with the tokenizer vocabulary that
the checkpoint stores (word: whitespace split + <eos> per line, unknown words -> <unk>; char: code
points; byte: bytes). Blocks of L + 1 tokens with stride L, so every token but the first is predicted.

    /usr/bin/python3 tests/parity/torch_ref/eval_corpus.py --ckpt FILE --corpus DIR|FILE --split valid --seq-len L
"""
import argparse
import json
import lzma
import math
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import st_io  # noqa: E402
from model import load_checkpoint  # noqa: E402


def read_text(path):
    data = open(path, "rb").read()
    if path.endswith(".xz"):
        data = lzma.decompress(data)
    return data


def split_texts(corpus):
    """train/valid/test bytes: a directory with SPLIT.txt(.xz), or one file split 90/5/5 at line ends."""
    if os.path.isdir(corpus):
        out = []
        for s in ("train", "valid", "test"):
            for suf in (".txt.xz", ".txt", ".xz", ""):
                p = os.path.join(corpus, s + suf)
                if os.path.isfile(p):
                    out.append(read_text(p))
                    break
            else:
                raise SystemExit("no %s split in %s" % (s, corpus))
        return out
    t = read_text(corpus)
    n = len(t)
    cuts = []
    for pct in (90, 95):
        at = n // 100 * pct
        while at < n and t[at:at + 1] != b"\n":
            at += 1
        cuts.append(at + 1 if at < n else n)
    return [t[:cuts[0]], t[cuts[0]:cuts[1]], t[cuts[1]:]]


def tokenize(tok, text):
    kind, vocab = tok["kind"], tok.get("vocab")
    if kind == "byte":
        return list(text)
    index = {w: i for i, w in enumerate(vocab)}
    if kind == "char":
        return [index[ch] for ch in text.decode("utf-8")]
    if kind == "word":
        # bytes.split() splits on ASCII whitespace only, as the C tokenizer does
        ids, unk, eos = [], index["<unk>"], index["<eos>"]
        lines = text.split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()          # a final newline ends the last line; it does not start another
        for line in lines:
            ids.extend(index.get(w.decode("utf-8"), unk) for w in line.split())
            ids.append(eos)
        return ids
    raise SystemExit("the reference tokenizes word, char and byte corpora, not %s" % kind)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ckpt", required=True)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--split", default="valid", choices=["train", "valid", "test"])
    ap.add_argument("--seq-len", type=int, required=True)
    args = ap.parse_args()
    model, _ = load_checkpoint(args.ckpt)
    _, meta = st_io.read(args.ckpt)
    tok = json.loads(meta["tokenizer"])
    text = split_texts(args.corpus)[("train", "valid", "test").index(args.split)]
    ids = torch.tensor(tokenize(tok, text), dtype=torch.long)
    L, n = args.seq_len, len(ids)
    total, count = 0.0, 0
    with torch.no_grad():
        for start in range(0, n - 1, L):
            length = min(L, n - 1 - start)
            x = ids[start:start + length].unsqueeze(0)
            y = ids[start + 1:start + 1 + length]
            logits = model(x)[0]
            total += F.cross_entropy(logits, y, reduction="sum").item()
            count += length
    loss = total / count
    print(json.dumps({"split": args.split, "tokens": count, "loss": loss, "ppl": math.exp(loss)}))


if __name__ == "__main__":
    main()
