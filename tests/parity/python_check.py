"""tests/parity/python.sh's Python side: the package (python/grassflow) against the C engine.

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
  python_check.py guards LM_CKPT CLASSIFIER_CKPT the package's checks of what crosses to C, "ok ..." or
                                                 "FAIL ..." a line, then "end"
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


def guards(lm_path, cls_path):
    """What the package checks before anything crosses to C (issue 47): one line per case, "ok WHAT: what it
    said" or "FAIL WHAT: ...". An int that ctypes would mask to its C type's bits, a NUL that would end a C
    string, a token id outside the vocabulary, token types that do not match the ids, a generator of a closed
    model (it read freed memory): each is a ValueError (TypeError: not an integer) naming the argument."""
    import math
    import pathlib
    import re
    lm, cls = grassflow.load(lm_path), grassflow.load(cls_path)
    ids, seg = cls.encode_pair("A man sleeps.", "Nobody sleeps.")

    def case(what, fn, want, kind=ValueError):
        try:
            got = fn()
        except Exception as e:  # noqa: BLE001 (the type is checked)
            msg = str(e).replace("\n", " ")
            ok = isinstance(e, kind) and re.search(want, msg)
            print("%s %s: %s: %s" % ("ok" if ok else "FAIL", what, type(e).__name__, msg[:200]))
            return
        print("FAIL %s: no %s, returned %r" % (what, kind.__name__, got if not hasattr(got, "shape") else got.shape))

    def returns(what, fn, check):
        try:
            got = fn()
            print("%s %s: %r" % ("ok" if check(got) else "FAIL", what, got))
        except Exception as e:  # noqa: BLE001
            print("FAIL %s: %s: %s" % (what, type(e).__name__, e))

    V = len(lm.tokenizer)
    case("hidden(stack=2**40) (masked to stack 0)", lambda: lm.hidden([1, 2], stack=2 ** 40),
         r"has no stack 1099511627776: it has 1 \(0 \.\. 0\)")
    case("hidden(stack=-1)", lambda: lm.hidden([1, 2], stack=-1), "has no stack -1")
    case("logits of id 2**32 + 1 (masked to id 1)", lambda: lm.logits([2 ** 32 + 1, 2]),
         r"logits: token id 4294967297 at position 0 is outside the vocabulary \[0, %d\)" % V)
    case("logits of id '1' (a str)", lambda: lm.logits(["1"]), r"logits: ids\[0\] must be an integer", TypeError)
    case("decode([10**6, -5]) (skipped silently)", lambda: lm.tokenizer.decode([10 ** 6, -5]),
         r"decode: token id 1000000 at position 0 is outside the vocabulary \[0, %d\)" % V)
    case("decode([104, -5])", lambda: lm.tokenizer.decode([104, -5]), "token id -5 at position 1 is outside")
    returns("piece(2**32 + 104) is None, outside the vocabulary (was piece 104)", lambda: lm.tokenizer.piece(2 ** 32 + 104),
            lambda r: r is None)
    case("encode(5) (was bytes(5): five NULs)", lambda: lm.tokenizer.encode(5), "must be a str or bytes", TypeError)
    case("set_threads(2**40) (masked to 0, then 1)", lambda: grassflow.set_threads(2 ** 40),
         r"set_threads: n is 1099511627776; expected 1 to 1024")
    case("set_threads(0)", lambda: grassflow.set_threads(0), "expected 1 to 1024")
    case("score(seq_len=2**64 + 8) (masked to 8)", lambda: lm.score([1, 2, 3], seq_len=2 ** 64 + 8),
         r"score: seq_len is 18446744073709551624; expected 1 to 2\^63 - 1")
    case("generate(seed=2**64 + 1) (masked to 1)", lambda: lm.generate("ab", seed=2 ** 64 + 1),
         r"generate: seed is 18446744073709551617; expected 0 to 2\^64 - 1")
    case("generate(top_k=2**64 + 3)", lambda: lm.generate("ab", top_k=2 ** 64 + 3), "generate: top_k is")
    case("generate(tokens=-1)", lambda: lm.generate("ab", tokens=-1), "generate: tokens is -1")
    case("generate(temperature=nan)", lambda: lm.generate("ab", temperature=math.nan), "finite temperature")
    case("load('a\\0b') (opened 'a')", lambda: grassflow.load(lm_path + "\0.bak"), r"holds a NUL byte")
    returns("load(bytes path) reads the file (was load(\"b'...'\"))",
            lambda: grassflow.load(os.fsencode(lm_path)).path, lambda r: r == lm_path)
    returns("load(pathlib.Path)", lambda: grassflow.load(pathlib.Path(lm_path)).path, lambda r: r == lm_path)
    case("encode_pair(max_sent=-1) (a heap overflow in C)", lambda: cls.encode_pair("a", "b", max_sent=-1),
         r"encode_pair: max_sent is -1; expected 1 to 2\^63 - 1")
    case("encode_pair(max_sent=2**64 + 2) (masked to 2)", lambda: cls.encode_pair("a", "b", max_sent=2 ** 64 + 2),
         "encode_pair: max_sent is 18446744073709551618")
    case("encode_pair with a NUL in the premise (cut there)", lambda: cls.encode_pair("A man\0 sleeps.", "b"),
         r"encode_pair: premise holds a NUL byte \(at byte 5\)")
    returns("encode_pair of bytes", lambda: cls.encode_pair(b"A man sleeps.", b"Nobody sleeps.")[0], lambda r: r == ids)
    case("logits with 1 token type for %d ids (the rest 0s)" % len(ids), lambda: cls.logits(ids, [0]),
         r"logits: 1 token types for %d ids; give one per id" % len(ids))
    case("logits with token types 256 (masked to 0)", lambda: cls.logits(ids, [256] * len(ids)),
         r"token type 256 at position 0; this model has 2 token types \(0 \.\. 1\)")
    case("hidden with token types 2", lambda: cls.hidden(ids, [0] * (len(ids) - 1) + [2]),
         r"hidden: token type 2 at position %d" % (len(ids) - 1))
    case("predict(max_sent=0)", lambda: cls.predict("a", "b", max_sent=0), "predict: max_sent is 0")
    case("predict(batch=2**64 + 2) (masked to 2)", lambda: cls.predict("a", "b", batch=2 ** 64 + 2),
         "predict: batch is 18446744073709551618")
    case("predict with a NUL in a hypothesis (cut there)", lambda: cls.predict(["a", "b"], ["c", "d\0e"]),
         r"predict: hypothesis 1 holds a NUL byte")
    case("predict(a string, a list)", lambda: cls.predict("a", ["b"]), "or two lists of them", TypeError)
    # what outlives close(): a generator (it read freed memory), one not started, the tokenizer
    alive = grassflow.load(lm_path).generate("ab", tokens=5, temperature=0)
    returns("a generator holds its model alive (the model's last reference dropped)", lambda: len(list(alive)),
            lambda r: r >= 5)
    fresh = grassflow.load(lm_path)
    g = fresh.generate("ab", tokens=5)
    fresh.close()
    case("a generator not started, its model closed", lambda: next(g), r"was closed after 0 of the 5 tokens")
    tok = lm.tokenizer
    g = lm.generate("ab", tokens=50)
    next(g)
    lm.close()
    case("a generator, its model closed after one token (read freed memory)", lambda: list(g),
         r"generate: the model .* was closed after 1 of the 50 tokens")
    case("the tokenizer of a closed model", lambda: tok.decode([1]), "the tokenizer's model is closed")
    print("end")


def threads(lm_path, cls_path):
    """close() in one thread while another is inside a C call on the same model (issue 47): the call either
    finishes with the result it gives alone, or fails with a ValueError saying the model is closed; never a
    read of freed memory (a crash cuts the list, which ends with "end"). One line per call, as guards."""
    import re
    import threading
    import time
    long_text = " ".join(["the game of cafe ends and then a story begins"] * 150)
    calls = [  # what: (path, the call on a model)
        ("score", lm_path, lambda m: m.score(long_text).loss),
        ("score(seq_len=8)", lm_path, lambda m: m.score(long_text, seq_len=8).loss),
        ("logits", lm_path, lambda m: float(m.logits(long_text[:30]).sum())),
        ("hidden", lm_path, lambda m: float(m.hidden(long_text[:30]).sum())),
        ("tokenizer.encode", lm_path, lambda m: len(m.tokenizer.encode(long_text * 20))),
        ("features of a pair", cls_path, lambda m: float(m.features("A man sleeps.", "Nobody sleeps.").hidden.sum())),
        ("predict", cls_path, lambda m: m.predict(["A man sleeps."] * 64, ["Nobody sleeps."] * 64, batch=64)[0].probs),
    ]
    for what, path, fn in calls:
        m = grassflow.load(path)
        want = fn(m)
        got, started = [], threading.Event()

        def worker():
            try:
                for _ in range(100000):
                    started.set()
                    r = fn(m)
                    got.append("same" if r == want else "differs: %r, alone %r" % (r, want))
            except Exception as e:  # noqa: BLE001 (the type is checked)
                got.append(e)

        t = threading.Thread(target=worker)
        t.start()
        started.wait()
        time.sleep(0.02)
        m.close()
        t.join(120)
        last = got[-1] if got else None
        bad = [r for r in got[:-1] if r != "same"]
        ok = (not t.is_alive() and isinstance(last, ValueError) and re.search("closed", str(last)) and not bad)
        print("%s close() during %s in another thread: %d calls ran, then %s: %s%s" % (
            "ok" if ok else "FAIL", what, len(got) - 1, type(last).__name__, str(last)[:120],
            "; " + bad[0] if bad else ""))
        sys.stdout.flush()
    # a generator read in one thread, its model closed in another
    m = grassflow.load(lm_path)
    g = m.generate("the game", tokens=10 ** 9, temperature=0)
    got, started = [], threading.Event()

    def reader():
        try:
            for _ in g:
                started.set()
        except Exception as e:  # noqa: BLE001
            got.append(e)

    t = threading.Thread(target=reader)
    t.start()
    started.wait()
    time.sleep(0.02)
    m.close()
    t.join(120)
    last = got[-1] if got else None
    ok = not t.is_alive() and isinstance(last, ValueError) and re.search("was closed after", str(last))
    print("%s close() while another thread reads a generator: %s: %s" % ("ok" if ok else "FAIL", type(last).__name__,
                                                                        str(last)[:120]))
    print("end")


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
    if cmd == "guards":
        return guards(ckpt, argv[2])
    if cmd == "threads":
        return threads(ckpt, argv[2])
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
