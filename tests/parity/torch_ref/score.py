#!/usr/bin/python3
"""Token-weighted cross-entropy / perplexity of a grassflow checkpoint on a token file (float64).

Usage: score.py --ckpt FILE --tokens FILE [--json]
The token file holds whitespace-separated ids, one sequence per line (blank lines skipped); a line
of n ids predicts ids[1:] from ids[:-1].
"""
import argparse
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from model import load_checkpoint  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ckpt", required=True)
    ap.add_argument("--tokens", required=True)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    try:
        model, _ = load_checkpoint(a.ckpt)
    except ValueError as e:
        sys.exit("score: %s: %s" % (a.ckpt, e))
    V, max_len = model.cfg["vocab_size"], model.cfg["max_len"]
    total, n_tok = 0.0, 0
    with open(a.tokens) as f, torch.no_grad():
        for lineno, line in enumerate(f, 1):
            ids = [int(x) for x in line.split()]
            if len(ids) < 2:
                continue
            if len(ids) - 1 > max_len:
                sys.exit("score: %s:%d: %d inputs > max_len %d" % (a.tokens, lineno, len(ids) - 1, max_len))
            if min(ids) < 0 or max(ids) >= V:
                sys.exit("score: %s:%d: token id out of [0, %d)" % (a.tokens, lineno, V))
            x = torch.tensor(ids, dtype=torch.long)
            logits = model(x[None, :-1])[0]
            total += F.cross_entropy(logits, x[1:], reduction="sum").item()
            n_tok += len(ids) - 1
    loss = total / n_tok if n_tok else float("nan")
    ppl = math.exp(loss) if n_tok else float("nan")
    if a.json:
        print(json.dumps({"tokens": n_tok, "loss": loss, "ppl": ppl}))
    else:
        print("%s: %d tokens, loss %.6f, ppl %.4f" % (a.ckpt, n_tok, loss, ppl))


if __name__ == "__main__":
    main()
