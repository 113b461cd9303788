"""PyTorch twins of the grassflow benchmarks, on the same machine, models and shapes.

The models are the test reference (python/grassflow/torch_model.py) in float32, built from the exact config
that `grassflow info --json` prints. Prints one JSON object per run, like `grassflow bench --json`.

    /usr/bin/python3 bench/torch_bench.py train --config CFG.json --batch 8 --seq-len 128 --steps 5
    /usr/bin/python3 bench/torch_bench.py mixer --config CFG.json --mixer grassmann --seq-lens 256,1024
    /usr/bin/python3 bench/torch_bench.py generate --config CFG.json --tokens 16
"""
import argparse
import json
import os
import resource
import statistics
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "torch_ref"))
from model import CausalSelfAttention, GrassmannMixer, build_model, normalize_config  # noqa: E402


class LeanGrassmannMixer(GrassmannMixer):
    """The same function as the reference mixer (same parameters), written for speed in PyTorch.

    All offsets at once and the mean taken before the C -> d projection, as grassflow does. Rows
    t < D see a zero partner, so their Plucker vector is 0 and 0 / max(0, eps) = 0: no mask is needed.
    """

    def forward(self, h, mask=None):
        if mask is not None or self.bidirectional:
            raise ValueError("the lean twin is causal and unpadded, as the benchmark's models are")
        B, T, d = h.shape
        z = self.red(h)
        offs = [D for D in self.offsets if D < T]
        if not offs:
            g = h.new_zeros(B, T, d)
        else:
            zp = torch.stack([F.pad(z[:, :T - D, :], (0, 0, D, 0)) for D in offs])  # (K, B, T, r)
            zt = z.unsqueeze(0)
            i, j = self.pair_i, self.pair_j
            p = zt[..., i] * zp[..., j] - zt[..., j] * zp[..., i]  # (K, B, T, C)
            p = p / torch.clamp_min(torch.linalg.norm(p, dim=-1, keepdim=True), self.eps)
            p = torch.where((zt == zp).all(dim=-1, keepdim=True), torch.zeros_like(p), p)  # identical partner
            t = torch.arange(T, device=h.device)
            cnt = sum((t >= D).to(h.dtype) for D in offs)  # (T,)
            pbar = p.sum(0) / torch.clamp_min(cnt, 1.0)[None, :, None]
            g = self.plucker(pbar) * (cnt > 0).to(h.dtype)[None, :, None]
        a = torch.sigmoid(self.gate(torch.cat([h, g], dim=-1)))
        m = a * h + (1.0 - a) * g
        return self.out(m) if self.out is not None else m


def lean(model):
    """Swap every reference Grassmann mixer of model for the lean one, parameters kept."""
    for mod in list(model.modules()):
        for name, child in list(mod.named_children()):
            if type(child) is GrassmannMixer:
                new = LeanGrassmannMixer.__new__(LeanGrassmannMixer)
                new.__dict__ = child.__dict__
                setattr(mod, name, new)
    return model


def check_lean():
    """The lean mixer equals the reference (float64, T shorter and longer than the largest offset)."""
    torch.manual_seed(0)
    for T, offs in ((5, [1, 2, 4, 8]), (20, [1, 2, 4, 8, 12, 16]), (12, [16])):
        ref = GrassmannMixer(16, 4, offs, 1e-8, False).double()
        fast = lean(torch.nn.Sequential(GrassmannMixer(16, 4, offs, 1e-8, False).double()))[0]
        fast.load_state_dict(ref.state_dict())
        x = torch.randn(2, T, 16, dtype=torch.float64)
        err = (ref(x) - fast(x)).abs().max().item()
        if err > 1e-12:
            sys.exit("torch_bench: the lean Grassmann twin differs from the reference by %g" % err)


def load_cfg(path):
    with open(path) as f:
        obj = json.load(f)
    return obj.get("config", obj)


def twin(cfg, a):
    model = build_model(cfg).float()
    return lean(model) if a.twin == "lean" else model


def bench_train(a, cfg):
    torch.manual_seed(0)
    model = twin(cfg, a)
    model.train()
    V, B, L = cfg["vocab_size"], a.batch, a.seq_len
    opt = torch.optim.AdamW(model.parameters(), lr=6e-4, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.01)
    x = torch.randint(0, V, (B, L))
    y = torch.randint(0, V, (B, L))
    ts, tfs, tbs, tos = [], [], [], []
    for s in range(-1, a.steps):
        t0 = time.perf_counter()
        logits = model(x)
        loss = torch.nn.functional.cross_entropy(logits.view(-1, V), y.view(-1))
        t1 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        t2 = time.perf_counter()
        opt.step()
        t3 = time.perf_counter()
        if s >= 0:  # medians over the steps, like `grassflow bench train`
            ts.append(t3 - t0), tfs.append(t1 - t0), tbs.append(t2 - t1), tos.append(t3 - t2)
    med = statistics.median
    return {"bench": "train", "impl": "pytorch", "batch": B, "seq_len": L, "steps": a.steps,
            "tokens_per_s": B * L / med(ts), "ms_forward": 1e3 * med(tfs), "ms_backward": 1e3 * med(tbs),
            "ms_optimizer": 1e3 * med(tos), "threads": torch.get_num_threads(), "torch": torch.__version__,
            "twin": a.twin, "env": twin_env()}


def twin_env():
    """The environment PyTorch ran in (bench/run.sh gives it its best one; see docs/bench/README.md)."""
    keys = ("OPENBLAS_CORETYPE", "LD_LIBRARY_PATH", "LD_PRELOAD", "MALLOC_CONF", "OMP_NUM_THREADS")
    return " ".join("%s=%s" % (k, os.environ[k]) for k in keys if os.environ.get(k))


def bench_mixer(a, cfg):
    d = cfg["d_model"]
    lc = normalize_config(cfg)["layers"][0]
    if a.mixer == "grassmann":
        mod = GrassmannMixer(d, lc["rank"], lc["offsets"], lc["plucker_eps"], lc["extra_proj"])
        if a.twin == "lean":
            mod = lean(torch.nn.Sequential(mod))[0]
    else:
        mod = CausalSelfAttention(d, lc.get("n_head", 4))
    mod = mod.float()
    out = []
    for L in [int(s) for s in a.seq_lens.split(",")]:
        x = torch.randn(a.batch, L, d, requires_grad=True)
        best_f = best_b = float("inf")
        try:
            for r in range(a.reps + 1):
                t0 = time.perf_counter()
                y = mod(x)
                t1 = time.perf_counter()
                y.backward(torch.ones_like(y))
                t2 = time.perf_counter()
                if r:
                    best_f, best_b = min(best_f, t1 - t0), min(best_b, t2 - t1)
        except RuntimeError as e:  # out of memory at long lengths
            out.append({"seq_len": L, "error": str(e)[:200]})
            break
        N = a.batch * L
        out.append({"seq_len": L, "us_per_token_forward": 1e6 * best_f / N, "us_per_token_backward": 1e6 * best_b / N,
                    "us_per_token": 1e6 * (best_f + best_b) / N,
                    "max_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024})
        print(json.dumps(out[-1]), file=sys.stderr, flush=True)
    return {"bench": "mixer", "impl": "pytorch", "mixer": a.mixer, "batch": a.batch, "d": d, "results": out,
            "threads": torch.get_num_threads()}


def bench_generate(a, cfg):
    model = twin(cfg, a).eval()
    W = cfg["max_len"]
    x = torch.randint(0, cfg["vocab_size"], (1, W))
    t = 0.0
    with torch.no_grad():
        for i in range(-1, a.tokens):
            t0 = time.perf_counter()
            model(x)
            if i >= 0:
                t += time.perf_counter() - t0
    return {"bench": "generate", "impl": "pytorch", "window": W, "tokens_per_s": a.tokens / t,
            "threads": torch.get_num_threads()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("task", choices=["train", "mixer", "generate"])
    ap.add_argument("--config", required=True, help="JSON from `grassflow info --json` (or a bare config)")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq-len", type=int, default=128)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--mixer", default="grassmann", choices=["grassmann", "attention"])
    ap.add_argument("--seq-lens", default="256,1024,4096,8192")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--tokens", type=int, default=16)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--twin", default="lean", choices=["lean", "reference"],
                    help="Grassmann mixer: lean (all offsets at once, mean before projection; default) "
                         "or the literal test reference (per-offset projection)")
    a = ap.parse_args()
    check_lean()
    torch.set_num_threads(a.threads)
    cfg = load_cfg(a.config)
    res = {"train": bench_train, "mixer": bench_mixer, "generate": bench_generate}[a.task](a, cfg)
    print(json.dumps(res))


if __name__ == "__main__":
    main()
