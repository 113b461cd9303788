"""GrassLM (github.com/adriansimonn/GrassLM, python/grasslm/layers.py, model.py and export.py: read, not copied),
written out in PyTorch with its names, and its .grasslm writer, to hold grassflow's importer
(src/import/grasslm.c) to.

  grasslm.py make --out FILE.grasslm [--layers N] [--L L] [--f16] [--seed S]
        a small random GrassLM (d 32, rank 6, d_ff 64, vocabulary 40; the offsets 1, 2, 4, 8, 12, 16 one per
        layer, 12 layers each twice) written as export.py writes it (f32, or f16 with --f16); and
        FILE.ref.safetensors: a batch of ids and its logits (float64, from the weights as the file holds them).
  grasslm.py check --file FILE.grasslm --ref REF.safetensors
        read FILE as their export.py's load_weights reads one (header, then the weights by name), load it strict
        into the model above (its offsets from window_offsets), and hold its logits on REF's ids to REF's
        logits (1e-5 of the largest): a file grassflow export wrote opens in their code.

The model: token + position embeddings; per block, with one offset D: z = W_red h; at t >= D the Pluecker vector
of (z_t, z_{t-D}) normalised by max(|p|, 1e-8), W_plu of it (0 before D); a = sigmoid(W_gate [h; g]);
x = ln1(a h + (1 - a) g) (dropout); out = ln2(x + ffn(x)), ffn = Linear, GELU (erf), Linear; then ln_final and
the head tied to the token embedding."""
import argparse
import os
import struct
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import st_io  # noqa: E402

D, R, FF, V = 32, 6, 64, 40


def schedule(n):
    base = [1, 2, 4, 8, 12, 16]
    return base[:n] if n <= 6 else [o for o in base for _ in range(2)][:n]


class Block(nn.Module):
    def __init__(self, offset):
        super().__init__()
        self.offset = offset
        self.mixing = nn.Module()
        self.mixing.plucker_encoder = nn.Module()
        self.mixing.plucker_encoder.W_red = nn.Linear(D, R)
        self.mixing.plucker_encoder.W_plu = nn.Linear(R * (R - 1) // 2, D)
        self.mixing.W_gate = nn.Linear(2 * D, D)
        self.ln1, self.ln2 = nn.LayerNorm(D), nn.LayerNorm(D)
        self.ffn = nn.Sequential(nn.Linear(D, FF), nn.GELU(), nn.Linear(FF, D))

    def forward(self, h):
        B, T, _ = h.shape
        enc, d = self.mixing.plucker_encoder, self.offset
        g = h.new_zeros(B, T, D)
        if d < T:
            z = enc.W_red(h)
            i, j = torch.triu_indices(R, R, 1)
            cur, past = z[:, d:], z[:, :T - d]
            p = cur[..., i] * past[..., j] - cur[..., j] * past[..., i]
            g[:, d:] = enc.W_plu(p / p.norm(dim=-1, keepdim=True).clamp(min=1e-8))
        a = torch.sigmoid(self.mixing.W_gate(torch.cat([h, g], dim=-1)))
        x = self.ln1(a * h + (1 - a) * g)
        return self.ln2(x + self.ffn(x))


class Model(nn.Module):
    def __init__(self, n_layer, L):
        super().__init__()
        self.tok_embed, self.pos_embed = nn.Embedding(V, D), nn.Embedding(L, D)
        self.blocks = nn.ModuleList(Block(o) for o in schedule(n_layer))
        self.ln_final = nn.LayerNorm(D)

    def forward(self, ids):
        h = self.tok_embed(ids) + self.pos_embed(torch.arange(ids.shape[1]))
        for b in self.blocks:
            h = b(h)
        return self.ln_final(h) @ self.tok_embed.weight.t()


def write(path, m, n_layer, L, f16):
    weights = dict(m.state_dict())
    weights["window_offsets"] = torch.tensor([b.offset for b in m.blocks], dtype=torch.float32)
    with open(path, "wb") as f:
        head = bytearray(64)
        head[0:4] = b"GRLM"
        struct.pack_into("<8I", head, 4, 1, n_layer, D, R, FF, V, L, 1 if f16 else 0)
        f.write(head)
        f.write(struct.pack("<I", len(weights)))
        for name, t in weights.items():
            nb = name.encode()
            f.write(struct.pack("<I", len(nb)) + nb + struct.pack("<I", t.dim()))
            f.write(b"".join(struct.pack("<I", s) for s in t.shape))
            f.write(t.detach().to(torch.float16 if f16 else torch.float32).numpy().tobytes())


def read(path):
    with open(path, "rb") as f:
        head = f.read(64)
        assert head[:4] == b"GRLM", "magic"
        n_layer, d, r, ff, v, L, dtype = struct.unpack_from("<7I", head, 8)
        assert (d, r, ff, v) == (D, R, FF, V), (d, r, ff, v)
        (n,) = struct.unpack("<I", f.read(4))
        w = {}
        for _ in range(n):
            (nl,) = struct.unpack("<I", f.read(4))
            name = f.read(nl).decode()
            (nd,) = struct.unpack("<I", f.read(4))
            shape = struct.unpack("<%dI" % nd, f.read(4 * nd))
            numel = 1
            for x in shape:
                numel *= x
            raw = f.read(numel * (2 if dtype else 4))
            t = torch.frombuffer(bytearray(raw), dtype=torch.float16 if dtype else torch.float32).float()
            w[name] = t.reshape(shape)
        assert f.read() == b"", "bytes after the last weight"
    return n_layer, L, w


def check(a):
    n_layer, L, w = read(a.file)
    m = Model(n_layer, L)
    offs = [int(x) for x in w.pop("window_offsets").tolist()]
    for b, o in zip(m.blocks, offs):
        b.offset = o
    m.load_state_dict(w)  # strict: every name and shape theirs
    m = m.double().eval()
    ref = st_io.read(a.ref)[0]
    with torch.no_grad():
        got = m(torch.from_numpy(ref["ids"]).long()).numpy()
    err = abs(got - ref["logits"]).max() / abs(ref["logits"]).max()
    print("grasslm.py check %s: read and loaded strict (offsets %s); logits max|diff| / max|logit| %.3e (tol 1e-5)"
          % (a.file, offs, err))
    sys.exit(0 if err <= 1e-5 else 1)


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    mk = sub.add_parser("make")
    mk.add_argument("--out", required=True)
    mk.add_argument("--layers", type=int, default=3)
    mk.add_argument("--L", type=int, default=20)
    mk.add_argument("--f16", action="store_true")
    mk.add_argument("--seed", type=int, default=4)
    ck = sub.add_parser("check")
    ck.add_argument("--file", required=True)
    ck.add_argument("--ref", required=True)
    a = ap.parse_args()
    if a.cmd == "check":
        return check(a)
    torch.manual_seed(a.seed)
    m = Model(a.layers, a.L)
    with torch.no_grad():
        for p in m.parameters():
            p.add_(0.1 * torch.randn_like(p))
            if a.f16:  # the reference runs on the weights as the file holds them
                p.copy_(p.half().float())
    write(a.out, m, a.layers, a.L, a.f16)
    m = m.double().eval()
    ids = torch.randint(0, V, (2, a.L))
    with torch.no_grad():
        logits = m(ids)
    st_io.write(a.out + ".ref.safetensors", {"ids": ids.to(torch.int64).numpy(), "logits": logits.numpy()})


if __name__ == "__main__":
    main()
