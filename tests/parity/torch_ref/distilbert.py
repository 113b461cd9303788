"""A small DistilBERT-shaped Hugging Face folder, and DistilBERT's forward written out in PyTorch, to hold
grassflow's importer (src/import/distilbert.c) to.

  distilbert.py make --out DIR [--seed S] [--bare] [--base VOCAB]   config.json, model.safetensors (Hugging Face's tensor
        names, "distilbert." prefix unless --bare, plus the MLM layers a DistilBertForMaskedLM file has),
        vocab.txt, tokenizer_config.json; and DIR.ref.safetensors: a padded batch (ids, mask) and its last
        hidden states (float64) from forward() below. --base VOCAB: distilbert-base-uncased's shape (768 wide,
        6 layers, 12 heads, FFN 3072, 512 positions) with random weights and that vocab.txt, for timing runs.
  distilbert.py check --dir DIR --features F.json     F: `grassflow features --json` on DIR; its hidden
        states against forward() on its ids. Exit 1 beyond 1e-4 (relative to the largest |h|).
  distilbert.py break --dir DIR --out DST --how HOW...  a damaged copy DST/HOW for each HOW (missing, misnamed,
        shape, extra, cased, badtok, novocab, badconfig, nan, inf, f64big) for the error tests.

forward() follows Hugging Face's DistilBertModel (transformers/models/distilbert/modeling_distilbert.py,
read, not copied): embeddings = LayerNorm(word + position, eps 1e-12); per layer: q, k, v = three linears,
q / sqrt(dh), scores of padded keys set to the dtype's minimum, softmax, out_lin; sa_layer_norm(out + x);
lin2(gelu(lin1(.))) (exact GELU); output_layer_norm(ffn + sa). No token types, no final LayerNorm."""
import argparse
import json
import math
import os
import shutil
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import st_io  # noqa: E402

VOCAB = ["[PAD]"] + ["[unused%d]" % i for i in range(3)] + ["[UNK]", "[CLS]", "[SEP]", "[MASK]"] + \
    "a an the man woman dog cat is are in on park street runs sleeps plays with ball . , ##s ##ing".split()
SHAPE = dict(dim=32, n_layers=2, n_heads=4, hidden_dim=64, max_position_embeddings=40)


def hf_config():
    return dict(SHAPE, model_type="distilbert", architectures=["DistilBertForMaskedLM"], activation="gelu",
                attention_dropout=0.1, dropout=0.1, initializer_range=0.02, pad_token_id=0, qa_dropout=0.1,
                seq_classif_dropout=0.2, sinusoidal_pos_embds=False, tie_weights_=True, vocab_size=len(VOCAB))


def make_weights(seed):
    """Hugging Face's names (without the "distilbert." prefix) -> float32 arrays."""
    g = np.random.default_rng(seed)
    d, f, V, P = SHAPE["dim"], SHAPE["hidden_dim"], len(VOCAB), SHAPE["max_position_embeddings"]
    w = lambda *s: (g.standard_normal(s) * 0.2).astype(np.float32)  # noqa: E731
    ln = lambda: (1 + 0.2 * g.standard_normal(d)).astype(np.float32)  # noqa: E731
    t = {"embeddings.word_embeddings.weight": w(V, d), "embeddings.position_embeddings.weight": w(P, d),
         "embeddings.LayerNorm.weight": ln(), "embeddings.LayerNorm.bias": w(d)}
    for l in range(SHAPE["n_layers"]):
        p = "transformer.layer.%d." % l
        for n in ("q_lin", "k_lin", "v_lin", "out_lin"):
            t[p + "attention.%s.weight" % n], t[p + "attention.%s.bias" % n] = w(d, d), w(d)
        t[p + "sa_layer_norm.weight"], t[p + "sa_layer_norm.bias"] = ln(), w(d)
        t[p + "ffn.lin1.weight"], t[p + "ffn.lin1.bias"] = w(f, d), w(f)
        t[p + "ffn.lin2.weight"], t[p + "ffn.lin2.bias"] = w(d, f), w(d)
        t[p + "output_layer_norm.weight"], t[p + "output_layer_norm.bias"] = ln(), w(d)
    return t


def forward(t, ids, mask):
    """Last hidden states (B, T, d), float64; t: the tensors without prefix; ids, mask (B, T)."""
    T64 = {k: torch.tensor(v, dtype=torch.float64) for k, v in t.items()}
    ids, mask = torch.as_tensor(ids, dtype=torch.long), torch.as_tensor(mask, dtype=torch.bool)
    B, T = ids.shape
    d, H = SHAPE["dim"], SHAPE["n_heads"]
    dh = d // H
    ln = lambda x, p: F.layer_norm(x, (d,), T64[p + ".weight"], T64[p + ".bias"], eps=1e-12)  # noqa: E731
    lin = lambda x, p: F.linear(x, T64[p + ".weight"], T64[p + ".bias"])  # noqa: E731
    x = ln(T64["embeddings.word_embeddings.weight"][ids] + T64["embeddings.position_embeddings.weight"][:T][None],
           "embeddings.LayerNorm")
    for l in range(SHAPE["n_layers"]):
        p = "transformer.layer.%d." % l
        heads = lambda y: y.view(B, T, H, dh).transpose(1, 2)  # noqa: E731
        q = heads(lin(x, p + "attention.q_lin")) / math.sqrt(dh)
        k, v = heads(lin(x, p + "attention.k_lin")), heads(lin(x, p + "attention.v_lin"))
        scores = q @ k.transpose(2, 3)
        scores = scores.masked_fill(~mask[:, None, None, :], torch.finfo(scores.dtype).min)
        ctx = (scores.softmax(-1) @ v).transpose(1, 2).reshape(B, T, d)
        sa = ln(lin(ctx, p + "attention.out_lin") + x, p + "sa_layer_norm")
        ffn = lin(F.gelu(lin(sa, p + "ffn.lin1")), p + "ffn.lin2")
        x = ln(ffn + sa, p + "output_layer_norm")
    return x


def write_folder(out, t, prefix="distilbert.", config=None, vocab=None, lower=True):
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config or hf_config(), f, indent=2)
    with open(os.path.join(out, "vocab.txt"), "w") as f:
        f.write("".join(v + "\n" for v in vocab or VOCAB))  # VOCAB as it is now (--base replaces it)
    with open(os.path.join(out, "tokenizer_config.json"), "w") as f:
        json.dump({"do_lower_case": lower, "model_max_length": 512}, f)
    st_io.write(os.path.join(out, "model.safetensors"), {prefix + k: v for k, v in t.items()})


def cmd_make(a):
    if a.base:
        global VOCAB
        VOCAB = [w.rstrip("\n") for w in open(a.base, encoding="utf-8")]
        SHAPE.update(dim=768, n_layers=6, n_heads=12, hidden_dim=3072, max_position_embeddings=512)
    t = make_weights(a.seed)
    full = dict(t)
    if not a.bare:  # what a DistilBertForMaskedLM file also holds, none of it read by grassflow
        d, V, g = SHAPE["dim"], len(VOCAB), np.random.default_rng(a.seed + 1)
        extra = {"vocab_transform.weight": (d, d), "vocab_transform.bias": (d,), "vocab_layer_norm.weight": (d,),
                 "vocab_layer_norm.bias": (d,), "vocab_projector.bias": (V,)}
        full = {"distilbert." + k: v for k, v in t.items()}
        full.update({k: g.standard_normal(s).astype(np.float32) for k, s in extra.items()})
    write_folder(a.out, full, prefix="")
    g = np.random.default_rng(a.seed + 2)
    B, T = 4, 17
    lens = [T, 11, 5, 14]
    ids = g.integers(8, len(VOCAB), (B, T)).astype(np.int32)
    mask = np.zeros((B, T), np.int32)
    for b, n in enumerate(lens):
        mask[b, :n] = 1
        ids[b, 0], ids[b, n - 1] = VOCAB.index("[CLS]"), VOCAB.index("[SEP]")
        ids[b, n:] = 0
    h = forward(t, ids, mask).numpy()
    st_io.write(a.out.rstrip("/") + ".ref.safetensors", {"ids": ids, "mask": mask, "hidden": h})


def cmd_check(a):
    got = json.load(open(a.features))
    t = {k[len("distilbert."):] if k.startswith("distilbert.") else k: v
         for k, v in st_io.read(os.path.join(a.dir, "model.safetensors"))[0].items()}
    ids = np.array([got["ids"]])
    want = forward(t, ids, np.ones_like(ids)).numpy()[0]
    h = np.array(got["hidden"], dtype=np.float64)
    if h.shape != want.shape:
        sys.exit("distilbert check: hidden states of shape %s, expected %s" % (h.shape, want.shape))
    diff = np.abs(h - want).max() / max(np.abs(want).max(), 1.0)
    print("distilbert check: features of %d tokens, max |diff| / max |h| %.3e (tol 1e-4)" % (len(got["ids"]), diff))
    sys.exit(0 if diff <= 1e-4 else 1)


def cmd_break(a):
    for how in a.how:  # one process for all: importing torch is most of the time of one
        break_one(a.dir, os.path.join(a.out, how), how)


def break_one(src, out, how):
    shutil.copytree(src, out)
    st = os.path.join(out, "model.safetensors")
    t = st_io.read(st)[0]
    cfg = json.load(open(os.path.join(out, "config.json")))
    q1 = "distilbert.transformer.layer.1.attention.q_lin.weight"
    if how == "missing":
        del t[q1]
    elif how == "misnamed":
        t["distilbert.transformer.layer.1.attention.q_lin.weigth"] = t.pop(q1)
    elif how == "shape":  # a wider model than config.json says
        cfg["dim"], cfg["hidden_dim"] = 48, 96
    elif how == "extra":  # config.json says one layer, the file has two
        cfg["n_layers"] = 1
    elif how == "cased":
        json.dump({"do_lower_case": False}, open(os.path.join(out, "tokenizer_config.json"), "w"))
    elif how == "badtok":
        open(os.path.join(out, "tokenizer_config.json"), "w").write("{")
    elif how == "novocab":
        os.remove(os.path.join(out, "vocab.txt"))
    elif how == "badconfig":
        del cfg["n_heads"]
    elif how == "nan":  # a weight that is no number: one NaN deep in a layer's q block
        t[q1] = t[q1].copy()
        t[q1][3, 5] = np.nan
    elif how == "inf":
        b = "distilbert.embeddings.LayerNorm.bias"
        t[b] = t[b].copy()
        t[b][7] = -np.inf
    elif how == "f64big":  # a float64 tensor with a value no float32 holds
        w = "distilbert.transformer.layer.0.ffn.lin1.weight"
        t[w] = t[w].astype(np.float64)
        t[w][0, 2] = 1e300
    json.dump(cfg, open(os.path.join(out, "config.json"), "w"))
    st_io.write(st, t)


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make")
    m.add_argument("--out", required=True)
    m.add_argument("--seed", type=int, default=5)
    m.add_argument("--bare", action="store_true")
    m.add_argument("--base", metavar="VOCAB")
    c = sub.add_parser("check")
    c.add_argument("--dir", required=True)
    c.add_argument("--features", required=True)
    b = sub.add_parser("break")
    b.add_argument("--dir", required=True)
    b.add_argument("--out", required=True, help="the folder that gets a damaged copy OUT/HOW for each --how")
    b.add_argument("--how", required=True, nargs="+",
                   choices=["missing", "misnamed", "shape", "extra", "cased", "badtok", "novocab", "badconfig", "nan",
                            "inf", "f64big"])
    a = p.parse_args()
    {"make": cmd_make, "check": cmd_check, "break": cmd_break}[a.cmd](a)


if __name__ == "__main__":
    main()
