#!/usr/bin/python3
"""Parameter counts of grassflow configs.

Usage: count_params.py [CONFIG.json ...]   counts each config file (JSON object, keys of docs/model.md)
       count_params.py --check            prints the built-in configs and asserts their known counts
With no argument, runs --check.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from model import normalize_config  # noqa: E402


def count_params(cfg):
    """Count from the formulas of docs/model.md (no model is built)."""
    c = normalize_config(cfg)
    V, d, dff = c["vocab_size"], c["d_model"], c["d_ff"]
    n = V * d
    if c["pos"] == "learned":
        n += c["max_len"] * d
    for lc in c["layers"]:
        n += 4 * d  # ln1, ln2
        n += dff * d + dff + d * dff + d  # ffn
        if lc["mixer"] == "grassmann":
            r, H = lc["rank"], lc.get("heads", 1)
            F = H * (r // H) * (r // H - 1) // 2 if lc.get("plucker", True) else 2 * r  # plucker or pair
            n += r * d + r + d * F + d
            if lc.get("gate", True):
                n += d * 2 * d + d
            if lc["extra_proj"]:
                n += d * d + d
        else:
            n += 3 * d * d + 3 * d + d * d + d
    n += 2 * d  # ln_f
    if not c["tie_head"]:
        n += V * d
    return n


def _base(n_layer, max_len, mixer, offsets, extra_proj=False):
    return {"vocab_size": 30522, "d_model": 256, "n_layer": n_layer, "n_head": 4, "d_ff": 1024,
            "max_len": max_len, "rank": 32, "offsets": offsets, "mixers": [mixer], "norm": "pre",
            "plucker_eps": 1e-6, "extra_proj": extra_proj, "tie_head": True, "gelu": "erf",
            "pos": "learned", "dropout": 0.1}


def _ablation(**keys):
    """grassmann-6L (config format 2) with the paper's ablation keys in every layer."""
    return {"format": 2, "vocab_size": 30522, "d_model": 256, "n_layer": 6, "d_ff": 1024, "max_len": 128,
            "dropout": 0.1, "layers": [dict({"mixer": "grassmann", "rank": 32, "offsets": [1, 2, 4, 8, 12, 16]}, **keys)]}


ALL6 = [[1, 2, 4, 8, 12, 16]]
ONE12 = [[D] for D in (1, 1, 2, 2, 4, 4, 8, 8, 12, 12, 16, 16)]
BUILTIN = [
    ("6L-128 transformer", _base(6, 128, "attention", ALL6), 12585472),
    ("6L-128 grassmann", _base(6, 128, "grassmann", ALL6), 12607168),
    ("6L-128 grassmann extra_proj", _base(6, 128, "grassmann", ALL6, True), 13001920),
    ("12L-256 transformer", _base(12, 256, "attention", ONE12), 17356800),
    ("12L-256 grassmann", _base(12, 256, "grassmann", ONE12), 17400192),
    ("6L-128 grassmann plucker false", _ablation(plucker=False), 11943616),
    ("6L-128 grassmann gate false", _ablation(gate=False), 11819200),
    ("6L-128 grassmann both ablations", _ablation(plucker=False, gate=False), 11155648),
]


def check():
    from model import build_model
    ok = True
    for name, cfg, want in BUILTIN:
        got = count_params(cfg)
        built = sum(p.numel() for p in build_model(cfg).parameters())
        good = got == want == built
        ok &= good
        print("%-32s %12s  (expected %s, built model %s) %s"
              % (name, format(got, ","), format(want, ","), format(built, ","), "ok" if good else "MISMATCH"))
    print("count_params self-check:", "PASS" if ok else "FAIL")
    return ok


def main(argv):
    if not argv or argv == ["--check"]:
        sys.exit(0 if check() else 1)
    for path in argv:
        with open(path) as f:
            cfg = json.load(f)
        print("%s: %s" % (path, format(count_params(cfg), ",")))


if __name__ == "__main__":
    main(sys.argv[1:])
