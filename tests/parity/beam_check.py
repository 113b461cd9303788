"""Beam search against a reference: the C library's gf_model_decode (through grassflow.Model.decode) must
return the target and score of a beam search written here, independently, over the PyTorch reference model
in float64, following the rules of include/grassflow.h ("Decoding an encoder-decoder"):

  - a hypothesis's log-probability is the sum of the decoder's log-softmax of its tokens (and of the end
    token when it has one); its score that divided by ((5 + n) / 6)^alpha, n its tokens with the end's;
  - each step extends every live hypothesis by every token, orders the extensions by log-probability (ties:
    the earlier hypothesis, then the smaller id) and walks them: an extension by eos is finished, any other
    lives on, until `beam` live; a hypothesis of max_len tokens is finished as it is;
  - the answer is the best-scoring finished hypothesis (among equals the one finished first).

An ensemble (Model.decode(..., ensemble=[...]), gf_ensemble_decode) is held to the same search over the
models' mixture: a token's log-probability the log of the mean of the models' softmax.

The reference runs every step to max_len (no early stop: a correct early stop cannot change the best). The
models are tiny encoder-decoders of tests/parity/configs (Transformer, Grassmann, GRU) whose initial weights
are scaled up so that their next-token distributions are peaked: orderings then rest on margins far above
float32's rounding, and a search that differs from the reference's rules shows.

usage: beam_check.py INIT.safetensors [...]   (grassflow init's checkpoints; PYTHONPATH and GRASSFLOW_LIB set)
"""
import os
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch_ref"))

import grassflow  # noqa: E402
from grassflow import st_io  # noqa: E402
from model import load_checkpoint  # noqa: E402

SCALE = 25.0  # every matrix times this: weights N(0, 0.5) instead of N(0, 0.02)
MAX_LEN = 7
SETTINGS = [(1, 0.0), (3, 0.0), (3, 0.6), (4, 2.0)]  # (beam, length penalty)


def penalty(alpha, n):
    return ((5.0 + n) / 6.0) ** alpha if alpha > 0 else 1.0


def next_logp(models, inp, src):
    """The next token's log-probability after each row of inp: one model's log-softmax, or the log of the mean
    of several models' softmax."""
    with torch.no_grad():
        each = [torch.log_softmax(m(inp, source=torch.tensor([src] * len(inp)))[:, -1], -1) for m in models]
    return torch.logsumexp(torch.stack(each), 0) - np.log(len(models)) if len(each) > 1 else each[0]


def reference_beam(models, src, beam, alpha, max_len, bos, eos, V):
    live, fin, order = [((), 0.0)], [], 0
    for t in range(max_len):
        if not live:
            break
        logp = next_logp(models, torch.tensor([[bos, *h] for h, _ in live]), src)
        cands = sorted(((lp + logp[b, v].item(), b, v) for b, (_, lp) in enumerate(live) for v in range(V)),
                       key=lambda c: (-c[0], c[1], c[2]))
        nxt = []
        for lp, b, v in cands:
            if len(nxt) == beam:
                break
            if v == eos:
                fin.append((lp / penalty(alpha, t + 1), order, live[b][0]))
                order += 1
            else:
                nxt.append((live[b][0] + (v,), lp))
        live = nxt
        if t + 1 == max_len:
            for h, lp in live:
                fin.append((lp / penalty(alpha, max_len), order, h))
                order += 1
    best = min(fin, key=lambda f: (-f[0], f[1]))
    return list(best[2]), best[0]


def scaled_copy(path, out):
    tensors, meta = st_io.read(path)
    st_io.write(out, {k: (v * SCALE if v.ndim == 2 else v).astype(np.float32) for k, v in tensors.items()}, meta)


def check_model(path, rng):
    ref, _ = load_checkpoint(path)
    m = grassflow.load(path)
    V, Vs = m.config["vocab_size"], m.config["source_vocab"]
    sources = [list(rng.integers(0, Vs, size=n)) for n in (1, 2, 3, 5, 8, 8)]
    # eos: the token greedy decoding of the first source emits third, so that some hypotheses end by it
    eos = m.decode(sources[0], max_len=3, eos=V - 1, bos=V - 1)[0][-1]
    bos = (eos + 1) % V
    n, ended, beam_differs, worst = 0, 0, 0, 0.0
    for src in sources:
        src = [int(s) for s in src]
        greedy = None
        for beam, alpha in SETTINGS:
            got, score = m.decode(src, beam=beam, length_penalty=alpha, max_len=MAX_LEN, bos=bos, eos=eos)
            want, wscore = reference_beam([ref], src, beam, alpha, MAX_LEN, bos, eos, V)
            n += 1
            if got != want or abs(score - wscore) > 1e-4 * max(1.0, abs(wscore)):
                raise SystemExit("beam: %s: source %s, beam %d, length penalty %g: grassflow decodes %s (score %.9g), "
                                 "the reference %s (score %.9g)" % (path, src, beam, alpha, got, score, want, wscore))
            worst = max(worst, abs(score - wscore))
            ended += len(got) < MAX_LEN
            if beam == 1:
                greedy = got
            beam_differs += got != greedy
    m.close()
    return n, ended, beam_differs, worst


def check_ensemble(paths, rng):
    """The models of paths (one vocabulary) decoding as one, against the reference search over their mixture;
    (searches, those whose target is none of the members' own)."""
    refs = [load_checkpoint(p)[0] for p in paths]
    ms = [grassflow.load(p) for p in paths]
    V, Vs = ms[0].config["vocab_size"], ms[0].config["source_vocab"]
    eos = ms[0].decode([1], max_len=3, eos=V - 1, bos=V - 1)[0][-1]
    bos = (eos + 1) % V
    n, own_differs = 0, 0
    for size in (1, 3, 5, 8):
        src = [int(s) for s in rng.integers(0, Vs, size=size)]
        for beam, alpha in SETTINGS:
            got, score = ms[0].decode(src, beam=beam, length_penalty=alpha, max_len=MAX_LEN, bos=bos, eos=eos,
                                      ensemble=ms[1:])
            want, wscore = reference_beam(refs, src, beam, alpha, MAX_LEN, bos, eos, V)
            n += 1
            if got != want or abs(score - wscore) > 1e-4 * max(1.0, abs(wscore)):
                raise SystemExit("beam: the ensemble of %s: source %s, beam %d, length penalty %g: grassflow decodes "
                                 "%s (score %.9g), the reference %s (score %.9g)" % (
                                     ", ".join(map(os.path.basename, paths)), src, beam, alpha, got, score, want, wscore))
            own = [m.decode(src, beam=beam, length_penalty=alpha, max_len=MAX_LEN, bos=bos, eos=eos)[0] for m in ms]
            own_differs += all(o != got for o in own)
    for m in ms:
        m.close()
    return n, own_differs


def main(paths):
    torch.set_default_dtype(torch.float64)
    rng = np.random.default_rng(5)
    total = [0, 0, 0]
    with tempfile.TemporaryDirectory() as tmp:
        for path in paths:
            scaled = os.path.join(tmp, os.path.basename(path))
            scaled_copy(path, scaled)
            n, ended, differs, worst = check_model(scaled, rng)
            print("beam %-40s %2d searches equal the reference (%d ended by eos, %d differ from greedy), "
                  "worst score diff %.2e" % (os.path.basename(path), n, ended, differs, worst))
            total = [a + b for a, b in zip(total, (n, ended, differs))]
        # the first two models, then all of them, as ensembles (every config shares one vocabulary)
        scaled = [os.path.join(tmp, os.path.basename(p)) for p in paths]
        for group in (scaled[:2], scaled) if len(scaled) > 1 else ():
            n, own_differs = check_ensemble(group, rng)
            print("beam ensemble of %d models: %2d searches equal the reference over their mixture (%d targets none of "
                  "the models gives alone)" % (len(group), n, own_differs))
            if own_differs == 0:
                raise SystemExit("beam: the ensemble of %d models never decoded a target unlike every member's: the "
                                 "mixture was not exercised" % len(group))
    # the check must exercise what it claims: ends by eos and by max_len, and beams that beat greedy
    if not (0 < total[1] < total[0]) or total[2] == 0:
        raise SystemExit("beam: the searches did not exercise both endings and a beam unlike greedy: %s" % total)


if __name__ == "__main__":
    main(sys.argv[1:])
