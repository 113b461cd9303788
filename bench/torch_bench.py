"""PyTorch twins of the grassflow benchmarks, on the same machine, models and shapes.

The models are the test reference (python/grassflow/torch_model.py) in float32, built from the exact config
that `grassflow info --json` prints, through its MIXERS table (a mixer registered there has a twin here with
no change to this file). Two mixers get a faster PyTorch form of the same function (`lean`): Grassmann
(all offsets at once) and attention (PyTorch's own torch.nn.functional._scaled_dot_product_attention);
every other mixer runs as its reference class. Each result names the classes that ran ("twin_classes").
A config the reference cannot build (a mixer or key missing from MIXERS) prints {"skipped": why}.
Prints one JSON object per run, like `grassflow bench --json`.

    /usr/bin/python3 bench/torch_bench.py train --config CFG.json --batch 8 --seq-len 128 --steps 5
    /usr/bin/python3 bench/torch_bench.py mixer --config CFG.json --seq-lens 256,1024  (layer 0's mixer)
    /usr/bin/python3 bench/torch_bench.py generate --config CFG.json --tokens 16
"""
import argparse
import copy
import json
import os
import resource
import statistics
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "parity", "torch_ref"))
from model import MIXERS, GrassmannMixer, SelfAttention, build_model, normalize_config  # noqa: E402


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


class LeanSelfAttention(SelfAttention):
    """The reference attention with PyTorch's own attention kernel (1.13's
    torch.nn.functional._scaled_dot_product_attention, is_causal for the causal form; on the CPU it is
    PyTorch's composite matmul-softmax-matmul, the fused flash kernels being CUDA-only in 1.13). A padded
    batch takes the reference path."""

    def forward(self, h, mask=None):
        if mask is not None:
            return super().forward(h, mask)
        B, T, d = h.shape
        H = self.n_head
        q, k, v = (t.reshape(B, T, H, d // H).transpose(1, 2) for t in self.qkv(h).split(d, dim=-1))
        y = F._scaled_dot_product_attention(q, k, v, None, 0.0, False, self.causal)[0]
        return self.proj(y.transpose(1, 2).reshape(B, T, d))


# reference class -> its lean form (same parameters, same function); other mixers run as they are
LEAN = {GrassmannMixer: LeanGrassmannMixer, SelfAttention: LeanSelfAttention}


def same_function(child, cls):
    """Whether the lean class computes what this instance computes (float64 copies, random input of 20
    positions): a configuration the lean form does not cover (bidirectional Grassmann, its window or heads
    keys, an ablation's own tensors) keeps the reference class."""
    d = next(m for m in child.modules() if isinstance(m, torch.nn.Linear)).in_features
    ref = copy.deepcopy(child).double()
    fast = copy.deepcopy(child).double()
    fast.__class__ = cls
    x = torch.randn(2, 20, d, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    try:
        with torch.no_grad():
            return (ref(x) - fast(x)).abs().max().item() <= 1e-9
    except (ValueError, AttributeError, RuntimeError, TypeError):
        return False


def lean(model):
    """Swap every reference mixer of model that has a lean form computing the same function for it,
    parameters kept."""
    for mod in list(model.modules()):
        for name, child in list(mod.named_children()):
            if type(child) in LEAN and same_function(child, LEAN[type(child)]):
                cls = LEAN[type(child)]
                new = cls.__new__(cls)
                new.__dict__ = child.__dict__
                setattr(mod, name, new)
    return model


def twin_classes(model):
    """The mixer classes that run in model (its blocks' `mix` children, or model itself)."""
    found = {type(c).__name__ for m in model.modules() for n, c in m.named_children() if n == "mix"}
    return sorted(found) or [type(model).__name__]


def check_lean():
    """The lean mixers equal the reference (float64; Grassmann with T shorter and longer than the largest
    offset; attention causal and bidirectional)."""
    torch.manual_seed(0)
    for causal in (True, False):
        ref = SelfAttention(16, 4, causal).double()
        fast = lean(torch.nn.Sequential(SelfAttention(16, 4, causal).double()))[0]
        fast.load_state_dict(ref.state_dict())
        x = torch.randn(2, 9, 16, dtype=torch.float64)
        err = (ref(x) - fast(x)).abs().max().item()
        if not err <= 1e-12:  # a NaN differs too
            sys.exit("torch_bench: the lean attention twin differs from the reference by %g" % err)
    for T, offs in ((5, [1, 2, 4, 8]), (20, [1, 2, 4, 8, 12, 16]), (12, [16])):
        ref = GrassmannMixer(16, 4, offs, 1e-8, False).double()
        fast = lean(torch.nn.Sequential(GrassmannMixer(16, 4, offs, 1e-8, False).double()))[0]
        fast.load_state_dict(ref.state_dict())
        x = torch.randn(2, T, 16, dtype=torch.float64)
        err = (ref(x) - fast(x)).abs().max().item()
        if not err <= 1e-12:  # a NaN differs too
            sys.exit("torch_bench: the lean Grassmann twin differs from the reference by %g" % err)


def load_cfg(path):
    with open(path) as f:
        obj = json.load(f)
    return obj.get("config", obj)


def twin(cfg, a):
    model = build_model(cfg).float()
    return lean(model) if a.twin == "lean" else model


def onednn_kernels(fn):
    """Run fn once with oneDNN's verbose mode on and return what it said: the ISA line and the
    implementations its primitives ran (e.g. brg:avx512_core_amx_bf16), so a table can say which kernel
    ran. The verbose lines go to file descriptor 1; they are caught there, not printed."""
    import tempfile
    sys.stdout.flush()
    saved, tmp = os.dup(1), tempfile.TemporaryFile(mode="w+")
    os.dup2(tmp.fileno(), 1)
    try:
        with torch.backends.mkldnn.verbose(torch.backends.mkldnn.VERBOSE_ON):
            fn()
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)
    tmp.seek(0)
    isa, impls = "", set()
    for line in tmp:
        f = line.strip().split(",")
        if len(f) > 3 and f[1] == "info" and f[2] == "cpu" and f[3].startswith("isa:"):
            isa = f[3][4:]
        elif len(f) > 5 and f[1] == "exec":
            impls.add("%s %s" % (f[3], f[4]))
    return {"onednn_isa": isa, "onednn_kernels": sorted(impls)}


def bench_train(a, cfg):
    torch.manual_seed(0)
    model = twin(cfg, a)
    model.train()
    bf16 = a.precision == "bf16"  # PyTorch's bf16 autocast on the CPU: matmuls in bf16 through oneDNN
    V, B, L = cfg["vocab_size"], a.batch, a.seq_len
    classify = normalize_config(cfg)["task"] == "classify"  # one label per sequence, as `grassflow bench train`
    C = normalize_config(cfg)["head"].get("n_classes", V)
    opt = torch.optim.AdamW(model.parameters(), lr=6e-4, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.01)
    x = torch.randint(0, V, (B, L))
    y = torch.randint(0, C, (B,) if classify else (B, L))
    S = cfg.get("source_vocab", 0)  # an encoder-decoder reads a source as long as its target, as `grassflow bench train`
    src = torch.randint(0, S, (B, L)) if S > 0 else None
    ts, tfs, tbs, tos = [], [], [], []
    def fwd():
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            logits = model(x, source=src)
            return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), y.view(-1))
    kernels = onednn_kernels(lambda: fwd().backward()) if bf16 else {}
    prof = torch.autograd.profiler.profile() if a.profile else None
    for s in range(-1, a.steps):
        if prof is not None and s == 0:
            prof.__enter__()
        t0 = time.perf_counter()
        loss = fwd()
        t1 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        t2 = time.perf_counter()
        opt.step()
        t3 = time.perf_counter()
        if s >= 0:  # medians over the steps, like `grassflow bench train`
            ts.append(t3 - t0), tfs.append(t1 - t0), tbs.append(t2 - t1), tos.append(t3 - t2)
    if prof is not None:  # where the twin's time goes, on stderr (the JSON line stays alone on stdout)
        prof.__exit__(None, None, None)
        print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=20), file=sys.stderr)
    med = statistics.median
    return {"bench": "train", "impl": "pytorch", "batch": B, "seq_len": L, "steps": a.steps,
            "tokens_per_s": B * L / med(ts), "ms_forward": 1e3 * med(tfs), "ms_backward": 1e3 * med(tbs),
            "ms_optimizer": 1e3 * med(tos), "threads": torch.get_num_threads(), "torch": torch.__version__,
            "twin": a.twin, "twin_classes": twin_classes(model), "env": twin_env(), "precision": a.precision, **kernels}


FLUSH_DENORMAL = False  # set by main


def twin_env():
    """The environment PyTorch ran in (bench/run.sh gives it its best one; see docs/bench/README.md)."""
    keys = ("OPENBLAS_CORETYPE", "LD_LIBRARY_PATH", "LD_PRELOAD", "MALLOC_CONF", "OMP_NUM_THREADS")
    env = " ".join("%s=%s" % (k, os.environ[k]) for k in keys if os.environ.get(k))
    return env + (" torch.set_flush_denormal(True)" if FLUSH_DENORMAL else "")


def rss_peak():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def mixer_module(a, cfg):
    """Layer 0's mixer of cfg, built as the reference model builds it (torch_model.MIXERS)."""
    c = normalize_config(cfg)
    lc = c["layers"][0]
    mod = MIXERS[lc["mixer"]]["build"](c["d_model"], lc, c["direction"] == "bidirectional", c)
    if a.twin == "lean":
        mod = lean(torch.nn.Sequential(mod))[0]
    return lc["mixer"], c["d_model"], mod.float()


def time_mixer(a, mod, x):
    """Best forward and backward times (s) of a.reps runs after a warm-up."""
    best_f = best_b = float("inf")
    for r in range(a.reps + 1):
        t0 = time.perf_counter()
        y = mod(x)
        t1 = time.perf_counter()
        y.backward(torch.ones_like(y))
        t2 = time.perf_counter()
        if r:
            best_f, best_b = min(best_f, t1 - t0), min(best_b, t2 - t1)
    return best_f, best_b


def bench_mixer(a, cfg):
    """Layer 0's mixer at each length. The memory rule (PyTorch's memory cannot be asked beforehand): a
    length is skipped when the growth of the peak resident memory over the sweep so far, scaled as the
    square of the length from the last length measured (quadratic: safe for a linear mixer too),
    exceeds --max-bytes."""
    name, d, mod = mixer_module(a, cfg)
    out, base, last = [], rss_peak(), None
    for L in [int(s) for s in a.seq_lens.split(",")]:
        if last:
            est = max(rss_peak() - base, 1) * (L / last) ** 2
            if est > a.max_bytes:
                out.append({"seq_len": L, "skipped": "memory", "estimated_bytes": est, "max_bytes": a.max_bytes})
                continue
        x = torch.randn(a.batch, L, d, requires_grad=True)
        try:
            best_f, best_b = time_mixer(a, mod, x)
        except RuntimeError as e:  # out of memory at long lengths
            out.append({"seq_len": L, "error": str(e)[:200]})
            break
        N, last = a.batch * L, L
        out.append({"seq_len": L, "us_per_token_forward": 1e6 * best_f / N, "us_per_token_backward": 1e6 * best_b / N,
                    "us_per_token": 1e6 * (best_f + best_b) / N, "max_rss_bytes": rss_peak()})
        print(json.dumps(out[-1]), file=sys.stderr, flush=True)
    return {"bench": "mixer", "impl": "pytorch", "mixer": name, "batch": a.batch, "d": d, "results": out,
            "threads": torch.get_num_threads(), "twin_classes": [type(mod).__name__], "env": twin_env()}


def bench_generate(a, cfg):
    model = twin(cfg, a).eval()
    if a.weights == "int8":  # PyTorch's dynamic int8: every nn.Linear's weights int8, activations per call
        model = torch.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)
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
            "threads": torch.get_num_threads(), "weights": a.weights,
            "int8_modules": sum(1 for mod in model.modules() if "quantized" in type(mod).__module__)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("task", choices=["train", "mixer", "generate"])
    ap.add_argument("--config", required=True, help="JSON from `grassflow info --json` (or a bare config)")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq-len", type=int, default=128)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--seq-lens", default="256,1024,4096,8192")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--max-bytes", type=float, default=4 * 2 ** 30, help="mixer: memory budget (see bench_mixer)")
    ap.add_argument("--tokens", type=int, default=16)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--precision", default="fp32", choices=["fp32", "bf16"], help="train: bf16 autocast")
    ap.add_argument("--weights", default="fp32", choices=["fp32", "int8"], help="generate: dynamic int8")
    ap.add_argument("--profile", action="store_true",
                    help="train: PyTorch's profiler over the timed steps, its table of ops on stderr")
    ap.add_argument("--twin", default="lean", choices=["lean", "reference"],
                    help="Grassmann mixer: lean (all offsets at once, mean before projection; default) "
                         "or the literal test reference (per-offset projection)")
    ap.add_argument("--keep-denormals", action="store_true",
                    help="leave denormal floats on (the default flushes them, PyTorch's best setting here)")
    a = ap.parse_args()
    # Denormals flushed to zero (FTZ/DAZ), before any thread of PyTorch's pool exists (each thread keeps the
    # mode it started with): on the Intel Xeons these machines run on, the twin's backward meets denormal
    # operands (softmax tails over a large vocabulary) and each costs a microcode assist: word-level
    # transformer-6L B=8 trained at 111-240 tokens/s with them and 1,959 without, the character Transformer
    # at 13,000-14,700 and 15,900-16,200. grassflow's exp never returns a denormal (compute/fastmath.h).
    global FLUSH_DENORMAL
    FLUSH_DENORMAL = not a.keep_denormals and torch.set_flush_denormal(True)
    check_lean()
    torch.set_num_threads(a.threads)
    cfg = load_cfg(a.config)
    try:
        normalize_config(cfg)
    except ValueError as e:  # a mixer or key the reference does not have (yet)
        print(json.dumps({"bench": a.task, "impl": "pytorch", "skipped": "no PyTorch twin: python/grassflow/"
                          "torch_model.py cannot build this config (%s)" % e}))
        return
    res = {"train": bench_train, "mixer": bench_mixer, "generate": bench_generate}[a.task](a, cfg)
    print(json.dumps(res))


if __name__ == "__main__":
    main()
