#!/usr/bin/python3
"""Self-test of the PyTorch reference (no C needed). Exits non-zero on failure. Temporary files in /tmp.

Usage: selftest.py [--keep]   (--keep leaves the temporary directory in place and prints it)
"""
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
from collections import OrderedDict

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.nn.utils.stateless import functional_call  # noqa: E402

import st_io  # noqa: E402
from model import GrassmannMixer, build_model, load_checkpoint, sinusoidal_table  # noqa: E402
import make_fixture  # noqa: E402

torch.set_num_threads(1)
PY = "/usr/bin/python3"
ENV = dict(os.environ, OMP_NUM_THREADS="1")
FAILS = []


def check(cond, what):
    print("  %-4s %s" % ("ok" if cond else "FAIL", what))
    if not cond:
        FAILS.append(what)


TINY = {"vocab_size": 50, "d_model": 32, "n_layer": 2, "n_head": 4, "d_ff": 64, "max_len": 20, "rank": 6,
        "offsets": [[1, 2, 4, 8, 12, 16]], "mixers": ["grassmann", "attention"], "norm": "pre",
        "plucker_eps": 1e-8, "extra_proj": False, "tie_head": True, "gelu": "erf", "pos": "learned",
        "dropout": 0.0}


def variant(**kw):
    c = dict(TINY)
    c.update(kw)
    return c


def doc_names(cfg):
    """Tensor names/shapes written out by hand from docs/model.md, in checkpoint order."""
    V, d, r, dff, L = cfg["vocab_size"], cfg["d_model"], cfg["rank"], cfg["d_ff"], cfg["n_layer"]
    C = r * (r - 1) // 2
    mixers = cfg["mixers"] * L if len(cfg["mixers"]) == 1 else cfg["mixers"]
    out = [("tok_emb.weight", (V, d))]
    if cfg["pos"] == "learned":
        out.append(("pos_emb.weight", (cfg["max_len"], d)))
    for l in range(L):
        p = "blocks.%d." % l
        out += [(p + "ln1.weight", (d,)), (p + "ln1.bias", (d,)), (p + "ln2.weight", (d,)), (p + "ln2.bias", (d,))]
        if mixers[l] == "grassmann":
            out += [(p + "mix.red.weight", (r, d)), (p + "mix.red.bias", (r,)),
                    (p + "mix.plucker.weight", (d, C)), (p + "mix.plucker.bias", (d,)),
                    (p + "mix.gate.weight", (d, 2 * d)), (p + "mix.gate.bias", (d,))]
            if cfg["extra_proj"]:
                out += [(p + "mix.out.weight", (d, d)), (p + "mix.out.bias", (d,))]
        else:
            out += [(p + "mix.qkv.weight", (3 * d, d)), (p + "mix.qkv.bias", (3 * d,)),
                    (p + "mix.proj.weight", (d, d)), (p + "mix.proj.bias", (d,))]
        out += [(p + "ffn.fc1.weight", (dff, d)), (p + "ffn.fc1.bias", (dff,)),
                (p + "ffn.fc2.weight", (d, dff)), (p + "ffn.fc2.bias", (d,))]
    out += [("ln_f.weight", (d,)), ("ln_f.bias", (d,))]
    if not cfg["tie_head"]:
        out.append(("lm_head.weight", (V, d)))
    return out


def random_model(cfg, seed, scale=0.3):
    torch.manual_seed(seed)
    m = build_model(cfg).double()
    with torch.no_grad():
        for name, p in m.named_parameters():
            if name.endswith(("ln1.weight", "ln2.weight", "ln_f.weight")):
                p.copy_(1.0 + 0.1 * torch.randn_like(p))
            else:
                p.copy_(scale * torch.randn_like(p))
    return m.eval()


def write_ckpt(path, model, cfg):
    sd = OrderedDict((k, v.detach().float().numpy()) for k, v in model.state_dict().items())
    st_io.write(path, sd, {"config": json.dumps(cfg)})


# ---------------------------------------------------------------- naive Grassmann mixer (independent)
def naive_grassmann(mix, h):
    """Per-position, per-pair python loops; must equal GrassmannMixer.forward."""
    B, T, d = h.shape
    r = mix.r
    z = h @ mix.red.weight.T + mix.red.bias
    out = torch.zeros_like(h)
    for b in range(B):
        for t in range(T):
            gs = []
            for D in mix.offsets:
                if t - D < 0:
                    continue
                u, v = z[b, t], z[b, t - D]
                if not mix.use_plucker:  # the ablation: the pair as [z_t; z_{t-D}]
                    gs.append(mix.pair.weight @ torch.cat([u, v]) + mix.pair.bias)
                    continue
                p = torch.stack([u[i] * v[j] - u[j] * v[i] for i in range(r) for j in range(i + 1, r)])
                p = p / torch.clamp_min(torch.sqrt((p * p).sum()), mix.eps)
                gs.append(mix.plucker.weight @ p + mix.plucker.bias)
            g = torch.stack(gs).mean(0) if gs else torch.zeros(d, dtype=h.dtype)
            if mix.gate is None:  # the ablation without the gate
                m = (h[b, t] + g) / 2
            else:
                a = torch.sigmoid(mix.gate.weight @ torch.cat([h[b, t], g]) + mix.gate.bias)
                m = a * h[b, t] + (1 - a) * g
            if mix.out is not None:
                m = mix.out.weight @ m + mix.out.bias
            out[b, t] = m
    return out


def naive_attention(att, h):
    B, T, d = h.shape
    H = att.n_head
    dh = d // H
    qkv = h @ att.qkv.weight.T + att.qkv.bias
    q, k, v = qkv[..., :d], qkv[..., d:2 * d], qkv[..., 2 * d:]
    y = torch.zeros_like(h)
    for b in range(B):
        for t in range(T):
            for j in range(H):
                cs = slice(j * dh, (j + 1) * dh)
                s = torch.stack([q[b, t, cs] @ k[b, u, cs] / math.sqrt(dh) for u in range(t + 1)])
                w = torch.softmax(s, 0)
                y[b, t, cs] = (w[:, None] * v[b, :t + 1, cs]).sum(0)
    return y @ att.proj.weight.T + att.proj.bias


def test_st_io(tmp):
    print("st_io round trip")
    path = os.path.join(tmp, "rt.safetensors")
    rng = np.random.RandomState(0)
    t = OrderedDict([("z_last_first", rng.randn(3, 4).astype(np.float32)),
                     ("a", rng.randint(-5, 5, size=(2, 5)).astype(np.int32)),
                     ("f64", rng.randn(7).astype(np.float64)), ("i64", np.arange(6, dtype=np.int64).reshape(1, 2, 3)),
                     ("scalar1", np.array([3.5], dtype=np.float32))])
    st_io.write(path, t, {"k": "v", "config": '{"x": 1}'})
    back, meta = st_io.read(path)
    check(list(back) == list(t), "names keep insertion order")
    check(all(back[k].dtype == t[k].dtype and back[k].shape == t[k].shape and np.array_equal(back[k], t[k])
              for k in t), "dtypes, shapes, values")
    check(meta == {"k": "v", "config": '{"x": 1}'}, "metadata")
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
    check(n % 8 == 0, "header length multiple of 8")
    check(not [f for f in os.listdir(tmp) if ".tmp." in f], "no temp file left")


def test_names():
    print("state_dict names = docs/model.md")
    for cfg in (TINY, variant(extra_proj=True, tie_head=False), variant(pos="sinusoidal"),
                variant(mixers=["attention"]), variant(mixers=["grassmann"], norm="post", n_layer=3)):
        sd = build_model(cfg).state_dict()
        got = [(k, tuple(v.shape)) for k, v in sd.items()]
        check(got == doc_names(cfg), "names/shapes/order: mixers=%s extra_proj=%s tie=%s pos=%s"
              % (cfg["mixers"], cfg["extra_proj"], cfg["tie_head"], cfg["pos"]))
    P = sinusoidal_table(20, 32)
    t, i = 7, 5
    check(abs(P[t, 2 * i].item() - math.sin(t / 10000 ** (2 * i / 32))) < 1e-14
          and abs(P[t, 2 * i + 1].item() - math.cos(t / 10000 ** (2 * i / 32))) < 1e-14, "sinusoidal table")


def test_mixers_vs_naive():
    print("mixers vs naive per-position loops (float64)")
    torch.manual_seed(1)
    for T, offs, extra, eps in ((7, [1, 2, 4, 8, 12, 16], False, 1e-8), (5, [2, 2, 3], True, 1e-8),
                                (6, [1, 3], False, 5.0)):
        mix = GrassmannMixer(8, 4, offs, eps, extra).double()
        h = torch.randn(2, T, 8, dtype=torch.float64)
        err = (mix(h) - naive_grassmann(mix, h)).abs().max().item()
        check(err < 1e-12, "grassmann T=%d offsets=%s extra_proj=%s eps=%g: max err %.1e" % (T, offs, extra, eps, err))
    for plucker, gate in ((False, True), (True, False), (False, False)):  # the paper's ablations
        mix = GrassmannMixer(8, 4, [1, 2, 3], 1e-8, True, plucker=plucker, gate=gate).double()
        h = torch.randn(2, 6, 8, dtype=torch.float64)
        err = (mix(h) - naive_grassmann(mix, h)).abs().max().item()
        check(err < 1e-12, "grassmann plucker=%s gate=%s: max err %.1e" % (plucker, gate, err))
    # row t=0 has g = 0 (not the plucker bias): m = sigmoid(gate([h;0])) * h
    mix = GrassmannMixer(8, 4, [1, 2], 1e-8, False).double()
    h = torch.randn(1, 4, 8, dtype=torch.float64)
    a0 = torch.sigmoid(mix.gate(torch.cat([h[:, 0], torch.zeros_like(h[:, 0])], -1)))
    check((mix(h)[:, 0] - a0 * h[:, 0]).abs().max().item() < 1e-14, "t=0: g = 0, m = a*h")
    m = build_model(TINY).double()
    att = m.blocks[1].mix
    h = torch.randn(2, 6, 32, dtype=torch.float64)
    err = (att(h) - naive_attention(att, h)).abs().max().item()
    check(err < 1e-12, "attention vs naive: max err %.1e" % err)


def test_gradcheck():
    print("gradcheck Grassmann mixer (float64)")
    torch.manual_seed(2)
    cases = ((3, [1, 2, 4, 8], False, 1e-8, "T=3 < max offset 8, t=0 no offset"),
             (6, [1, 2, 4], True, 1e-8, "T=6, extra_proj"),
             (5, [1, 1, 3], False, 1e-8, "repeated offset"),
             (5, [1, 2], False, 1e3, "eps larger than every ||p|| (clamped branch)"),
             (5, [1, 3], True, 1e-8, "plucker false, gate false"))
    for T, offs, extra, eps, what in cases:
        abl = "plucker false" in what
        mix = GrassmannMixer(5, 4, offs, eps, extra, plucker=not abl, gate=not abl).double()
        names = [n for n, _ in mix.named_parameters()]
        params = tuple(p.detach().clone().requires_grad_(True) for _, p in mix.named_parameters())
        h = torch.randn(2, T, 5, dtype=torch.float64, requires_grad=True)

        def f(h, *ps):
            return functional_call(mix, dict(zip(names, ps)), (h,))
        ok = torch.autograd.gradcheck(f, (h,) + params, eps=1e-6, atol=1e-6, rtol=1e-5, raise_exception=False)
        check(ok, "gradcheck %s" % what)
    # p = 0 exactly (z[t] == z[t-1]): gradients stay finite and equal the clamped branch p/eps
    mix = GrassmannMixer(5, 4, [1], 1e-8, False).double()
    h = torch.randn(1, 3, 5, dtype=torch.float64)
    h[0, 1] = h[0, 0]
    h.requires_grad_(True)
    mix(h).square().sum().backward()
    finite = torch.isfinite(h.grad).all().item() and all(torch.isfinite(p.grad).all().item() for p in mix.parameters())
    check(finite, "p = 0 exactly (z[1] == z[0]): finite gradients")
    # full tiny model: gradcheck w.r.t. a few parameters through both mixers and the loss
    cfg = variant(d_model=8, n_head=2, d_ff=12, vocab_size=11, rank=4, max_len=10)
    m = random_model(cfg, 3)
    names = ["blocks.0.mix.red.weight", "blocks.0.mix.plucker.weight", "blocks.1.mix.qkv.weight", "tok_emb.weight"]
    ps = tuple(dict(m.named_parameters())[n].detach().clone().requires_grad_(True) for n in names)
    x = torch.randint(0, 11, (2, 9))
    y = torch.randint(0, 11, (2, 9))
    y[1, -3:] = -1

    def loss(*p):
        lg = functional_call(m, dict(zip(names, p)), (x,))
        return F.cross_entropy(lg.view(-1, 11), y.view(-1), ignore_index=-1)
    check(torch.autograd.gradcheck(loss, ps, eps=1e-6, atol=1e-6, rtol=1e-5, raise_exception=False),
          "gradcheck full model loss (grassmann+attention, ignored targets)")


def test_causality():
    print("causality: logits at positions < t unchanged when token t changes")
    T = 12
    for cfg in (variant(mixers=["grassmann"]), variant(mixers=["attention"]),
                variant(mixers=["grassmann"], norm="post", extra_proj=True),
                variant(mixers=["attention"], norm="post", pos="sinusoidal"), TINY):
        m = random_model(cfg, 4)
        g = torch.Generator().manual_seed(5)
        x = torch.randint(0, 50, (1, T), generator=g)
        with torch.no_grad():
            base = m(x)
            worst_before, min_after = 0.0, float("inf")
            for t in range(T):
                x2 = x.clone()
                x2[0, t] = (x[0, t] + 1 + t) % 50
                out = m(x2)
                if t > 0:
                    worst_before = max(worst_before, (out[0, :t] - base[0, :t]).abs().max().item())
                min_after = min(min_after, (out[0, t:] - base[0, t:]).abs().max().item())
        check(worst_before == 0.0 and min_after > 1e-6,
              "mixers=%s norm=%s: max change before t %.1e, min change at/after t %.1e"
              % (cfg["mixers"], cfg["norm"], worst_before, min_after))


def test_adamw_formula():
    print("torch AdamW = docs/model.md formula; decay groups")
    cfg = variant(tie_head=False, d_model=8, n_head=2, d_ff=12, vocab_size=11, rank=4, max_len=10)
    m = random_model(cfg, 6)
    x = torch.randint(0, 11, (2, 9))
    y = torch.randint(0, 11, (2, 9))
    init = {k: v.clone() for k, v in m.state_dict().items()}
    groups = make_fixture.param_groups(m, 0.1)
    decay_names = {n for n, p in m.named_parameters() if any(p is q for q in groups[0]["params"])}
    want = {n for n, p in m.named_parameters() if p.dim() == 2 and n not in ("tok_emb.weight", "pos_emb.weight")}
    check(decay_names == want and "lm_head.weight" in want and "blocks.0.mix.red.weight" in want,
          "decay group = 2-D weights except embeddings (%d tensors)" % len(want))
    opt = torch.optim.AdamW(groups, lr=1e-2, betas=(0.9, 0.95), eps=1e-8)
    for _ in range(3):
        opt.zero_grad()
        make_fixture.task_loss(m, x, y, None)[1].backward()
        opt.step()
    m2 = random_model(cfg, 6)
    m2.load_state_dict(init)
    st = {n: (torch.zeros_like(p), torch.zeros_like(p)) for n, p in m2.named_parameters()}
    lr, b1, b2, e = 1e-2, 0.9, 0.95, 1e-8
    for s in range(1, 4):
        m2.zero_grad()
        make_fixture.task_loss(m2, x, y, None)[1].backward()
        with torch.no_grad():
            for n, p in m2.named_parameters():
                mm, vv = st[n]
                if n in want:
                    p.mul_(1 - lr * 0.1)
                mm.mul_(b1).add_((1 - b1) * p.grad)
                vv.mul_(b2).add_((1 - b2) * p.grad ** 2)
                p.sub_((lr / (1 - b1 ** s)) * mm / (vv.sqrt() / math.sqrt(1 - b2 ** s) + e))
    err = max((a - b).abs().max().item() for a, b in zip(m.parameters(), m2.parameters()))
    check(err < 1e-9, "3 steps, max param diff %.1e" % err)


def test_cli(tmp):
    print("make_fixture.py / score.py on a random tiny checkpoint")
    ck = os.path.join(tmp, "tiny.safetensors")
    m = random_model(TINY, 7, scale=0.2)
    write_ckpt(ck, m, TINY)
    with open(os.path.join(tmp, "tiny_config.json"), "w") as f:
        json.dump(TINY, f)
    fx = os.path.join(tmp, "fixture.safetensors")
    B, T, K, steps = 3, 17, 5, 4
    cmd = [PY, os.path.join(HERE, "make_fixture.py"), "--init", ck, "--out", fx, "--batch", str(B),
           "--seq-len", str(T), "--seed", "123", "--ignore-tail", str(K), "--steps", str(steps),
           "--lr", "1e-3", "--wd", "0.1"]
    r = subprocess.run(cmd, capture_output=True, text=True, env=ENV)
    print("    " + (r.stdout + r.stderr).strip().replace("\n", "\n    "))
    check(r.returncode == 0, "make_fixture.py exit 0")
    if r.returncode != 0:
        return
    fxt, meta = st_io.read(fx)
    pnames = [n for n, _ in doc_names(TINY)]
    order = ["inputs", "targets", "logits", "loss"] + ["grad." + n for n in pnames] + ["adamw_losses"] + \
        ["final." + n for n in pnames]
    check(list(fxt) == order, "fixture tensor order (%d tensors)" % len(order))
    check(fxt["inputs"].dtype == np.int32 and fxt["inputs"].shape == (B, T) and fxt["targets"].dtype == np.int32
          and fxt["logits"].dtype == np.float32 and fxt["logits"].shape == (B, T, 50) and fxt["loss"].shape == (1,)
          and fxt["adamw_losses"].shape == (steps,), "fixture dtypes/shapes")
    tok = np.random.RandomState(123).randint(0, 50, size=(B, T + 1))
    tg = tok[:, 1:].copy()
    tg[B - 1, T - K:] = -1
    check(np.array_equal(fxt["inputs"], tok[:, :-1]) and np.array_equal(fxt["targets"], tg), "batch and ignore-tail")
    check(fxt["adamw_losses"][0] == fxt["loss"][0], "adamw_losses[0] == loss")
    check(bool(np.all(np.diff(fxt["adamw_losses"]) < 0)), "adamw losses decrease: %s" % fxt["adamw_losses"])
    check(meta == {"lr": "0.001", "beta1": "0.9", "beta2": "0.95", "eps": "1e-08", "weight_decay": "0.1",
                   "steps": str(steps), "config": json.dumps(TINY)}, "fixture metadata")
    # independent recomputation in-process
    model, _ = load_checkpoint(ck)
    lg = model(torch.from_numpy(tok[:, :-1]))
    ls = F.cross_entropy(lg.view(-1, 50), torch.from_numpy(tg).view(-1), ignore_index=-1)
    ls.backward()
    check(np.abs(lg.detach().numpy() - fxt["logits"]).max() < 1e-5 and abs(ls.item() - fxt["loss"][0]) < 1e-6,
          "logits/loss reproduce (loss %.6f)" % ls.item())
    gerr = max(np.abs(p.grad.numpy() - fxt["grad." + n]).max() for n, p in model.named_parameters())
    check(gerr < 1e-6, "grads reproduce (max err %.1e)" % gerr)
    check(np.abs(fxt["grad.pos_emb.weight"][T:]).max() == 0 and np.abs(fxt["grad.pos_emb.weight"][:T]).max() > 0,
          "pos_emb grad zero beyond T")

    # score.py
    tokf = os.path.join(tmp, "tokens.txt")
    rng = np.random.RandomState(9)
    lines = [rng.randint(0, 50, size=n) for n in (21, 5, 1, 2, 13)]
    with open(tokf, "w") as f:
        for i, ln in enumerate(lines):
            f.write(" ".join(map(str, ln)) + "\n")
            if i == 1:
                f.write("\n   \n")
    r = subprocess.run([PY, os.path.join(HERE, "score.py"), "--ckpt", ck, "--tokens", tokf, "--json"],
                       capture_output=True, text=True, env=ENV)
    print("    " + (r.stdout + r.stderr).strip())
    check(r.returncode == 0 and len(r.stdout.strip().splitlines()) == 1, "score.py --json: one line, exit 0")
    if r.returncode == 0:
        js = json.loads(r.stdout)
        tot, n = 0.0, 0
        with torch.no_grad():
            for ln in lines:
                if len(ln) < 2:
                    continue
                x = torch.from_numpy(ln).long()
                tot += F.cross_entropy(model(x[None, :-1])[0], x[1:], reduction="sum").item()
                n += len(ln) - 1
        check(js["tokens"] == n == 20 + 4 + 1 + 12 and abs(js["loss"] - tot / n) < 1e-12
              and abs(js["ppl"] - math.exp(tot / n)) < 1e-9, "score: tokens=%d, token-weighted loss" % n)
    r = subprocess.run([PY, os.path.join(HERE, "score.py"), "--ckpt", ck, "--tokens", tokf],
                       capture_output=True, text=True, env=ENV)
    print("    " + (r.stdout + r.stderr).strip())
    check(r.returncode == 0, "score.py human line")

    # strict load: a checkpoint missing a tensor and with a wrong shape must fail clearly
    bad = os.path.join(tmp, "bad.safetensors")
    for what, name in (("missing", "blocks.1.mix.proj.bias"), ("misshapen", "ln_f.bias"), ("unknown", "extra.weight")):
        sd = OrderedDict((k, v.detach().float().numpy()) for k, v in m.state_dict().items())
        if what == "missing":
            del sd[name]
        else:
            sd[name] = np.zeros(31 if what == "misshapen" else 2, np.float32)
        st_io.write(bad, sd, {"config": json.dumps(TINY)})
        r = subprocess.run(cmd[:3] + [bad] + cmd[4:], capture_output=True, text=True, env=ENV)
        msg = r.stdout + r.stderr
        print("    " + msg.strip().replace("\n", "\n    "))
        check(r.returncode != 0 and name in msg, "a checkpoint with a %s tensor rejected, naming it" % what)


def main():
    keep = "--keep" in sys.argv[1:]
    tmp = tempfile.mkdtemp(prefix="grassflow_torchref_", dir="/tmp")
    try:
        test_st_io(tmp)
        test_names()
        test_mixers_vs_naive()
        test_gradcheck()
        test_causality()
        test_adamw_formula()
        test_cli(tmp)
    finally:
        if keep:
            print("kept", tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    print("selftest: %s" % ("PASS" if not FAILS else "FAIL (%d): %s" % (len(FAILS), FAILS)))
    sys.exit(1 if FAILS else 0)


if __name__ == "__main__":
    main()
