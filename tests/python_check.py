"""tests/python.sh's Python side: the package (python/grassflow) against the C engine.

  python_check.py ids CKPT TEXT                  the token ids of TEXT, one line (for grassflow score)
  python_check.py score CKPT TEXT [SEQ_LEN]      grassflow.Model.score as {"tokens", "loss"}
  python_check.py generate CKPT PROMPT N T K P S the prompt and the streamed pieces, as generate prints them
  python_check.py features CKPT TEXT [HYP]       {"ids", "hidden"} as grassflow features --json prints them
  python_check.py predict CKPT PAIRS.tsv         per pair: label index and probabilities (JSON lines)
  python_check.py torch CKPT TEXT|PAIRS.tsv      max |torch logits - C logits| (grassflow.torch.load)
  python_check.py perturbed CKPT TEXT            the same with one weight of the torch module changed
  python_check.py finetune CKPT TEXT OUT         one AdamW step in PyTorch, saved to OUT; prints the logits'
                                                 max change and max |torch - C (OUT loaded by the library)|
  python_check.py finetune-pairs CKPT PAIRS.tsv OUT  the same for a classifier: a step on the pairs (label 0),
                                                 every tensor's max change, torch against C on the pairs
  python_check.py refuse CKPT                    the loader's and the package's refusals, one per line
  python_check.py batch FILE                     each line of FILE the arguments of one of the above, in one
                                                 process (importing torch is most of the time of a check)
"""
import json
import os
import sys

if os.environ.get("NO_NUMPY"):  # the package without numpy: lists
    sys.modules["numpy"] = None

import grassflow  # noqa: E402


def pairs(path):
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n").split("\t")[1:3] for line in f if line.strip()]


def c_logits(m, text_or_pairs):
    """The C engine's logits, one entry per sequence: [(ids, segments, logits)]."""
    if m.next_token:  # at most max_len tokens (learned positions)
        ids = m.tokenizer.encode(text_or_pairs)[:m.config["max_len"] or None]
        return [(ids, None, m.logits(ids))]
    out = []
    for p, h in pairs(text_or_pairs):
        ids, seg = m.encode_pair(p, h)
        out.append((ids, seg, m.logits(ids, seg)))
    return out


def pair_batch(rows):
    """A classifier's pairs (c_logits' rows) as one padded batch: ids, mask, token types."""
    import torch
    T = max(len(r[0]) for r in rows)
    ids = torch.zeros(len(rows), T, dtype=torch.long)
    seg = torch.zeros(len(rows), T, dtype=torch.long)
    mask = torch.zeros(len(rows), T, dtype=torch.bool)
    for b, (i, s, _) in enumerate(rows):
        ids[b, :len(i)], seg[b, :len(i)], mask[b, :len(i)] = torch.tensor(i), torch.tensor(s), True
    return ids, mask, seg


def torch_diff(net, rows):
    """max |net(...) - C| over rows: a classifier's pairs as one padded batch (a mask, token types)."""
    import torch
    with torch.no_grad():
        if len(rows) == 1 and rows[0][1] is None:
            ids, _, want = rows[0]
            got = net(torch.tensor([ids]))[0]
            return float((got - torch.tensor(want)).abs().max()), float(torch.tensor(want).abs().max())
        ids, mask, seg = pair_batch(rows)
        got = net(ids, mask=mask, segments=seg)
        want = torch.tensor([list(r[2]) for r in rows])
        return float((got - want).abs().max()), float(want.abs().max())


def cmd_torch(ckpt, data, perturb=False):
    import torch
    import grassflow.torch as gt
    net = gt.load(ckpt)
    assert next(net.parameters()).dtype == torch.float32 and not net.training
    if perturb:
        with torch.no_grad():
            p = dict(net.named_parameters())["ln_f.weight"]
            p[0] += 0.1
    with grassflow.load(ckpt) as m:
        diff, scale = torch_diff(net, c_logits(m, data))
    print(json.dumps({"max_abs_diff": diff, "max_abs_logit": scale}))


def cmd_finetune(ckpt, text, out):
    """One AdamW step on the text's next-token loss, saved; the C engine reads the file back."""
    import torch
    import torch.nn.functional as F
    import grassflow.torch as gt
    net = gt.load(ckpt)
    with grassflow.load(ckpt) as m:
        ids = m.tokenizer.encode(text)
    x = torch.tensor([ids])
    with torch.no_grad():
        before = net(x)
    net.train()
    opt = torch.optim.AdamW(net.parameters(), lr=1e-2)
    logits = net(x[:, :-1])
    F.cross_entropy(logits.reshape(-1, logits.shape[-1]), x[:, 1:].reshape(-1)).backward()
    opt.step()
    net.eval()
    gt.save(net, out)
    try:
        gt.save(net, out)
        refused = False
    except FileExistsError:
        refused = True
    with torch.no_grad():
        after = net(x)
    with grassflow.load(out) as m2:
        c = torch.tensor(m2.logits(ids))
        same_tok = m2.tokenizer is not None and m2.tokenizer.encode(text) == ids
    print(json.dumps({"changed": float((after - before).abs().max()), "max_abs_diff": float((after[0] - c).abs().max()),
                      "tokenizer_kept": same_tok, "overwrite_refused": refused}))


def cmd_finetune_pairs(ckpt, data, out):
    """One AdamW step on a classifier's loss over the pairs (every label 0), saved; the C engine reads the
    file back: the step's largest change per tensor (each one trained) and max |torch - C| on the pairs."""
    import torch
    import torch.nn.functional as F
    import grassflow.torch as gt
    net = gt.load(ckpt)
    with grassflow.load(ckpt) as m:
        ids, mask, seg = pair_batch(c_logits(m, data))
    before = {k: v.clone() for k, v in net.state_dict().items()}
    net.train()
    opt = torch.optim.AdamW(net.parameters(), lr=1e-2)
    F.cross_entropy(net(ids, mask=mask, segments=seg), torch.zeros(ids.shape[0], dtype=torch.long)).backward()
    opt.step()
    net.eval()
    gt.save(net, out)
    changed = {k: float((v - before[k]).abs().max()) for k, v in net.state_dict().items()}
    with grassflow.load(out) as m2:
        diff, _ = torch_diff(net, c_logits(m2, data))
    print(json.dumps({"min_changed": min(changed.values()), "max_abs_diff": diff,
                      "tensors": sorted(k for k in changed if ".mix.E" in k or ".mix.F" in k)}))


def refusals(ckpt):
    """Each refusal's message, or OK when nothing was refused (a test failure)."""
    import grassflow.torch as gt
    from grassflow import st_io
    tmp = os.environ["TMPDIR_PY"]
    t, meta = st_io.read(ckpt)
    cfg = json.loads(meta["config"])
    cases = []
    bad = dict(cfg, layers=[dict(cfg["layers"][0], mixer="lstm")])
    cases.append(("a mixer it does not build", dict(meta, config=json.dumps(bad)), t))
    cases.append(("a key it does not know", dict(meta, config=json.dumps(dict(cfg, rope=True))), t))
    cases.append(("a head it does not build", dict(meta, config=json.dumps(dict(cfg, head={"kind": "crf"}))), t))
    cases.append(("a missing tensor", meta, {k: v for k, v in t.items() if k != "ln_f.bias"}))
    cases.append(("a misshapen tensor", meta, dict(t, **{"ln_f.bias": t["ln_f.bias"][:-1]})))
    for what, mt, tt in cases:
        path = os.path.join(tmp, "refuse.safetensors")
        st_io.write(path, tt, mt)
        try:
            gt.load(path)
            print("%s: OK" % what)
        except ValueError as e:
            print("%s: ValueError: %s" % (what, str(e).replace("\n", " ")))
    closed = grassflow.load(ckpt)
    tok = closed.tokenizer
    closed.close()
    for what, fn in (("a missing file", lambda: grassflow.load(os.path.join(tmp, "nothing.safetensors"))),
                     ("predict on a language model", lambda: grassflow.load(ckpt).predict("a", "b")),
                     ("a closed model's tokenizer", lambda: tok.encode("a"))):
        try:
            fn()
            print("%s: OK" % what)
        except (grassflow.GrassflowError, ValueError) as e:
            print("%s: %s: %s" % (what, type(e).__name__, str(e).replace("\n", " ")))


def main(argv):
    cmd, ckpt = argv[0], argv[1]
    if len(argv) > 2 and argv[2].startswith("@"):  # @FILE: the text of a file
        argv[2] = open(argv[2][1:], encoding="utf-8").read()
    if cmd == "torch":
        return cmd_torch(ckpt, argv[2])
    if cmd == "perturbed":
        return cmd_torch(ckpt, argv[2], perturb=True)
    if cmd == "finetune":
        return cmd_finetune(ckpt, argv[2], argv[3])
    if cmd == "finetune-pairs":
        return cmd_finetune_pairs(ckpt, argv[2], argv[3])
    if cmd == "refuse":
        return refusals(ckpt)
    m = grassflow.load(ckpt)
    if cmd == "ids":
        print(" ".join(map(str, m.tokenizer.encode(argv[2]))))
    elif cmd == "score":
        s = m.score(argv[2], int(argv[3]) if len(argv) > 3 else None)
        print(json.dumps({"tokens": s.tokens, "loss": s.loss}))
    elif cmd in ("generate", "generate-text"):  # the bytes as they come, or the text (str)
        n, temp, k, p, seed = int(argv[3]), float(argv[4]), int(argv[5]), float(argv[6]), int(argv[7])
        out = sys.stdout.buffer
        out.write(argv[2].encode())
        for piece in m.generate(argv[2], tokens=n, temperature=temp, top_k=k, top_p=p, seed=seed,
                                raw=cmd == "generate"):
            out.write(piece if cmd == "generate" else piece.encode())
            out.flush()  # streamed: each piece as it comes
        out.write(b"\n")
    elif cmd == "features":
        f = m.features(argv[2], argv[3] if len(argv) > 3 else None)
        assert isinstance(f.hidden, list) == bool(os.environ.get("NO_NUMPY")), type(f.hidden)
        print(json.dumps({"ids": f.ids, "hidden": [[float(v) for v in row] for row in f.hidden]}))
    elif cmd == "predict":  # every pair in one call: batched as grassflow predict batches the file
        P = pairs(argv[2])
        for r in m.predict([p for p, _ in P], [h for _, h in P]):
            print(json.dumps({"label": r.label, "index": r.index, "probs": r.probs}))
        one = m.predict(*P[0])  # one pair alone: the same label (a batch of one pads nothing)
        assert one.index == json.loads(json.dumps({"i": one.index}))["i"] and isinstance(one.label, str), one


if __name__ == "__main__":
    if sys.argv[1:2] == ["batch"]:
        import shlex
        with open(sys.argv[2]) as f:
            for line in f:
                if line.strip():
                    main(shlex.split(line))
                    sys.stdout.flush()
    else:
        main(sys.argv[1:])
