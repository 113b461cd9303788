#!/usr/bin/python3
"""Parity fixture from a grassflow checkpoint: logits, loss, gradients and a short AdamW run (float64).

Usage: make_fixture.py --init IN.safetensors --out OUT.safetensors --batch B --seq-len T --seed S
                       [--ignore-tail K] [--pad] [--steps 10] [--lr 1e-3] [--wd 0.1] [--src-len S]
       make_fixture.py --jobs FILE    one fixture per line of FILE, each line the options above
                                      (one process for all: importing torch is most of a small fixture's time)

The batch follows the model's config: token ids or float vectors (input "vectors"), next-token targets
(task lm) or one label per row (task classify). --pad gives the rows random lengths and a padding mask
(lm targets at padded positions are -1; padded inputs are random, so they must not matter). An
encoder-decoder (source_vocab > 0) also gets a source of S ids per row (--src-len, default T + 3), padded
to random lengths with --pad as well (the first row full).
"""
import argparse
import os
import shlex
import sys
from collections import OrderedDict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import st_io  # noqa: E402
from model import load_checkpoint  # noqa: E402


def make_batch(cfg, B, T, seed, K, pad):
    rs = np.random.RandomState(seed)
    V = cfg["vocab_size"]
    mask = None
    if pad:  # row b has lengths[b] real positions (at least 1; the first row is full)
        lengths = rs.randint(1, T + 1, size=B)
        lengths[0] = T
        mask = (np.arange(T)[None, :] < lengths[:, None]).astype(np.int32)
    if cfg["input"] == "vectors":
        inputs = rs.uniform(-1.0, 1.0, size=(B, T, cfg["d_input"])).astype(np.float32)
    if cfg["task"] == "classify":
        if cfg["input"] == "tokens":
            inputs = rs.randint(0, V, size=(B, T))
        targets = rs.randint(0, cfg["head"]["n_classes"], size=B)
        if K > 0:
            targets[B - 1] = -1
        return inputs, targets, mask
    tokens = rs.randint(0, V, size=(B, T + 1))
    if cfg["input"] == "tokens":
        inputs = tokens[:, :-1].copy()
    targets = tokens[:, 1:].copy()
    if K > 0:
        targets[B - 1, T - K:] = -1
    if mask is not None:
        targets[mask == 0] = -1
    return inputs, targets, mask


def make_segments(cfg, B, T, seed):
    """A sentence pair per row: type 0 up to a random split, then 1 (None without segments)."""
    if cfg.get("segments", 0) < 1:
        return None
    rs = np.random.RandomState(seed + 1)
    split = rs.randint(1, T + 1, size=B)
    return (np.arange(T)[None, :] >= split[:, None]).astype(np.int32) % cfg["segments"]


def make_source(cfg, B, S, seed, pad):
    """An encoder-decoder's source ids (B, S) and their mask (None without --pad); (None, None) otherwise."""
    if cfg["source_vocab"] < 1:
        return None, None
    rs = np.random.RandomState(seed + 2)
    source, mask = rs.randint(0, cfg["source_vocab"], size=(B, S)), None
    if pad:
        lengths = rs.randint(1, S + 1, size=B)
        lengths[0] = S
        mask = (np.arange(S)[None, :] < lengths[:, None]).astype(np.int32)
    return source, mask


def task_loss(model, inp, tgt, mask, seg=None, src=None):
    logits = model(inp, mask, seg) if src is None else model(inp, mask, seg, *src)
    V = logits.shape[-1]
    return logits, F.cross_entropy(logits.reshape(-1, V), tgt.reshape(-1), ignore_index=-1,
                                   label_smoothing=model.cfg.get("label_smoothing", 0.0))


def param_groups(model, wd):
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        if name.endswith(".weight") and p.dim() == 2 and name not in (
                "tok_emb.weight", "pos_emb.weight", "seg_emb.weight", "src_emb.weight", "src_pos.weight"):
            decay.append(p)
        else:
            no_decay.append(p)
    return [{"params": decay, "weight_decay": wd}, {"params": no_decay, "weight_decay": 0.0}]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--init", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--seq-len", type=int, required=True)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--ignore-tail", type=int, default=0)
    ap.add_argument("--pad", action="store_true")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--wd", type=float, default=0.1)
    ap.add_argument("--src-len", type=int, default=0)
    a = ap.parse_args(argv)
    B, T, K = a.batch, a.seq_len, a.ignore_tail
    if B < 1 or T < 1 or a.steps < 1:
        ap.error("--batch, --seq-len and --steps must be >= 1")
    if K < 0 or K > T:
        ap.error("--ignore-tail must be in [0, seq-len]")

    torch.set_grad_enabled(True)
    try:
        model, cfg_str = load_checkpoint(a.init)
    except ValueError as e:
        sys.exit("make_fixture: %s: %s" % (a.init, e))
    cfg = model.cfg
    if T > cfg["max_len"] and cfg["pos"] == "learned":
        ap.error("--seq-len %d > max_len %d (learned positions)" % (T, cfg["max_len"]))
    V = cfg["vocab_size"]
    init_state = {k: v.detach().clone() for k, v in model.state_dict().items()}

    inputs, targets, mask_np = make_batch(cfg, B, T, a.seed, K, a.pad)
    inp = torch.from_numpy(inputs).double() if cfg["input"] == "vectors" else torch.from_numpy(inputs).long()
    tgt = torch.from_numpy(targets).long()
    mask = None if mask_np is None else torch.from_numpy(mask_np).bool()
    seg_np = make_segments(cfg, B, T, a.seed)
    seg = None if seg_np is None else torch.from_numpy(seg_np).long()
    source_np, smask_np = make_source(cfg, B, a.src_len or T + 3, a.seed, a.pad)
    src = None if source_np is None else (torch.from_numpy(source_np).long(),
                                          None if smask_np is None else torch.from_numpy(smask_np).bool())

    model.eval()
    model.zero_grad(set_to_none=True)
    logits, loss = task_loss(model, inp, tgt, mask, seg, src)
    loss.backward()

    out = OrderedDict()
    if cfg["input"] == "vectors":
        out["vectors"] = inputs.astype(np.float32)
    else:
        out["inputs"] = inputs.astype(np.int32)
    out["targets"] = targets.astype(np.int32)
    if mask_np is not None:
        out["mask"] = mask_np.astype(np.int32)
    if seg_np is not None:
        out["segments"] = seg_np.astype(np.int32)
    if source_np is not None:
        out["source"] = source_np.astype(np.int32)
    if smask_np is not None:
        out["source_mask"] = smask_np.astype(np.int32)
    out["logits"] = logits.detach().numpy().astype(np.float32)
    out["loss"] = np.array([loss.item()], dtype=np.float32)
    for name, p in model.named_parameters():
        g = torch.zeros_like(p) if p.grad is None else p.grad
        out["grad." + name] = g.detach().numpy().astype(np.float32)

    # AdamW from the loaded weights, same batch every step
    model.load_state_dict(init_state, strict=True)
    model.zero_grad(set_to_none=True)
    opt = torch.optim.AdamW(param_groups(model, a.wd), lr=a.lr, betas=(0.9, 0.95), eps=1e-8)
    losses = []
    for _ in range(a.steps):
        opt.zero_grad()
        _, l = task_loss(model, inp, tgt, mask, seg, src)
        losses.append(l.item())
        l.backward()
        opt.step()
    out["adamw_losses"] = np.array(losses, dtype=np.float32)
    params = dict(model.named_parameters())
    for name, p in model.state_dict().items():  # buffers too (a performer's omega): never trained
        if name not in params and not torch.equal(p, init_state[name]):
            sys.exit("make_fixture: buffer %s changed during the AdamW steps" % name)
        out["final." + name] = p.detach().numpy().astype(np.float32)

    meta = OrderedDict([("lr", str(a.lr)), ("beta1", "0.9"), ("beta2", "0.95"), ("eps", "1e-08"),
                        ("weight_decay", str(a.wd)), ("steps", str(a.steps)), ("config", cfg_str)])
    st_io.write(a.out, out, meta)
    print("make_fixture: %s: B=%d T=%d V=%d loss=%.9g adamw_losses[-1]=%.9g (%d tensors)"
          % (a.out, B, T, V, loss.item(), losses[-1], len(out)))


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--jobs":
        with open(sys.argv[2]) as f:
            for line in f:
                if line.strip():
                    main(shlex.split(line))
    else:
        main()
