"""alphaXiv's reproduction of the paper (github.com/alphaXiv/paper-implementations, attention_is_not_all_you_need/,
models/grassmann.py and gpt2.py at 046a344: read, not copied), written out in PyTorch with its checkpoint's
tensor names, to hold grassflow's importer (src/import/alphaxiv.c) to.

  alphaxiv.py make --out FILE.pt --kind grassmann|transformer [--layers N] [--L L] [--seed S] [--bare]
        a small random model (d 32, rank 6, d_ff 64, vocabulary 40, 4 heads) saved as their train.py saves it,
        torch.save({epoch, model_state_dict, optimizer_state_dict, val_loss, val_ppl}), the state dict's names
        under torch.compile's "_orig_mod." unless --bare; and FILE.ref.safetensors: a batch of ids and its
        logits (float64).
  alphaxiv.py check --file FILE.pt --kind K [--layers N] [--L L] --ref REF.safetensors
        load FILE as their eval_wikitext.py loads a checkpoint (torch.load, "model_state_dict", the prefix
        removed, load_state_dict strict) into the model above, and hold its logits on REF's ids to REF's logits
        (1e-5 of the largest): a file grassflow export wrote opens in their code.
  alphaxiv.py speed --kind K --layers N --L L --d D --rank R --ff F --vocab V --context C --tokens T [--threads N]
        their generate() timed (scripts/reproduction_speed.sh): a model of that shape (random weights), a context
        of C tokens, then T tokens each from a forward over the whole window, as their code generates (greedy
        here: the cost is the forward's); prints one JSON line with tokens_per_s.

The models: token + position embeddings (dropout); blocks; ln_f; a head tied to the token embedding.
- Grassmann block: h = h + mix(ln1(h)); h = h + ffn(ln2(h)), ffn = Linear, GELU (erf), Dropout, Linear, Dropout.
  mix(x): z = W_red x; for each offset D in the list (the same list in every layer; D >= T skipped), at
  positions t >= D: p = z_t[i] z_{t-D}[j] - z_t[j] z_{t-D}[i] over i < j (row-major), p / max(|p|, 1e-8),
  W_plu of it; g = their sum / their count (0 where none); a = sigmoid(W_gate [x; g]);
  out = Dropout(layer_norm(a x + (1 - a) g)).
- Transformer block: h = h + Dropout(out_proj(attn(qkv_proj(ln1(h))))) with qkv's rows q | k | v, each split
  into heads of d / H consecutive rows, causal softmax(q k^T / sqrt(dh)) v; h = h + ffn(ln2(h))."""
import argparse
import collections
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import st_io  # noqa: E402

D, R, FF, V, H = 32, 6, 64, 40, 4


def offsets_for(n_layer):  # their defaults: 6 layers all six offsets; 12 layers each twice (train.py)
    base = [1, 2, 4, 8, 12, 16]
    return base if n_layer < 12 else [o for o in base for _ in range(2)]


class Pairs(nn.Module):  # their Pluecker encoder's index buffers, in the state dict (int64): checked, not copied
    def __init__(self):
        super().__init__()
        iu = torch.triu_indices(R, R, 1)
        self.register_buffer("idx_i", iu[0].clone())
        self.register_buffer("idx_j", iu[1].clone())


class Mixing(nn.Module):
    def __init__(self, offsets):
        super().__init__()
        self.offsets = offsets
        self.W_red = nn.Linear(D, R)
        self.W_plu = nn.Linear(R * (R - 1) // 2, D)
        self.W_gate = nn.Linear(2 * D, D)
        self.layer_norm = nn.LayerNorm(D)
        self.plucker = Pairs()

    def forward(self, x):
        B, T, _ = x.shape
        z = self.W_red(x)
        acc, cnt = x.new_zeros(B, T, D), x.new_zeros(B, T, 1)
        for d in self.offsets:
            if d >= T:
                continue
            cur, past = z[:, d:], z[:, :-d]
            i, j = self.plucker.idx_i, self.plucker.idx_j
            p = cur[..., i] * past[..., j] - cur[..., j] * past[..., i]
            p = p / torch.clamp(p.norm(dim=-1, keepdim=True), min=1e-8)
            acc[:, d:] = acc[:, d:] + self.W_plu(p)
            cnt[:, d:] = cnt[:, d:] + 1
        g = acc / cnt.clamp(min=1)
        a = torch.sigmoid(self.W_gate(torch.cat([x, g], dim=-1)))
        return self.layer_norm(a * x + (1 - a) * g)


def ffn():
    return nn.Sequential(nn.Linear(D, FF), nn.GELU(), nn.Dropout(0.1), nn.Linear(FF, D), nn.Dropout(0.1))


class GrassmannBlock(nn.Module):
    def __init__(self, offsets):
        super().__init__()
        self.ln1, self.grassmann, self.ln2, self.ffn = nn.LayerNorm(D), Mixing(offsets), nn.LayerNorm(D), ffn()

    def forward(self, h):
        h = h + self.grassmann(self.ln1(h))
        return h + self.ffn(self.ln2(h))


class TransformerBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.qkv_proj, self.out_proj = nn.LayerNorm(D), nn.Linear(D, 3 * D), nn.Linear(D, D)
        self.ln2, self.ffn = nn.LayerNorm(D), ffn()

    def forward(self, h):
        B, T, _ = h.shape
        q, k, v = self.qkv_proj(self.ln1(h)).reshape(B, T, 3, H, D // H).permute(2, 0, 3, 1, 4)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(D // H)
        att = att.masked_fill(~torch.ones(T, T, dtype=torch.bool).tril(), float("-inf")).softmax(-1)
        h = h + self.out_proj((att @ v).transpose(1, 2).reshape(B, T, D))
        return h + self.ffn(self.ln2(h))


class Model(nn.Module):
    def __init__(self, kind, n_layer, L):
        super().__init__()
        self.token_embedding, self.position_embedding = nn.Embedding(V, D), nn.Embedding(L, D)
        offs = offsets_for(n_layer)
        self.blocks = nn.ModuleList(GrassmannBlock(offs) if kind == "grassmann" else TransformerBlock()
                                    for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(D)
        self.lm_head = nn.Linear(D, V, bias=False)
        self.lm_head.weight = self.token_embedding.weight

    def forward(self, ids):
        h = self.token_embedding(ids) + self.position_embedding(torch.arange(ids.shape[1]))
        for b in self.blocks:
            h = b(h)
        return self.lm_head(self.ln_f(h))


def make(a):
    torch.manual_seed(a.seed)
    m = Model(a.kind, a.layers, a.L).double()
    with torch.no_grad():  # away from their init so that every tensor matters (LayerNorms too)
        for p in m.parameters():
            p.add_(0.1 * torch.randn_like(p))
    m.eval()
    ids = torch.randint(0, V, (2, a.L))
    with torch.no_grad():
        logits = m(ids)
    sd = collections.OrderedDict((("" if a.bare else "_orig_mod.") + k, v.float() if v.is_floating_point() else v)
                                 for k, v in m.state_dict().items())
    opt = torch.optim.AdamW(m.parameters(), lr=6e-4)
    torch.save({"epoch": 7, "model_state_dict": sd, "optimizer_state_dict": opt.state_dict(), "val_loss": 5.5,
                "val_ppl": math.exp(5.5)}, a.out)
    st_io.write(a.out + ".ref.safetensors", {"ids": ids.to(torch.int64).numpy(), "logits": logits.numpy()})


def check(a):
    ck = torch.load(a.file, map_location="cpu")
    sd = ck["model_state_dict"] if isinstance(ck, dict) and "model_state_dict" in ck else ck
    sd = {k.replace("_orig_mod.", ""): v for k, v in sd.items()}
    m = Model(a.kind, a.layers, a.L)
    m.load_state_dict(sd)  # strict: every name and shape theirs
    m = m.double().eval()
    ref = st_io.read(a.ref)[0]
    with torch.no_grad():
        got = m(torch.from_numpy(ref["ids"]).long()).numpy()
    err = abs(got - ref["logits"]).max() / abs(ref["logits"]).max()
    print("alphaxiv.py check %s: loaded strict by their model; logits max|diff| / max|logit| %.3e (tol 1e-5)" % (a.file, err))
    sys.exit(0 if err <= 1e-5 else 1)


def speed(a):
    import json
    import time
    global D, R, FF, V
    D, R, FF, V = a.d, a.rank, a.ff, a.vocab
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    m = Model(a.kind, a.layers, a.L).eval()
    ids = torch.randint(0, V, (1, a.context))
    with torch.no_grad():
        m(ids[:, -a.L:])  # warm up
        t0 = time.perf_counter()
        for _ in range(a.tokens):  # their GrassmannGPT.generate: the whole window every token
            nxt = m(ids[:, -a.L:])[:, -1].argmax(-1, keepdim=True)
            ids = torch.cat([ids, nxt], dim=1)
        dt = time.perf_counter() - t0
    print(json.dumps({"kind": a.kind, "threads": a.threads, "context": a.context, "tokens": a.tokens,
                      "seconds": dt, "tokens_per_s": a.tokens / dt, "torch": torch.__version__}))


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    mk = sub.add_parser("make")
    mk.add_argument("--out", required=True)
    mk.add_argument("--kind", choices=("grassmann", "transformer"), required=True)
    mk.add_argument("--layers", type=int, default=2)
    mk.add_argument("--L", type=int, default=20)
    mk.add_argument("--seed", type=int, default=3)
    mk.add_argument("--bare", action="store_true")
    ck = sub.add_parser("check")
    ck.add_argument("--file", required=True)
    ck.add_argument("--kind", choices=("grassmann", "transformer"), required=True)
    ck.add_argument("--layers", type=int, default=2)
    ck.add_argument("--L", type=int, default=20)
    ck.add_argument("--ref", required=True)
    sp = sub.add_parser("speed")
    sp.add_argument("--kind", choices=("grassmann", "transformer"), required=True)
    for k, v in (("layers", 6), ("L", 128), ("d", 256), ("rank", 32), ("ff", 1024), ("vocab", 30522),
                 ("context", 100), ("tokens", 27), ("threads", 1)):
        sp.add_argument("--" + k, type=int, default=v)
    a = ap.parse_args()
    {"make": make, "check": check, "speed": speed}[a.cmd](a)


if __name__ == "__main__":
    main()
